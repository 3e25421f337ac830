"""A 5x5 convolution without padding shrinks 28 to 24: the declared 28 is wrong, and so is
the pooled size the next layer expects."""

from __future__ import annotations

from typing import TypeVar

from shape_extensions import IntVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Conv2d, ConvTranspose2d, Flatten, Linear, MaxPool2d, Module, ReLU, Sequential

T = TypeVar("T")
B = IntVar("B")


def features(x: Tensor[T, [B, 1, 28, 28]]) -> Tensor[T, [B, 8, 14, 14]]:
    conv = Conv2d(5, in_channels=1, out_channels=8)
    pool = MaxPool2d(2)
    return pool(conv(x))  # E: Tensor[T, [B, 8, 14, 14]]


def dilated(x: Tensor[T, [B, 8, 32, 32]]) -> Tensor[T, [B, 8, 32, 32]]:
    conv = Conv2d(3, padding=1, dilation=2, in_channels=8, out_channels=8)
    return conv(x)  # E: Tensor[T, [B, 8, 32, 32]]


def pooled(x: Tensor[T, [B, 8, 32, 32]]) -> Tensor[T, [B, 8, 16, 16]]:
    return MaxPool2d(3, 2, 0)(x)  # E: Tensor[T, [B, 8, 16, 16]]
