r"""``sg.nn.max_pool2d(x, 2)`` read as if it kept the height and width: the function form is
typed as ``MaxPool2d(2)`` (``Half[H]``), so the mistake is seen; it was ``Open``, which no
annotation took either, but for the wrong reason.

runtime: 32"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor, nn


class Batch(sg.Dim): ...


@sg.checked
def pooled(x: Tensor[NoTape, Batch, L[8], L[32], L[32]]) -> Tensor[NoTape, Batch, L[8], L[32], L[32]]:
    return nn.max_pool2d(x, 2)  # E: Half[Literal[32]]


def main() -> None:
    pooled(sg.zeros(Batch(2), 8, 32, 32))
