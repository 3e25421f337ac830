r"""Probability targets over another number of classes than the logits'.

runtime: integer class labels or class probabilities of the logits' shape"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


def main() -> None:
    logits: Tensor[NoTape, Batch, L[10]] = sg.zeros(Batch(4), 10)
    probs: Tensor[NoTape, Batch, L[5]] = sg.full((Batch(4), 5), 0.2)
    sg.losses.cross_entropy(logits, probs)  # E
