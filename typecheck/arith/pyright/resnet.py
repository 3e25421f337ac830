"""pass/resnet.py for pyright: the same stride-2 block, its computed sizes stated with casts."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...

from shapegrad.nn import BatchNorm2d, Conv2d, GlobalAvgPool2d, Linear, Module, SameConv2d


class DownBlock(Module):
    def __init__(self) -> None:
        self.conv1 = Conv2d[L[16], L[32]](3, 2, 1, bias=False)
        self.bn1 = BatchNorm2d[L[32]]()
        self.conv2 = SameConv2d[L[32], L[32]](3, bias=False)
        self.bn2 = BatchNorm2d[L[32]]()
        self.shortcut = Conv2d[L[16], L[32]](1, 2, bias=False)

    def __call__(self, x: Tensor[T, Batch, L[16], L[32], L[32]]) -> Tensor[T, Batch, L[32], L[16], L[16]]:
        h = self.bn1(self.conv1(x)).relu()
        h = self.bn2(self.conv2(h))
        return sg.cast((h + self.shortcut(x)).relu(), Tensor[T, Batch, L[32], L[16], L[16]])  # cast: computed


class Net(Module):
    def __init__(self) -> None:
        self.stem = SameConv2d[L[3], L[16]](3)
        self.block = DownBlock()
        self.pool = GlobalAvgPool2d()
        self.head = Linear[L[32], L[10]]()

    def __call__(self, x: Tensor[T, Batch, L[3], L[32], L[32]]) -> Tensor[T, Batch, L[10]]:
        h = self.block(self.stem(x).relu())
        return self.head(self.pool(h))
