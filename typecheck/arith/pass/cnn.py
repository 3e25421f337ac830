"""A small MNIST CNN: the flatten size is computed, so Linear(3136, 10) takes it with no cast.

Each program here also runs (``main``): ``assert_shape`` is checked by Pyrefly and again at
run time, so the computed sizes are the ones the layers produce. The modules are
``checked=False``: shapegrad's run-time checks read pyright's annotations, not Pyrefly's.
"""

from __future__ import annotations

from typing import TypeVar

from shape_extensions import IntVar, assert_shape

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Conv2d, Flatten, Linear, MaxPool2d, Module

T = TypeVar("T")
B = IntVar("B")


class CNN(Module, checked=False):
    def __init__(self) -> None:
        self.conv1 = Conv2d(3, padding=1, in_channels=1, out_channels=32)
        self.conv2 = Conv2d(3, padding=1, in_channels=32, out_channels=64)
        self.pool = MaxPool2d(2)
        self.flatten = Flatten()
        self.head = Linear(3136, 10)

    def __call__(self, x: Tensor[T, [B, 1, 28, 28]]) -> Tensor[T, [B, 10]]:
        h = self.pool(self.conv1(x).relu())
        assert_shape(h.shape, (IntVar[B], 32, 14, 14))
        h2 = self.pool(self.conv2(h).relu())
        return self.head(self.flatten(h2))


def train_step(model: CNN, grads: sg.Gradients[CNN], x: Tensor[NoTape, [B, 1, 28, 28]], y: Tensor[NoTape, [B]]) -> float:
    logits = model(x.trace(grads))
    typed: Tensor[OwnedTape[CNN], [B, 10]] = logits
    loss = sg.losses.cross_entropy(logits, y)
    returned: sg.Gradients[CNN] = loss.backward()
    sg.optim.Sgd(model, lr=0.1).update(model, returned)
    return loss.item()


def main() -> None:
    model = CNN()
    out = model(sg.randn(2, 1, 28, 28))
    assert_shape(out.shape, (2, 10))
    train_step(model, model.alloc_grads(), sg.randn(2, 1, 28, 28), sg.tensor([3, 7]))
