r"""Element-wise product of mismatched shapes.

runtime: \(3, 4\) and \(3, 5\)"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    a: Tensor[NoTape, L[3], L[4]] = sg.zeros(3, 4)
    b: Tensor[NoTape, L[3], L[5]] = sg.zeros(3, 5)
    a * b  # E
