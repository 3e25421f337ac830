"""Half the features, sliced with literal bounds, fed to a layer written for all of them."""

from __future__ import annotations

from typing import TypeVar

from shape_extensions import IntVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Conv2d, ConvTranspose2d, Flatten, Linear, MaxPool2d, Module, ReLU, Sequential

T = TypeVar("T")
B = IntVar("B")


def half(x: Tensor[T, [B, 256]]) -> Tensor[T, [B, 10]]:
    head = Linear(256, 10)
    return head(x[:, :128])  # E: Tensor[T, [*@_, 256]]
