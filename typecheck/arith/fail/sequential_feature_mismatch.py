"""A Sequential whose second Linear takes 100 features where the first gives 128. (With a
ReLU between them Pyrefly does not see it: it does not solve an activation's size from the
chain, so the activation bridges any sizes; pyright does.)"""

from __future__ import annotations

from typing import TypeVar

from shape_extensions import IntVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Conv2d, ConvTranspose2d, Flatten, Linear, MaxPool2d, Module, ReLU, Sequential

T = TypeVar("T")
B = IntVar("B")


def build() -> None:
    Sequential(Linear(784, 128), Linear(100, 10))  # E: Layer[Feat[128], @_]
