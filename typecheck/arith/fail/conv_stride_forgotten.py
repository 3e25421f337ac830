"""A downsampling convolution written without its stride: 32x32 stays 32x32, not 16x16."""

from __future__ import annotations

from typing import TypeVar

from shape_extensions import IntVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Conv2d, ConvTranspose2d, Flatten, Linear, MaxPool2d, Module, ReLU, Sequential

T = TypeVar("T")
B = IntVar("B")


class Down(Module):
    def __init__(self) -> None:
        self.conv = Conv2d(3, padding=1, in_channels=16, out_channels=32)

    def __call__(self, x: Tensor[T, [B, 16, 32, 32]]) -> Tensor[T, [B, 32, 16, 16]]:
        return self.conv(x)  # E: Tensor[T, [B, 32, 16, 16]]
