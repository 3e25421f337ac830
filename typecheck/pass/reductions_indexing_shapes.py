"""Reductions at literal axes, indexing, permutes, squeeze/expand_dims: methods and functions alike."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def reductions(h: Tensor[NoTape, Batch, Seq, L[64]], fmap: Tensor[NoTape, Batch, L[16], L[8], L[8]]) -> None:
    pooled: Tensor[NoTape, Batch, L[64]] = h.mean(1)
    pooled = sg.mean(h, 1)
    per_token: Tensor[NoTape, Batch, Seq] = h.sum(axis=2)
    per_token = sg.max(h, -1)
    kept: Tensor[NoTape, Batch, L[1], L[64]] = h.mean(axis=1, keepdims=True)
    kept = sg.var(h, 1, keepdims=True)
    across: Tensor[NoTape, Batch, L[64]] = h.logsumexp(-2)
    gap: Tensor[NoTape, Batch, L[16]] = fmap.mean((2, 3))
    gap = sg.std(fmap, (2, 3))
    gap_kept: Tensor[NoTape, Batch, L[16], L[1], L[1]] = fmap.max((2, 3), keepdims=True)
    per_map: Tensor[NoTape, Batch, L[8], L[8]] = fmap.min(1)
    per_row: Tensor[NoTape, Batch, L[16], L[8]] = fmap.sum(3)
    total: Tensor[NoTape] = h.sum()
    print(pooled, per_token, kept, across, gap, gap_kept, per_map, per_row, total)


def indexing(h: Tensor[NoTape, Batch, Seq, L[64]]) -> None:
    first: Tensor[NoTape, Seq, L[64]] = h[0]
    cls: Tensor[NoTape, Batch, L[64]] = h[:, 0]
    feature: Tensor[NoTape, Batch, Seq] = h[:, :, 3]
    last: Tensor[NoTape, Batch, Seq] = h[..., -1]
    same: Tensor[NoTape, Batch, Seq, L[64]] = h[:]
    lifted: Tensor[NoTape, L[1], Batch, Seq, L[64]] = h[None]
    column: Tensor[NoTape, Batch, Seq, L[64], L[1]] = h[..., None]
    rows = h[1:3]  # (Open, Seq, 64): the first dim is open, the rest are kept
    narrowed: Tensor[NoTape, sg.Open, Seq, L[64]] = rows
    print(first, cls, feature, last, same, lifted, column, narrowed)


def shapes(img: Tensor[NoTape, Batch, L[3], L[8], L[4]], col: Tensor[NoTape, Batch, L[1]]) -> None:
    nhwc: Tensor[NoTape, Batch, L[8], L[4], L[3]] = img.permute(0, 2, 3, 1)
    nhwc = sg.permute(img, (0, 2, 3, 1))
    v: Tensor[NoTape, Batch] = col.squeeze(-1)
    v = sg.squeeze(col, -1)
    back: Tensor[NoTape, Batch, L[1]] = v.expand_dims(-1)
    back = sg.expand_dims(v, 1)
    front: Tensor[NoTape, L[1], Batch] = sg.expand_dims(v, 0)
    t: Tensor[NoTape, L[1], Batch] = col.transpose()
    dynamic = col.squeeze(any_axis=len(col.shape) - 1)  # a computed axis: open dims
    print(nhwc, v, back, front, t, dynamic)
