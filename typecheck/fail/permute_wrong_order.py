r"""A permuted tensor declared in the wrong order."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


def main(x: Tensor[NoTape, Batch, L[3], L[8], L[8]]) -> None:
    nhwc: Tensor[NoTape, Batch, L[3], L[8], L[8]] = x.permute(0, 2, 3, 1)  # E
