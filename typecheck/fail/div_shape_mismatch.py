r"""Division of mismatched shapes.

runtime: do not broadcast"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    a: Tensor[NoTape, L[2], L[4]] = sg.ones(2, 4)
    b: Tensor[NoTape, L[5]] = sg.ones(5)
    a / b  # E
