r"""A convolution fed the wrong number of channels.

runtime: input has 3 channels, expected 1"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    conv = sg.nn.Conv2d[L[1], L[8]](kernel_size=3)
    x: Tensor[NoTape, Batch, L[3], L[8], L[8]] = sg.zeros(Batch(2), 3, 8, 8)
    conv(x)  # E
