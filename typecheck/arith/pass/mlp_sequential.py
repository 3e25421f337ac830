"""An MLP as a Sequential, trained one step: the chain's feature sizes agree, its result
is typed by the last layer, the tape goes from the traced input to the loss, and the loss's
backward gives the model's own Gradients, which its optimizer takes."""

from __future__ import annotations

from typing import Any

from shape_extensions import IntVar, assert_shape

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Dropout, Linear, ReLU, Sequential

B = IntVar("B")


def step(x: Tensor[NoTape, [B, 784]], y: Tensor[NoTape, [B]]) -> float:
    model = Sequential(Linear(784, 256), ReLU(), Dropout(0.1), Linear(256, 10))
    grads = model.alloc_grads()
    opt = sg.optim.Adam(model, lr=1e-3)
    logits = model(x.trace(grads))
    typed: Tensor[OwnedTape[Any], [B, 10]] = logits
    assert_shape(logits.shape, (IntVar[B], 10))
    loss = sg.losses.cross_entropy(logits, y)
    opt.update(model, loss.backward())
    return loss.item()


def main() -> None:
    step(sg.randn(4, 784), sg.tensor([0, 1, 2, 3]))
