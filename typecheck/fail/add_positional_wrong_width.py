r"""A positional table of the wrong width.

runtime: do not broadcast"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def main() -> None:
    tok: Tensor[NoTape, Batch, Seq, L[32]] = sg.zeros(Batch(2), Seq(3), 32)
    pos: Tensor[NoTape, Seq, L[64]] = sg.zeros(Seq(3), 64)
    tok + pos  # E
