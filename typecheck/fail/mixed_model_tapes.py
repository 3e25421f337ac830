r"""Two tensors traced for two different models in one op."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


class A(Module): ...


class B(Module): ...


def main(x: Tensor[OwnedTape[A], L[3]], y: Tensor[OwnedTape[B], L[3]]) -> None:
    x + y  # E
