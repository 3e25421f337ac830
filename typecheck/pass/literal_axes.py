"""Ops typed at a literal axis keep the dims they do not touch (issue #23, section 2):
argmax/argmin, topk and one_hot (at a literal count), split/chunk, norm, an embedding lookup
(gather) and attention, written
as a PyTorch user writes them, no casts."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Open, OwnedTape, Tensor


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


class Model(sg.nn.Module): ...


def main(logits: Tensor[NoTape, Batch, Seq, L[10]], ids: Tensor[NoTape, Batch, Seq]) -> None:
    predicted: Tensor[NoTape, Batch, Seq] = sg.argmax(logits, axis=-1)
    worst: Tensor[NoTape, Batch, Seq] = logits.argmin(axis=-1)
    kept: Tensor[NoTape, Batch, Seq, L[1]] = sg.argmax(logits, axis=-1, keepdims=True)
    first: Tensor[NoTape, Seq, L[10]] = sg.argmax(logits, axis=0)
    flat: Tensor[NoTape] = sg.argmax(logits)
    accuracy = (predicted == ids).astype("float32").mean().item()

    values, indices = sg.topk(logits, 3)  # a literal k is the new axis's size
    top: Tensor[NoTape, Batch, Seq, L[3]] = values
    where: Tensor[NoTape, Batch, Seq, L[3]] = indices
    k = 3
    some: Tensor[NoTape, Batch, Seq, Open] = logits.topk(int(k))[0]  # a plain int is Open
    classes: Tensor[NoTape, Batch, Seq, L[10]] = sg.one_hot(ids, 10)

    left, right = logits.chunk(2, axis=-1)
    halves: list[Tensor[NoTape, Batch, Seq, Open]] = [left, right]
    pieces: tuple[Tensor[NoTape, Open, Seq, L[10]], ...] = sg.split(logits, 2)
    rows: tuple[Tensor[NoTape, Batch, Open, L[10]], ...] = logits.split(4, axis=1)

    length: Tensor[NoTape, Batch, Seq] = sg.norm(logits, axis=-1)
    unit = logits / sg.norm(logits, axis=-1, keepdims=True)
    l1: Tensor[NoTape, Batch, Seq, L[1]] = logits.norm(1, axis=-1, keepdims=True)
    total: Tensor[NoTape] = logits.norm()

    table: Tensor[NoTape, L[100], L[16]] = sg.randn(100, 16)
    embedded: Tensor[NoTape, Batch, Seq, L[16]] = sg.gather(table, ids)
    print(
        worst,
        kept,
        first,
        flat,
        accuracy,
        top,
        where,
        some,
        classes,
        halves,
        pieces,
        rows,
        length,
        unit,
        l1,
        total,
        embedded,
    )


def attend(
    q: Tensor[OwnedTape[Model], Batch, L[4], Seq, L[8]],
    k: Tensor[OwnedTape[Model], Batch, L[4], Seq, L[8]],
    v: Tensor[OwnedTape[Model], Batch, L[4], Seq, L[16]],
) -> Tensor[OwnedTape[Model], Batch, L[4], Seq, L[16]]:
    return sg.nn.scaled_dot_product_attention(q, k, v)
