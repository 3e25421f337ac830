"""pass/mlp_sequential.py for pyright: the same Sequential MLP and step."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...

from shapegrad.nn import Dropout, Linear, ReLU, Sequential


def step(x: Tensor[NoTape, Batch, L[784]], y: Tensor[NoTape, Batch]) -> float:
    model = Sequential(Linear[L[784], L[256]](), ReLU(), Dropout(0.1), Linear[L[256], L[10]]())
    grads = model.alloc_grads()
    opt = sg.optim.Adam(model, lr=1e-3)
    logits = model(x.trace(grads))
    loss = sg.losses.cross_entropy(logits, y)
    opt.update(model, loss.backward())
    return loss.item()
