"""Indexing the way models are written (issue #23 §4): every dim an index does not touch is
kept, and a literal (or Dim) slice stop keeps its size."""

from typing import Literal as L, assert_type

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def idioms(x: Tensor[NoTape, Batch, Seq, L[64]], i: int, t: Seq, k: int) -> None:
    assert_type(x[None, :], Tensor[NoTape, L[1], Batch, Seq, L[64]])
    assert_type(x[:, None, :], Tensor[NoTape, Batch, L[1], Seq, L[64]])
    assert_type(x[:, i, :], Tensor[NoTape, Batch, L[64]])
    assert_type(x[:, -1, :], Tensor[NoTape, Batch, L[64]])  # the last position
    assert_type(x[:, -1:], Tensor[NoTape, Batch, L[1], L[64]])
    assert_type(x[:, [-1], :], Tensor[NoTape, Batch, Open, L[64]])
    assert_type(x[:, :16], Tensor[NoTape, Batch, L[16], L[64]])
    assert_type(x[..., :32], Tensor[NoTape, Batch, Seq, L[32]])
    assert_type(x[:, :t], Tensor[NoTape, Batch, Seq, L[64]])
    assert_type(x[:, :k], Tensor[NoTape, Batch, Open, L[64]])  # an int stop: open
    assert_type(x[:, :-1], Tensor[NoTape, Batch, Open, L[64]])  # a negative stop: open
    assert_type(x[0, :], Tensor[NoTape, Seq, L[64]])
    assert_type(x[:, :, None], Tensor[NoTape, Batch, Seq, L[1], L[64]])


def swapped_axes(q: Tensor[NoTape, Batch, Seq, L[4], L[16]]) -> None:
    """swapaxes at the literal pairs attention code uses keeps every dim."""
    heads = q.swapaxes(1, 2)  # (B, S, H, D) -> (B, H, S, D)
    assert_type(heads, Tensor[NoTape, Batch, L[4], Seq, L[16]])
    keys_t = heads.swapaxes(-2, -1)  # a key's transpose
    assert_type(keys_t, Tensor[NoTape, Batch, L[4], L[16], Seq])
    assert_type(heads @ keys_t, Tensor[NoTape, Batch, L[4], Seq, Seq])
    assert_type(sg.swapaxes(q, 0, 1), Tensor[NoTape, Seq, Batch, L[4], L[16]])


def causal_bias(bias: Tensor[NoTape, L[1], L[1], L[16], L[16]], t: Seq) -> Tensor[NoTape, L[1], L[1], Seq, Seq]:
    return bias[:, :, :t, :t]  # nanoGPT's mask, cut to the sequence


def main() -> None:
    idioms(sg.zeros(Batch(2), Seq(16), 64), 3, Seq(8), 5)
    print(causal_bias(sg.ones(1, 1, 16, 16), Seq(8)).shape)
    swapped_axes(sg.zeros(Batch(2), Seq(3), 4, 16))


if __name__ == "__main__":
    main()
