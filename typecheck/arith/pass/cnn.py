"""A small MNIST CNN: the flatten size is computed, so Linear(3136, 10) takes it with no cast."""

from __future__ import annotations

from typing import TypeVar, assert_type

from shape_extensions import IntVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Conv2d, Flatten, Linear, MaxPool2d, Module

T = TypeVar("T")
B = IntVar("B")


class CNN(Module):
    def __init__(self) -> None:
        self.conv1 = Conv2d(3, padding=1, in_channels=1, out_channels=32)
        self.conv2 = Conv2d(3, padding=1, in_channels=32, out_channels=64)
        self.pool = MaxPool2d(2)
        self.flatten = Flatten()
        self.head = Linear(3136, 10)

    def __call__(self, x: Tensor[T, [B, 1, 28, 28]]) -> Tensor[T, [B, 10]]:
        h = self.pool(self.conv1(x).relu())
        assert_type(h, Tensor[T, [B, 32, 14, 14]])
        h2 = self.pool(self.conv2(h).relu())
        return self.head(self.flatten(h2))


def train_step(model: CNN, grads: sg.Gradients[CNN], x: Tensor[NoTape, [B, 1, 28, 28]], y: Tensor[NoTape, [B]]) -> float:
    logits = model(x.trace(grads))
    assert_type(logits, Tensor[OwnedTape[CNN], [B, 10]])
    loss = sg.losses.cross_entropy(logits, y)
    returned: sg.Gradients[CNN] = loss.backward()
    sg.optim.Sgd(model, lr=0.1).update(model, returned)
    return loss.item()
