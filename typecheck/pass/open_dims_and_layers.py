"""Open dims left with sg.cast; Prod dims from flatten; same-padding convolutions; typed layers."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Prod, Tensor
from shapegrad.nn import (
    BatchNorm1d,
    BatchNorm2d,
    Conv2d,
    Dropout,
    Flatten,
    GELU,
    Linear,
    MaxPool2d,
    Module,
    MultiHeadAttention,
    ReLU,
    SameConv2d,
    Sequential,
)

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


class Pixels(sg.Dim): ...


class Hidden(sg.Dim): ...


class Out(sg.Dim): ...


class Net(Module):
    def __init__(self) -> None:
        self.act = ReLU()
        self.drop = Dropout(0.1)
        self.gelu = GELU()
        self.fc = Linear[Hidden, Out](Hidden(64), Out(32))

    def __call__(self, h: Tensor[T, Batch, Hidden]) -> Tensor[T, Batch, Out]:
        return self.drop(self.act(self.fc(self.gelu(h))))


def open_dims(
    img: Tensor[NoTape, Batch, L[28], L[28]], a: Tensor[NoTape, Batch, L[64]], b: Tensor[NoTape, Batch, L[32]]
) -> None:
    batch = Batch(img.shape[0])
    flat = img.reshape(batch, -1)  # open: stated below
    stated = sg.cast(flat, Tensor[NoTape, Batch, L[784]])
    named: Tensor[NoTape, Batch, Pixels] = img.reshape(batch, Pixels(784))
    by_function: Tensor[NoTape, Batch, Pixels] = sg.reshape(img, (batch, Pixels(784)))
    product: Tensor[NoTape, Batch, Prod[L[28], L[28]]] = img.flatten()
    head = Linear[Prod[L[28], L[28]], L[10]]()
    logits: Tensor[NoTape, Batch, L[10]] = head(product)
    joined = sg.concat([a, b], axis=-1)
    width = sg.cast(joined, Tensor[NoTape, Batch, L[96]])
    rows = sg.concat([a, a])
    stacked = sg.stack([a, a], axis=1)
    biased = joined + 1.0  # an open dim flows through ops
    print(stated, named, by_function, logits, width, rows, stacked, biased)


def layers(
    x: Tensor[NoTape, Batch, L[16]],
    seq: Tensor[NoTape, Batch, L[16], Seq],
    img: Tensor[NoTape, Batch, L[3], L[32], L[32]],
    q: Tensor[NoTape, Batch, Seq, L[16]],
    mem: Tensor[OwnedTape[Net], Batch, Seq, L[16]],
    h: Tensor[NoTape, Batch, Hidden],
) -> None:
    a: Tensor[NoTape, Batch, L[16]] = BatchNorm1d[L[16]]()(x)
    s: Tensor[NoTape, Batch, L[16], Seq] = BatchNorm1d[L[16]]()(seq)
    c: Tensor[NoTape, Batch, L[8], L[32], L[32]] = BatchNorm2d[L[8]]()(SameConv2d[L[3], L[8]](3)(img))
    cross: Tensor[OwnedTape[Net], Batch, Seq, L[16]] = MultiHeadAttention[L[16]](2)(q, mem, mem)
    out: Tensor[NoTape, Batch, Out] = Net()(h)
    print(a, s, c, cross, out)


def cnn(images: Tensor[NoTape, Batch, L[1], L[14], L[14]]) -> None:
    model = Sequential(
        Conv2d[L[1], L[8]](3, padding=1),
        ReLU(),
        MaxPool2d(2),
        Conv2d[L[8], L[16]](3, padding=1),
        ReLU(),
        Flatten(),
        Linear[L[784], L[10]](),
    )
    scores: Tensor[NoTape, Batch, L[10]] = model(images)
    features = Sequential(Conv2d[L[1], L[8]](3), ReLU(), MaxPool2d(2))
    maps: Tensor[NoTape, Batch, L[8], sg.Open, sg.Open] = features(images)
    print(scores, maps)
