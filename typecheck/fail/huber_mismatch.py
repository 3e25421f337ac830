r"""Huber loss of mismatched shapes.

runtime: one shape"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    p: Tensor[NoTape, L[3]] = sg.zeros(3)
    q: Tensor[NoTape, L[5]] = sg.zeros(5)
    sg.losses.huber(p, q)  # E
