"""A ResNet stage on CIFAR-sized inputs: a stride-2 block whose shortcut is a strided 1x1
convolution, so the residual sum type-checks only because both branches' sizes are
computed alike; global pooling then a head."""

from __future__ import annotations

from typing import TypeVar

from shape_extensions import IntVar, assert_shape

import shapegrad as sg
from shapegrad import Tensor
from shapegrad.nn import BatchNorm2d, Conv2d, GlobalAvgPool2d, Linear, Module

T = TypeVar("T")
B = IntVar("B")


class DownBlock(Module, checked=False):
    def __init__(self) -> None:
        self.conv1 = Conv2d(3, 2, 1, in_channels=16, out_channels=32, bias=False)
        self.bn1 = BatchNorm2d(32)
        self.conv2 = Conv2d(3, padding=1, in_channels=32, out_channels=32, bias=False)
        self.bn2 = BatchNorm2d(32)
        self.shortcut = Conv2d(1, 2, in_channels=16, out_channels=32, bias=False)

    def __call__(self, x: Tensor[T, [B, 16, 32, 32]]) -> Tensor[T, [B, 32, 16, 16]]:
        h = self.bn1(self.conv1(x)).relu()
        h = self.bn2(self.conv2(h))
        return (h + self.shortcut(x)).relu()


class Net(Module, checked=False):
    def __init__(self) -> None:
        self.stem = Conv2d(3, padding=1, in_channels=3, out_channels=16)
        self.block = DownBlock()
        self.pool = GlobalAvgPool2d()
        self.head = Linear(32, 10)

    def __call__(self, x: Tensor[T, [B, 3, 32, 32]]) -> Tensor[T, [B, 10]]:
        h = self.block(self.stem(x).relu())
        features = self.pool(h)
        assert_shape(features.shape, (IntVar[B], 32))
        return self.head(features)


def main() -> None:
    assert_shape(Net()(sg.randn(2, 3, 32, 32)).shape, (2, 10))
