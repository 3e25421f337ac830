r"""A vector of the wrong length on the right of a matrix.

runtime: inner dims differ"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    m: Tensor[NoTape, L[3], L[4]] = sg.zeros(3, 4)
    v: Tensor[NoTape, L[5]] = sg.zeros(5)
    m @ v  # E
