r"""Token logits with labels that lost the sequence axis.

runtime: expect labels of shape"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def main() -> None:
    logits: Tensor[NoTape, Batch, Seq, L[50]] = sg.zeros(Batch(2), Seq(3), 50)
    labels = sg.cast(sg.tensor([1, 2]), Tensor[NoTape, Batch])
    sg.losses.cross_entropy(logits, labels)  # E
