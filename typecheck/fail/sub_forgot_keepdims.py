r"""Centering without keepdims: (B, 8) minus (B,).

runtime: do not broadcast"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def main() -> None:
    x: Tensor[NoTape, Batch, L[8]] = sg.ones(Batch(2), 8)
    x - x.mean(axis=-1)  # E
