"""sg.compile keeps the step's signature: typed tensors in, the step's return type out."""

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


def main() -> None:
    model = MLP()
    grads = model.alloc_grads()
    opt = sg.optim.Adam(model, lr=1e-3)

    def train_step(x: Tensor[NoTape, Batch, L[784]], y: Tensor[NoTape, Batch]) -> Tensor[OwnedTape[MLP]]:
        grads.zero()
        loss = sg.losses.cross_entropy(model(x.trace(grads)), y)
        loss.backward()
        opt.update(model, grads)
        return loss

    def predict(x: Tensor[NoTape, Batch, L[784]]) -> Tensor[NoTape, Batch, L[10]]:
        return model(x)

    train: sg.CompiledStep[[Tensor[NoTape, Batch, L[784]], Tensor[NoTape, Batch]], Tensor[OwnedTape[MLP]]]
    train = sg.compile(train_step)
    forward = sg.compile(predict, max_recordings=2)
    x: Tensor[NoTape, Batch, L[784]] = sg.randn(Batch(8), 784)
    y = sg.cast(sg.tensor([0, 1, 2, 3, 4, 5, 6, 7]), Tensor[NoTape, Batch])
    for _ in range(3):
        loss: Tensor[OwnedTape[MLP]] = train(x, y)
        value: float = loss.item()
        print(value)
    logits: Tensor[NoTape, Batch, L[10]] = forward(x)
    print(logits.shape, len(train.recordings), train.eager_reason)
