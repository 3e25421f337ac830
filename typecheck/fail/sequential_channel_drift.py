r"""The second convolution expects 16 channels, the first gives 8.

runtime: channels"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


from shapegrad.nn import Conv2d, Sequential


def main() -> None:
    model = Sequential(Conv2d[L[1], L[8]](3), Conv2d[L[16], L[8]](3))  # E
    model(sg.zeros(2, 1, 9, 9))
