r"""An up-sampling transposed convolution read as if it kept the height and width.

runtime: 16"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad.nn import ConvTranspose2d, Doubles


class Batch(sg.Dim): ...


@sg.checked
def up(x: Tensor[NoTape, Batch, L[8], L[16], L[16]]) -> Tensor[NoTape, Batch, L[4], L[16], L[16]]:
    return ConvTranspose2d[L[8], L[4], Doubles](4, 2, 1)(x)  # E: Twice[Literal[16]]


def main() -> None:
    up(sg.zeros(Batch(2), 8, 16, 16))
