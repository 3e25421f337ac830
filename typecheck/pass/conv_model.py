"""A small CNN: channels typed, spatial sizes open and stated by the next layer."""

from typing import Any, Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad.nn import Conv2d, Flatten, Linear, MaxPool2d, Module

T = TypeVar("T")


class Batch(sg.Dim): ...


class CNN(Module):
    def __init__(self) -> None:
        self.conv1 = Conv2d[L[1], L[8]](kernel_size=3, padding=1)
        self.conv2 = Conv2d[L[8], L[16]](kernel_size=3, padding=1)
        self.pool = MaxPool2d(2)
        self.flatten = Flatten()
        self.head = Linear[L[256], L[10]]()

    def __call__(self, x: Tensor[T, Batch, L[1], L[8], L[8]]) -> Tensor[T, Batch, L[10]]:
        h: Tensor[T, Batch, L[8], Any, Any] = self.pool(self.conv1(x).relu())
        h2: Tensor[T, Batch, L[16], Any, Any] = self.pool(self.conv2(h).relu())
        flat: Tensor[T, Batch, L[256]] = self.flatten(h2)
        return self.head(flat)


def main(x: Tensor[NoTape, Batch, L[1], L[8], L[8]]) -> None:
    out: Tensor[NoTape, Batch, L[10]] = CNN()(x)
    print(out)
