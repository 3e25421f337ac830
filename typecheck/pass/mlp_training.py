"""A full training loop, typed end to end: no Any reaches user code."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module

T = TypeVar("T")


class Batch(sg.Dim): ...


class MLP(Module):
    def __init__(self) -> None:
        self.hidden = Linear[L[784], L[128]]()
        self.out = Linear[L[128], L[10]]()

    def __call__(self, x: Tensor[T, Batch, L[784]]) -> Tensor[T, Batch, L[10]]:
        return self.out(self.hidden(x).relu())


def train_step(
    model: MLP,
    opt: sg.optim.Adam[MLP],
    grads: sg.Gradients[MLP],
    x: Tensor[NoTape, Batch, L[784]],
    y: Tensor[NoTape, Batch],
) -> float:
    grads.zero()
    logits: Tensor[OwnedTape[MLP], Batch, L[10]] = model(x.trace(grads))
    loss: Tensor[OwnedTape[MLP]] = sg.losses.cross_entropy(logits, y)
    returned: sg.Gradients[MLP] = loss.backward()
    opt.update(model, returned)
    return loss.item()


def main() -> None:
    model = MLP()
    grads = model.alloc_grads()
    opt = sg.optim.Adam(model, lr=1e-3)
    x: Tensor[NoTape, Batch, L[784]] = sg.randn(Batch(8), 784)
    y = sg.cast(sg.tensor([0, 1, 2, 3, 4, 5, 6, 7]), Tensor[NoTape, Batch])
    for _ in range(2):
        train_step(model, opt, grads, x, y)
