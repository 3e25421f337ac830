"""A U-Net decoder whose convolution takes the up-sampled channels only, forgetting that the
skip concatenated onto them doubles them (64 + 64 = 128), and whose up-sampling is 2x where
the skip is 4x smaller."""

from __future__ import annotations

from typing import TypeVar

from shape_extensions import IntVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Conv2d, ConvTranspose2d, Flatten, Linear, MaxPool2d, Module, ReLU, Sequential

T = TypeVar("T")
B = IntVar("B")


class Decoder(Module):
    def __init__(self) -> None:
        self.up = ConvTranspose2d(2, 2, in_channels=128, out_channels=64)
        self.conv = Conv2d(3, padding=1, in_channels=64, out_channels=64)

    def __call__(self, bottom: Tensor[T, [B, 128, 16, 16]], skip: Tensor[T, [B, 64, 32, 32]]) -> None:
        joined = sg.concat((self.up(bottom), skip), axis=1)
        self.conv(joined)  # E: Tensor[T, [B, 64, @_, @_]]

    def deeper(self, bottom: Tensor[T, [B, 128, 16, 16]], skip: Tensor[T, [B, 64, 64, 64]]) -> None:
        sg.concat((self.up(bottom), skip), axis=1)  # E: the dims other than the joined one differ
