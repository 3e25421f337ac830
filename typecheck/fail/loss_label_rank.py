r"""Labels with an extra axis.

runtime: labels of shape"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    logits: Tensor[NoTape, Batch, L[10]] = sg.zeros(Batch(4), 10)
    labels: Tensor[NoTape, Batch, L[1]] = sg.cast(sg.tensor([[0], [1], [2], [3]]), Tensor[NoTape, Batch, L[1]])
    sg.losses.cross_entropy(logits, labels)  # E
