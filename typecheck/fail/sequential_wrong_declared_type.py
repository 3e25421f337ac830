r"""A Sequential declared with other sizes than its layers."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    model: Sequential[L[784], L[5]] = Sequential(Linear[L[784], L[10]]())  # E
