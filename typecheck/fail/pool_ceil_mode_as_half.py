r"""Pooling by 2 with ceil_mode=True read as Half[H]: PyTorch's ceil_mode rounds up (7 -> 4),
Half rounds down (7 -> 3), so the size is Open.

runtime: shape=\(2, 8, 4, 4\)"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import Half, NoTape, Tensor
from shapegrad.nn import MaxPool2d


class Batch(sg.Dim): ...


@sg.checked
def pooled(x: Tensor[NoTape, Batch, L[8], L[7], L[7]]) -> Tensor[NoTape, Batch, L[8], Half[L[7]], Half[L[7]]]:
    return MaxPool2d(2, ceil_mode=True)(x)  # E: Open


def main() -> None:
    pooled(sg.zeros(Batch(2), 8, 7, 7))
