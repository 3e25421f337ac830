r"""A convolution followed by a Linear, without Flatten.

runtime: inner dims differ|linear"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


from shapegrad.nn import Conv2d, Linear, Sequential


def main() -> None:
    model = Sequential(Conv2d[L[1], L[8]](3), Linear[L[8], L[10]]())  # E
    model(sg.zeros(2, 1, 5, 5))
