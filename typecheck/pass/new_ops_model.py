"""A small attention model written with the ops real models reach for: sinusoidal positions
(sin, cos), a causal mask (tril, masked_fill), one-hot targets, argmax accuracy, top-k
sampling, einsum, std/norm, pad/split, formatting the loss. Element-wise ops keep the type."""

from typing import Any, Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


class TinyAttention(Module):
    def __init__(self) -> None:
        self.qk = Linear[L[16], L[16]]()
        self.act = sg.nn.SiLU()

    def __call__(self, x: Tensor[T, Batch, Seq, L[16]]) -> Tensor[T, Batch, Seq, L[16]]:
        q = self.qk(x)
        scores = sg.einsum("bqd,bkd->bqk", q, x)
        causal = sg.tril(sg.ones(x.shape[1], x.shape[1])) == 0
        weights = sg.softmax(sg.masked_fill(scores, causal, -1e9), axis=-1)
        mixed: Tensor[T, Batch, Seq, L[16]] = sg.cast(
            sg.einsum("bqk,bkd->bqd", weights, x), Tensor[T, Batch, Seq, L[16]]
        )
        return self.act(mixed)


def positions(length: int) -> Tensor[NoTape, Any, L[16]]:
    steps = sg.linspace(0.0, 1.0, length).reshape(length, 1)
    angles = steps * sg.tensor([float(i) for i in range(8)])
    return sg.cast(sg.concat([sg.sin(angles), sg.cos(angles)], axis=-1), Tensor[NoTape, Any, L[16]])


def main(tokens: Tensor[NoTape, Batch, Seq, L[16]], labels: Tensor[NoTape, Batch, Seq]) -> None:
    model = TinyAttention()
    grads = model.alloc_grads()
    hidden: Tensor[OwnedTape[TinyAttention], Batch, Seq, L[16]] = model(tokens.trace(grads))
    smooth: Tensor[OwnedTape[TinyAttention], Batch, Seq, L[16]] = sg.tanh(sg.log1p(sg.square(hidden)))
    loss = sg.losses.mse(smooth, sg.zeros_like(smooth))
    loss.backward()
    predicted = sg.argmax(hidden, axis=-1)
    accuracy = float((predicted == labels.astype("int64")).astype("float32").mean().item())
    values, indices = sg.topk(hidden, 3)
    spread = sg.std(hidden, axis=-1)
    size = sg.norm(hidden)
    left, right = sg.split(sg.pad(hidden, ((0, 0), (0, 0), (1, 1))), 9, axis=-1)
    print(f"{loss:.4f}", accuracy, values, indices, spread, size, left, right, positions(4))
