r"""A residual around a layer that changes the size.

runtime: do not broadcast"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    block = sg.nn.Residual(Linear[L[4], L[8]]())  # E
    block(sg.zeros(2, 4))
