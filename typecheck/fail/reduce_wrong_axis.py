r"""Pooling over the features instead of the sequence.

runtime: Batch 64|64"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


@sg.checked
def pool(h: Tensor[NoTape, Batch, Seq, L[64]]) -> Tensor[NoTape, Batch, L[64]]:
    return h.mean(2)  # E


def main() -> None:
    pool(sg.zeros(Batch(2), Seq(3), 64))
