"""A Sequential whose second Linear takes 100 features where the first gives 128, with and
without an activation between them; a convolution's channels into a Linear with no Flatten."""

from __future__ import annotations

from typing import TypeVar

from shape_extensions import IntVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Conv2d, ConvTranspose2d, Flatten, Linear, MaxPool2d, Module, ReLU, Sequential

T = TypeVar("T")
B = IntVar("B")


def build() -> None:
    Sequential(Linear(784, 128), Linear(100, 10))  # E: Chains[Feat[128], @_]
    Sequential(Linear(784, 128), ReLU(), Linear(100, 10))  # E: Chains[Feat[128], @_]
    Sequential(Conv2d(3, in_channels=1, out_channels=8), ReLU(), Linear(8, 10))  # E: Chains[Chan[8], @_]
