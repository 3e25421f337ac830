"""pass/cnn.py for pyright: the same CNN, its computed sizes stated with casts."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...

from shapegrad.nn import Conv2d, Flatten, Linear, MaxPool2d, Module


class CNN(Module):
    def __init__(self) -> None:
        self.conv1 = Conv2d[L[1], L[32]](3, padding=1)
        self.conv2 = Conv2d[L[32], L[64]](3, padding=1)
        self.pool = MaxPool2d(2)
        self.flatten = Flatten()
        self.head = Linear[L[3136], L[10]]()

    def __call__(self, x: Tensor[T, Batch, L[1], L[28], L[28]]) -> Tensor[T, Batch, L[10]]:
        h = self.pool(self.conv1(x).relu())
        h2 = self.pool(self.conv2(h).relu())
        flat = sg.cast(self.flatten(h2), Tensor[T, Batch, L[3136]])  # cast: computed
        return self.head(flat)


def train_step(model: CNN, grads: sg.Gradients[CNN], x: Tensor[NoTape, Batch, L[1], L[28], L[28]], y: Tensor[NoTape, Batch]) -> float:
    logits: Tensor[OwnedTape[CNN], Batch, L[10]] = model(x.trace(grads))
    loss = sg.losses.cross_entropy(logits, y)
    returned: sg.Gradients[CNN] = loss.backward()
    sg.optim.Sgd(model, lr=0.1).update(model, returned)
    return loss.item()
