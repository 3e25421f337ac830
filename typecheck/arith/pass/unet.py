"""A small U-Net: a stride-2 encoder, a transposed-convolution decoder and concat skips.

Every size is computed: the encoder's halvings, the decoder's doublings, the skip's
channels (concat of 32 and 32 is 64, what the next Conv2d takes) and the output's
height and width, which the return type states with no cast.
"""

from __future__ import annotations

from typing import TypeVar

from shape_extensions import IntVar, assert_shape

import shapegrad as sg
from shapegrad import Tensor
from shapegrad.nn import Conv2d, ConvTranspose2d, Module

T = TypeVar("T")
B = IntVar("B")


class UNet(Module, checked=False):
    def __init__(self) -> None:
        self.enc1 = Conv2d(3, padding=1, in_channels=1, out_channels=32)
        self.down1 = Conv2d(3, 2, 1, in_channels=32, out_channels=64)
        self.down2 = Conv2d(3, 2, 1, in_channels=64, out_channels=128)
        self.up2 = ConvTranspose2d(2, 2, in_channels=128, out_channels=64)
        self.dec2 = Conv2d(3, padding=1, in_channels=128, out_channels=64)
        self.up1 = ConvTranspose2d(2, 2, in_channels=64, out_channels=32)
        self.dec1 = Conv2d(3, padding=1, in_channels=64, out_channels=32)
        self.out = Conv2d(1, in_channels=32, out_channels=1)

    def __call__(self, x: Tensor[T, [B, 1, 64, 64]]) -> Tensor[T, [B, 1, 64, 64]]:
        e1 = self.enc1(x).relu()
        e2 = self.down1(e1).relu()
        assert_shape(e2.shape, (IntVar[B], 64, 32, 32))
        bottom = self.down2(e2).relu()
        assert_shape(bottom.shape, (IntVar[B], 128, 16, 16))
        d2 = self.dec2(sg.concat((self.up2(bottom), e2), axis=1)).relu()
        d1 = self.dec1(sg.concat((self.up1(d2), e1), axis=1)).relu()
        assert_shape(d1.shape, (IntVar[B], 32, 64, 64))
        return self.out(d1).sigmoid()


def main() -> None:
    assert_shape(UNet()(sg.randn(2, 1, 64, 64)).shape, (2, 1, 64, 64))
