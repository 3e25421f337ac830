r"""A traced weight for binary cross-entropy: it would get no gradient (PyTorch refuses one too).

runtime: weight is traced"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


def main() -> None:
    logits: Tensor[NoTape, Batch, L[3]] = sg.zeros(Batch(2), 3)
    targets: Tensor[NoTape, Batch, L[3]] = sg.ones(Batch(2), 3)
    weight = sg.ones(3).trace(sg.Gradients())
    sg.losses.binary_cross_entropy_with_logits(logits, targets, weight=weight)  # E
