"""pass/unet.py for pyright: the same U-Net, its computed sizes stated with casts."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...

from shapegrad.nn import Conv2d, ConvTranspose2d, Doubles, Module, SameConv2d


class UNet(Module):
    def __init__(self) -> None:
        self.enc1 = SameConv2d[L[1], L[32]](3)
        self.down1 = Conv2d[L[32], L[64]](3, 2, 1)
        self.down2 = Conv2d[L[64], L[128]](3, 2, 1)
        self.up2 = ConvTranspose2d[L[128], L[64], Doubles](2, 2)
        self.dec2 = SameConv2d[L[128], L[64]](3)
        self.up1 = ConvTranspose2d[L[64], L[32], Doubles](2, 2)
        self.dec1 = SameConv2d[L[64], L[32]](3)
        self.out = SameConv2d[L[32], L[1]](1)

    def __call__(self, x: Tensor[T, Batch, L[1], L[64], L[64]]) -> Tensor[T, Batch, L[1], L[64], L[64]]:
        e1 = self.enc1(x).relu()
        e2 = sg.cast(self.down1(e1).relu(), Tensor[T, Batch, L[64], L[32], L[32]])  # cast: computed
        bottom = self.down2(e2).relu()
        u2 = sg.cast(self.up2(bottom), Tensor[T, Batch, L[64], L[32], L[32]])  # cast: computed
        j2 = sg.cast(sg.concat((u2, e2), axis=1), Tensor[T, Batch, L[128], L[32], L[32]])  # cast: computed
        d2 = self.dec2(j2).relu()
        u1 = sg.cast(self.up1(d2), Tensor[T, Batch, L[32], L[64], L[64]])  # cast: computed
        j1 = sg.cast(sg.concat((u1, e1), axis=1), Tensor[T, Batch, L[64], L[64], L[64]])  # cast: computed
        d1 = self.dec1(j1).relu()
        return self.out(d1).sigmoid()
