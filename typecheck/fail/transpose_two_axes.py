r"""PyTorch's ``x.transpose(1, 2)`` (swap two axes) on a rank-4 tensor, and on the open rank of a
nanoGPT head split: shapegrad's transpose takes every axis in its new order, as NumPy's, and
raises; the message names ``x.swapaxes(1, 2)`` at both times.

runtime: write x\.swapaxes\("""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def main() -> None:
    x: Tensor[NoTape, Batch, Seq, L[4], L[8]] = sg.zeros(Batch(2), Seq(3), 4, 8)
    print(x.swapaxes(1, 2).shape, x.transpose(0, 2, 1, 3).shape)  # the fixes
    heads = x.reshape(2, 3, 4, -1)
    k = heads.transpose(-2, -1)  # E: write x.swapaxes(a, b)
    x.transpose(1, 2)  # E: write x.swapaxes(a, b)
