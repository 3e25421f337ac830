"""Results of ops at a literal axis say which dims they keep: a wrong one is reported."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def main(logits: Tensor[NoTape, Batch, Seq, L[10]], ids: Tensor[NoTape, Batch, Seq]) -> None:
    predicted: Tensor[NoTape, Batch] = sg.argmax(logits, axis=-1)  # E
    length: Tensor[NoTape, Batch, L[10]] = sg.norm(logits, axis=-1)  # E
    table: Tensor[NoTape, L[100], L[16]] = sg.randn(100, 16)
    embedded: Tensor[NoTape, Batch, Seq, L[32]] = sg.gather(table, ids)  # E
    top: Tensor[NoTape, Seq, Batch, sg.Open] = sg.topk(logits, 3)[0]  # E
    print(predicted, length, embedded, top)


def attend(
    q: Tensor[NoTape, Batch, Seq, L[8]], k: Tensor[NoTape, Batch, Seq, L[16]], v: Tensor[NoTape, Batch, Seq, L[16]]
) -> None:
    sg.nn.scaled_dot_product_attention(q, k, v)  # E
