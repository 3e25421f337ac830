r"""A Linear layer's output assigned to the wrong size."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    layer = Linear[L[4], L[10]]()
    x: Tensor[NoTape, Batch, L[4]] = sg.zeros(Batch(2), 4)
    y: Tensor[NoTape, Batch, L[11]] = layer(x)  # E
