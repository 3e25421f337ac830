r"""Pooling by 2 read as if it kept the height and width.

runtime: 32"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad.nn import MaxPool2d


class Batch(sg.Dim): ...


@sg.checked
def pooled(x: Tensor[NoTape, Batch, L[8], L[32], L[32]]) -> Tensor[NoTape, Batch, L[8], L[32], L[32]]:
    return MaxPool2d(2)(x)  # E: Half[Literal[32]]


def main() -> None:
    pooled(sg.zeros(Batch(2), 8, 32, 32))
