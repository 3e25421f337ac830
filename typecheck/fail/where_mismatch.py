r"""where with branches of another shape than the mask.

runtime: where: shapes"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    a: Tensor[NoTape, L[3]] = sg.zeros(3)
    b: Tensor[NoTape, L[4]] = sg.zeros(4)
    sg.where(a > 0.0, b, b)  # E
