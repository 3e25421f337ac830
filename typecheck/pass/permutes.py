"""permute is typed for rank-3 orders and the common rank-4 ones."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


def main(x: Tensor[NoTape, Batch, L[3], L[8], L[8]], seq: Tensor[NoTape, Batch, L[5], L[16]]) -> None:
    nhwc: Tensor[NoTape, Batch, L[8], L[8], L[3]] = x.permute(0, 2, 3, 1)
    back: Tensor[NoTape, Batch, L[3], L[8], L[8]] = nhwc.permute(0, 3, 1, 2)
    swapped: Tensor[NoTape, Batch, L[16], L[5]] = seq.permute(0, 2, 1)
    time_major: Tensor[NoTape, L[5], Batch, L[16]] = seq.permute(1, 0, 2)
    print(back, swapped, time_major)
