"""A CNN whose head was written for 28x28 without the second pool: the flatten is 3136,
the head takes 784."""

from __future__ import annotations

from typing import TypeVar

from shape_extensions import IntVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Conv2d, ConvTranspose2d, Flatten, Linear, MaxPool2d, Module, ReLU, Sequential

T = TypeVar("T")
B = IntVar("B")


class CNN(Module):
    def __init__(self) -> None:
        self.conv1 = Conv2d(3, padding=1, in_channels=1, out_channels=32)
        self.conv2 = Conv2d(3, padding=1, in_channels=32, out_channels=64)
        self.pool = MaxPool2d(2)
        self.head = Linear(784, 10)

    def __call__(self, x: Tensor[T, [B, 1, 28, 28]]) -> Tensor[T, [B, 10]]:
        h = self.pool(self.conv2(self.pool(self.conv1(x).relu())).relu())
        return self.head(Flatten()(h))  # E: Tensor[T, [*@_, 784]]
