r"""Predictions and targets of different shapes.

runtime: one shape"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    pred: Tensor[NoTape, Batch, L[3]] = sg.zeros(Batch(2), 3)
    target: Tensor[NoTape, Batch, L[4]] = sg.zeros(Batch(2), 4)
    sg.losses.mse(pred, target)  # E
