"""Layers built the PyTorch way, from plain ints (no type arguments), called on typed
tensors: their sizes are Open, so they take any feature or channel count (the run time checks
it against their weights) and give the sizes they can say (issue #23 §1 and §6)."""

from typing import Literal as L, assert_type

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor, nn


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def main(n_embd: int = 16, n_hidden: int = 8) -> None:
    x: Tensor[NoTape, Batch, L[16]] = sg.randn(Batch(4), 16)
    seq: Tensor[NoTape, Batch, Seq, L[16]] = sg.randn(Batch(4), Seq(5), 16)
    img: Tensor[NoTape, Batch, L[3], L[8], L[8]] = sg.randn(Batch(4), 3, 8, 8)
    signal: Tensor[NoTape, Batch, L[3], L[12]] = sg.randn(Batch(4), 3, 12)

    assert_type(nn.BatchNorm1d(16)(x), Tensor[NoTape, Batch, L[16]])
    assert_type(nn.BatchNorm1d(3)(signal), Tensor[NoTape, Batch, L[3], L[12]])
    assert_type(nn.BatchNorm2d(3)(img), Tensor[NoTape, Batch, L[3], L[8], L[8]])
    assert_type(nn.LayerNorm(n_embd)(seq), Tensor[NoTape, Batch, Seq, L[16]])
    assert_type(nn.Linear(n_embd, n_hidden)(seq), Tensor[NoTape, Batch, Seq, Open])

    conv = nn.Conv2d(3, padding=1, in_channels=3, out_channels=n_hidden)(img)
    assert_type(conv, Tensor[NoTape, Batch, Open, Open, Open])
    same = nn.SameConv2d(3, in_channels=3, out_channels=n_hidden)(img)
    assert_type(same, Tensor[NoTape, Batch, Open, L[8], L[8]])
    assert_type(nn.Conv1d(3, in_channels=3, out_channels=n_hidden)(signal), Tensor[NoTape, Batch, Open, Open])
    up = nn.ConvTranspose2d(2, 2, in_channels=3, out_channels=n_hidden)(img)
    assert_type(up, Tensor[NoTape, Batch, Open, Open, Open])

    attention = nn.MultiHeadAttention(4, n_embd)
    assert_type(attention(seq), Tensor[NoTape, Batch, Seq, L[16]])
    assert_type(attention(seq, seq, seq, causal=True), Tensor[NoTape, Batch, Seq, L[16]])
    block = nn.TransformerEncoderBlock(4, 32, n_embd)
    assert_type(block(seq, causal=True), Tensor[NoTape, Batch, Seq, L[16]])
    print(conv.shape, same.shape, up.shape)


if __name__ == "__main__":
    main()
