"""Broadcasting the way models are written: every binary op, comparison and function form."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


class Heads(sg.Dim): ...


class Model: ...


def idioms(
    tok: Tensor[OwnedTape[Model], Batch, Seq, L[32]],
    pos: Tensor[NoTape, Seq, L[32]],
    x: Tensor[NoTape, Batch, L[8]],
    bias: Tensor[NoTape, L[8]],
    scale: Tensor[OwnedTape[Model], L[8]],
    scalar: Tensor[NoTape],
    col: Tensor[NoTape, Batch, L[1]],
    scores: Tensor[OwnedTape[Model], Batch, Heads, Seq, Seq],
    keep: Tensor[NoTape, Batch, L[1], L[1], Seq],
    causal: Tensor[NoTape, Seq, Seq],
) -> None:
    h: Tensor[OwnedTape[Model], Batch, Seq, L[32]] = tok + pos
    h = pos + tok
    a: Tensor[NoTape, Batch, L[8]] = x + bias
    a = bias + x
    a = x - x.mean(axis=0, keepdims=True)
    a = x.mean(axis=0, keepdims=True) - x
    a = x / x.sum(axis=-1, keepdims=True)
    a = col * x
    a = x * col
    a = scalar * x
    a = x * scalar
    a = 2.0 * x - 1.0
    a = x**2 + 2**x
    a = sg.maximum(x, bias)
    a = sg.minimum(bias, x)
    a = sg.add(x, col)
    a = sg.sub(col, x)
    a = sg.mul(scalar, x)
    a = sg.div(x, 3.0)
    a = sg.pow(x, 2.0)
    traced: Tensor[OwnedTape[Model], Batch, L[8]] = x * scale
    traced = scale * x + bias
    masked: Tensor[OwnedTape[Model], Batch, Heads, Seq, Seq] = scores + keep
    masked = scores * causal
    flags: Tensor[NoTape, Batch, L[8]] = x > bias
    flags = x <= col
    flags = x == 0.0
    flags = x != scalar
    flags = sg.less(x, bias)
    flags = sg.greater_equal(col, x)
    print(h, a, traced, masked, flags)


def where_forms(
    scores: Tensor[OwnedTape[Model], Batch, Seq, Seq],
    causal: Tensor[NoTape, Seq, Seq],
    heads: Tensor[OwnedTape[Model], Batch, Heads, Seq, Seq],
    x: Tensor[NoTape, Batch, L[8]],
) -> None:
    m: Tensor[OwnedTape[Model], Batch, Seq, Seq] = sg.where(causal, scores, -1e9)
    m = sg.where(causal, -1e9, scores)
    h: Tensor[OwnedTape[Model], Batch, Heads, Seq, Seq] = sg.where(causal, heads, float("-inf"))
    picked: Tensor[NoTape, Batch, L[8]] = sg.where(x > 0, x, 0.0)
    ones: Tensor[NoTape, Batch, L[8]] = sg.where(x > 0, 1.0, 0.0)
    print(m, h, picked, ones)


def fused_ops(
    scores: Tensor[OwnedTape[Model], Batch, Heads, Seq, Seq],
    causal: Tensor[NoTape, Seq, Seq],
    h: Tensor[OwnedTape[Model], Batch, Seq, L[32]],
    gain: Tensor[NoTape, L[32]],
    shift: Tensor[NoTape, L[32]],
) -> None:
    weights: Tensor[OwnedTape[Model], Batch, Heads, Seq, Seq] = sg.softmax(scores, scale=0.125, mask=causal)
    normed: Tensor[OwnedTape[Model], Batch, Seq, L[32]] = sg.layer_norm(h, gain, shift)
    plain: Tensor[OwnedTape[Model], Batch, Seq, L[32]] = sg.layer_norm(h)
    print(weights, normed, plain)
