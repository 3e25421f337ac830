r"""A BatchNorm2d of 16 channels fed 8.

runtime: expects input \(batch, 16"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def main() -> None:
    img: Tensor[NoTape, Batch, L[8], L[4], L[4]] = sg.zeros(Batch(2), 8, 4, 4)
    sg.nn.BatchNorm2d[L[16]]()(img)  # E
