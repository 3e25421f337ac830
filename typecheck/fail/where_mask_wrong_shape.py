r"""A mask of the wrong shape for the scores.

runtime: do not broadcast"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def main() -> None:
    scores: Tensor[NoTape, Batch, Seq, Seq] = sg.zeros(Batch(2), Seq(3), Seq(3))
    mask: Tensor[NoTape, Batch, Batch, Seq] = sg.ones(Batch(2), Batch(2), Seq(3))
    sg.where(mask > 0, scores, -1e9)  # E
