"""Token-level losses over leading dims; backward of non-scalar outputs with seeds."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


class Model: ...


def losses(
    logits: Tensor[OwnedTape[Model], Batch, Seq, L[50]],
    targets: Tensor[NoTape, Batch, Seq],
    log_probs: Tensor[OwnedTape[Model], Batch, Seq, L[50]],
    reference: Tensor[NoTape, Batch, Seq, L[50]],
) -> None:
    token: Tensor[OwnedTape[Model]] = sg.losses.cross_entropy(logits, targets)
    per_token: Tensor[OwnedTape[Model], Batch, Seq] = sg.losses.cross_entropy(logits, targets, reduction="none")
    kl: Tensor[OwnedTape[Model]] = sg.losses.kl_div(log_probs, reference)
    print(token, per_token, kl)


def seeds(loss: Tensor[OwnedTape[Model]], per_item: Tensor[OwnedTape[Model], Batch]) -> None:
    g1: sg.Gradients[Model] = sg.backward(loss)
    g2: sg.Gradients[Model] = sg.backward(loss, per_item, seeds=[None, sg.ones_like(per_item)])
    g3: sg.Gradients[Model] = per_item.backward(sg.ones_like(per_item))
    g4: sg.Gradients[Model] = loss.backward()
    print(g1, g2, g3, g4)
