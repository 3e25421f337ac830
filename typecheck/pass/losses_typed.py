"""Losses keep the tape and reduce to a rank-0 tensor."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor


class Batch(sg.Dim): ...


def main(
    logits: Tensor[OwnedTape[None], Batch, L[10]], labels: Tensor[NoTape, Batch], target: Tensor[NoTape, Batch, L[10]]
) -> None:
    ce: Tensor[OwnedTape[None]] = sg.losses.cross_entropy(logits, labels, label_smoothing=0.1)
    per_row: Tensor[OwnedTape[None], Batch] = sg.losses.cross_entropy(logits, labels, reduction="none")
    mse: Tensor[OwnedTape[None]] = sg.losses.mse(logits, target)
    bce: Tensor[OwnedTape[None]] = sg.losses.binary_cross_entropy_with_logits(logits, target)
    kl: Tensor[OwnedTape[None]] = sg.losses.kl_div(logits.log_softmax(), target)
    weighted: Tensor[OwnedTape[None], Batch, L[10]] = sg.losses.binary_cross_entropy_with_logits(
        logits, target, "none", weight=sg.ones(10), pos_weight=sg.full((10,), 3.0)
    )
    probs: Tensor[OwnedTape[None]] = sg.losses.binary_cross_entropy(logits.sigmoid(), target, weight=sg.ones(10))
    print(ce, per_row, mse, bce, kl, weighted, probs)
