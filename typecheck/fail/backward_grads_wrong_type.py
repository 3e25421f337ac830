r"""The gradients of one model declared as another's."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


class A(Module): ...


class B(Module): ...


def main(x: Tensor[OwnedTape[A], L[3]]) -> None:
    g: sg.Gradients[B] = x.sum().backward()  # E
