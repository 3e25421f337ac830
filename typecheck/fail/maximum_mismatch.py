r"""maximum of mismatched shapes.

runtime: do not broadcast"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    a: Tensor[NoTape, L[3]] = sg.zeros(3)
    b: Tensor[NoTape, L[4]] = sg.zeros(4)
    sg.maximum(a, b)  # E
