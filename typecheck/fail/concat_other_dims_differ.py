r"""Rows of different widths joined along the batch axis.

runtime: concat along axis 0"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def main() -> None:
    a: Tensor[NoTape, Batch, L[64]] = sg.zeros(Batch(2), 64)
    b: Tensor[NoTape, Batch, L[32]] = sg.zeros(Batch(2), 32)
    sg.concat([a, b], axis=0)  # E
