"""sg.where broadcasts as the binary operators do (attack 15, F1): a padding mask ``(B, S, 1)``
over ``(B, S, D)`` values, a keepdims branch, a bias branch, a causal ``(S, S)`` mask over
scores of open rank (a nanoGPT head split) and over typed ones, an open-rank mask over typed
values; the result keeps the traced branch's tape whichever branch it is."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Open, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def pad_masked(x: Tensor[T, Batch, Seq, L[8]], keep: Tensor[NoTape, Batch, Seq]) -> Tensor[T, Batch, Seq, L[8]]:
    zeroed = sg.where(keep[:, :, None], x, 0.0)
    mean_filled = sg.where(keep[:, :, None], x, x.mean(axis=1, keepdims=True))
    return zeroed + mean_filled


def leaky(x: Tensor[T, Batch, Seq, L[8]], bias: Tensor[NoTape, L[8]]) -> Tensor[T, Batch, Seq, L[8]]:
    a = sg.where(x > 0, x, 0.01 * x)
    b = sg.where(x > 0, bias, x)  # an untraced branch first: the result keeps x's tape
    c = sg.where(x > 0, x, bias)
    d = sg.where(x > 0, 0.0, x)
    return a + b + c + d


def causal(
    att: Tensor[T, Batch, L[4], Seq, Seq], mask: Tensor[NoTape, Seq, Seq], heads: Tensor[T, *tuple[Open, ...]]
) -> Tensor[T, Batch, L[4], Seq, Seq]:
    typed = sg.where(mask, att, float("-inf"))
    split: Tensor[T, *tuple[Open, ...]] = sg.where(mask, heads, float("-inf")).softmax(axis=-1)
    print(split.shape)
    return typed.softmax(axis=-1)


def open_mask(x: Tensor[T, Batch, L[8]], mask: Tensor[NoTape, *tuple[Open, ...]]) -> Tensor[T, *tuple[Open, ...]]:
    flat = x.reshape(-1, 8)  # an open-rank branch beside a typed one: an open rank, traced
    return sg.where(mask, x, 0.0) + sg.where(x > 0, flat, x) + sg.where(x > 0, x, flat)


def traced(x: Tensor[OwnedTape[None], L[3]], y: Tensor[NoTape, L[3]]) -> None:
    picked: Tensor[OwnedTape[None], L[3]] = sg.where(x > 0, y, x)
    picked.sum().backward()


def main() -> None:
    x: Tensor[NoTape, Batch, Seq, L[8]] = sg.randn(Batch(2), Seq(5), 8)
    keep: Tensor[NoTape, Batch, Seq] = sg.randn(Batch(2), Seq(5)) > 0
    print(pad_masked(x, keep).shape, leaky(x, sg.randn(8)).shape)
    att: Tensor[NoTape, Batch, L[4], Seq, Seq] = sg.randn(Batch(2), 4, Seq(5), Seq(5))
    causal_mask: Tensor[NoTape, Seq, Seq] = sg.tril(sg.ones(Seq(5), Seq(5))) > 0
    print(causal(att, causal_mask, att.reshape(2, 4, 5, -1)).shape)
    print(open_mask(x[:, 0], x[:, 0].reshape(-1, 8) > 0).shape)


if __name__ == "__main__":
    main()
