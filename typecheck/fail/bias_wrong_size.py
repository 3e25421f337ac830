r"""A bias whose size is not the last dim.

runtime: do not broadcast"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    x: Tensor[NoTape, Batch, L[10]] = sg.zeros(Batch(2), 10)
    bias: Tensor[NoTape, L[11]] = sg.zeros(11)
    x + bias  # E
