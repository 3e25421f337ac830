"""Issue #25's API as a user writes it: nll_loss, binary_cross_entropy and cross_entropy with
class weights and ignore_index keep the tape and the batch dims; optimizers take parameter
groups; multinomial, repeat and einsum's diagonals give tensors."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor


class Batch(sg.Dim): ...


def losses(
    logits: Tensor[OwnedTape[None], Batch, L[10]],
    labels: Tensor[NoTape, Batch],
    class_weights: Tensor[NoTape, L[10]],
    probs: Tensor[OwnedTape[None], Batch, L[10]],
    targets: Tensor[NoTape, Batch, L[10]],
) -> None:
    nll: Tensor[OwnedTape[None]] = sg.losses.nll_loss(logits.log_softmax(), labels, ignore_index=-100)
    rows: Tensor[OwnedTape[None], Batch] = sg.losses.nll_loss(
        logits.log_softmax(), labels, weight=class_weights, reduction="none"
    )
    ce: Tensor[OwnedTape[None]] = sg.losses.cross_entropy(logits, labels, weight=class_weights, ignore_index=0)
    bce: Tensor[OwnedTape[None]] = sg.losses.binary_cross_entropy(probs, targets)
    per_element: Tensor[OwnedTape[None], Batch, L[10]] = sg.losses.binary_cross_entropy(
        probs, targets, reduction="none"
    )
    print(nll, rows, ce, bce, per_element)


def optimizers(model: sg.nn.Linear[L[4], L[2]]) -> None:
    no_decay = sg.optim.Group(select=lambda path, p: p.ndim < 2, weight_decay=0.0)
    adamw = sg.optim.AdamW(model, lr=1e-3, weight_decay=0.1, groups=[no_decay])
    adagrad = sg.optim.Adagrad(model, groups=[sg.optim.Group("*.bias", lr=0.1)])
    adadelta = sg.optim.Adadelta(model, rho=0.95)
    print(adamw, adagrad, adadelta)


def ops(probs: Tensor[NoTape, Batch, L[5]], square: Tensor[OwnedTape[None], L[3], L[3]]) -> None:
    draws: Tensor[NoTape, Batch, sg.Open] = sg.multinomial(probs, 2, replacement=True, generator=sg.Generator(0))
    tiled = sg.repeat(square, 2, 1)
    trace = sg.einsum("ii->", square)
    print(draws, tiled, trace, square.repeat((1, 2)))
