r"""Logits and labels of different batch dims.

runtime: labels of shape \(4,\)"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


class Other(sg.Dim): ...


def main() -> None:
    logits: Tensor[NoTape, Batch, L[10]] = sg.zeros(Batch(4), 10)
    labels = sg.cast(sg.tensor([0, 1, 2]), Tensor[NoTape, Other])
    sg.losses.cross_entropy(logits, labels)  # E
