r"""alloc_grads gives Gradients of its own model type."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


class A(Module): ...


class B(Module): ...


def main() -> None:
    grads: sg.Gradients[B] = A().alloc_grads()  # E
