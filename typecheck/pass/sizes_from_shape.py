"""Sizes read from ``x.shape`` keep their dims (issue #23 §1): ``B, S, C = x.shape`` the way
nanoGPT, makemore and most PyTorch code start a forward pass, then the sizes go back into
``reshape``, ``broadcast_to``, ``sg.arange`` and ``sg.zeros`` and come out typed. A literal
size times a literal is its product (pyright's literal arithmetic); a size computed from a
plain int is open (mypy, Pyrefly and ty do no literal arithmetic: write the literal). Where a dim is an unbounded TypeVar, ``x.shape`` stays ``tuple[int, ...]``
so the sizes still go into ``range`` and ``math.sqrt``."""

import math
from typing import Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor, nn

T = TypeVar("T")
B = TypeVar("B")
D = TypeVar("D")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def split_heads(x: Tensor[T, Batch, Seq, L[32]]) -> Tensor[T, Batch, L[4], Seq, L[8]]:
    """The attention head split of nanoGPT: the sizes come from the input's own shape."""
    b, s, c = x.shape
    assert_type((b, s, c), tuple[Batch, Seq, L[32]])
    return x.reshape(b, s, 4, 8).permute(0, 2, 1, 3)  # pyright also reads c // 4 as L[8]


def merge_heads(y: Tensor[T, Batch, L[4], Seq, L[8]]) -> Tensor[T, Batch, Seq, L[32]]:
    b, _, s, _ = y.shape
    return y.permute(0, 2, 1, 3).reshape(b, s, 32)


def positions(idx: Tensor[NoTape, Batch, Seq], wpe: nn.Embedding[L[16], L[32]]) -> Tensor[NoTape, Seq, L[32]]:
    _, t = idx.shape
    return wpe(sg.arange(0, t))  # (Seq,) positions: added to (Batch, Seq, 32) token embeddings


def first_state(x: Tensor[T, Batch, Seq, L[16]], start: Tensor[NoTape, L[1], L[32]]) -> Tensor[NoTape, Batch, L[32]]:
    b, _, _ = x.shape
    zeros = sg.zeros(b, 32)
    return start.broadcast_to(b, start.shape[1]) + zeros  # makemore's RNN start state


def computed_sizes(x: Tensor[NoTape, Batch, Seq, L[32]], heads: int) -> None:
    b, s, c = x.shape
    assert_type(x.reshape(b, s, heads, c // heads), Tensor[NoTape, *tuple[Open, ...]])  # an int: open
    assert_type(x.reshape(-1, c), Tensor[NoTape, *tuple[Open, ...]])  # -1 is computed: open
    assert_type(sg.broadcast_to(x[:, :1], (b, 1, c)), Tensor[NoTape, Batch, L[1], L[32]])


def generic_sizes(q: Tensor[T, B, D], k: Tensor[T, B, D]) -> Tensor[T, B, B]:
    """Dims of unbounded TypeVars: the shape is ints, as before."""
    assert_type(q.shape, tuple[int, ...])
    scale = 1.0 / math.sqrt(q.shape[-1])
    for _ in range(q.shape[0]):
        pass
    return (q @ k.mT) * scale


def main() -> None:
    x: Tensor[NoTape, Batch, Seq, L[32]] = sg.randn(Batch(2), Seq(16), 32)
    assert merge_heads(split_heads(x)).shape == (2, 16, 32)
    idx: Tensor[NoTape, Batch, Seq] = sg.zeros(Batch(2), Seq(16), dtype="int64")
    assert (x + positions(idx, nn.Embedding[L[16], L[32]]())).shape == (2, 16, 32)
    state = first_state(sg.randn(Batch(2), Seq(16), 16), sg.ones(1, 32))
    assert state.shape == (2, 32)
    computed_sizes(x, 4)
    assert generic_sizes(sg.ones(3, 8), sg.ones(3, 8)).shape == (3, 3)


if __name__ == "__main__":
    main()
