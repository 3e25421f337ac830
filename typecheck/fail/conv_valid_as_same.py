r"""An unpadded convolution treated as if it kept 32x32.

runtime: Batch 8 32 32|32"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


@sg.checked
def stem(img: Tensor[NoTape, Batch, L[3], L[32], L[32]]) -> Tensor[NoTape, Batch, L[8], L[32], L[32]]:
    return sg.nn.Conv2d[L[3], L[8]](3)(img)  # E


def main() -> None:
    stem(sg.zeros(Batch(2), 3, 32, 32))
