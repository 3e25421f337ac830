"""Attention and a transformer block keep the sequence and feature dims."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad.nn import Embedding, MultiHeadAttention, TransformerEncoderBlock


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def main(ids: Tensor[NoTape, Batch, Seq]) -> None:
    embed = Embedding[L[100], L[32]]()
    attn = MultiHeadAttention[L[32]](num_heads=4)
    block = TransformerEncoderBlock[L[32]](num_heads=4, ff_dim=64)
    h: Tensor[NoTape, Batch, Seq, L[32]] = embed(ids)
    a: Tensor[NoTape, Batch, Seq, L[32]] = attn(h, causal=True)
    b: Tensor[NoTape, Batch, Seq, L[32]] = block(a)
    print(b)
