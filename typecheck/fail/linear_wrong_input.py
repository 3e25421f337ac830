r"""A Linear layer fed the wrong feature size.

runtime: inner dims differ"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    layer = Linear[L[784], L[128]]()
    x: Tensor[NoTape, Batch, L[783]] = sg.zeros(Batch(2), 783)
    layer(x)  # E
