"""Nested function forms with the nested operand on either side keep exact types (and check in
linear time: ``tests/test_typing_speed.py``): a GELU with its constants on the left, a GRU's
state update, a layer norm, inside a function generic over its tape and dims."""

from typing import Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import NoTape, Tensor

T = TypeVar("T")
B = TypeVar("B")
D = TypeVar("D")


def gelu(x: Tensor[T, B, D]) -> Tensor[T, B, D]:
    inner = sg.mul(0.7978845608, sg.add(x, sg.mul(0.044715, sg.pow(x, 3))))
    return sg.mul(0.5, sg.mul(x, sg.add(1.0, sg.tanh(inner))))


def gru_update(z: Tensor[T, B, D], n: Tensor[T, B, D], h: Tensor[T, B, D]) -> Tensor[T, B, D]:
    return sg.add(sg.mul(sg.sub(1.0, z), n), sg.mul(z, h))


def layer_norm(x: Tensor[T, B, D], w: Tensor[NoTape, D], b: Tensor[NoTape, D]) -> Tensor[T, B, D]:
    centred = sg.sub(x, sg.mean(x, axis=-1, keepdims=True))
    return sg.add(sg.mul(sg.div(centred, sg.sqrt(sg.add(sg.var(x, axis=-1, keepdims=True), 1e-5))), w), b)


def right_nested(x: Tensor[T, B, D], w: Tensor[NoTape, D]) -> None:
    mean = sg.mean(x, axis=-1, keepdims=True)
    assert_type(sg.sub(w, sg.sub(w, sg.sub(w, x))), Tensor[T, B, D])
    assert_type(sg.sub(1.0, sg.sub(1.0, sg.sub(1.0, x))), Tensor[T, B, D])
    assert_type(sg.sub(mean, sg.sub(mean, x)), Tensor[T, B, D])
    assert_type(sg.maximum(0.0, sg.mul(2.0, x)), Tensor[T, B, D])


def main() -> None:
    x: Tensor[NoTape, L[4], L[8]] = sg.randn(4, 8)
    w, b = sg.ones(8), sg.zeros(8)
    assert_type(gelu(x), Tensor[NoTape, L[4], L[8]])
    assert_type(gru_update(sg.sigmoid(x), sg.tanh(x), x), Tensor[NoTape, L[4], L[8]])
    assert_type(layer_norm(x, w, b), Tensor[NoTape, L[4], L[8]])
    right_nested(x, w)
    print(gelu(x).shape, layer_norm(x, w, b).shape)


if __name__ == "__main__":
    main()
