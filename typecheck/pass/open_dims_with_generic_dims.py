"""An open dim against a typed one where the dims are a generic function's type variables,
and a keepdims reduction over an open axis. The open dims' fast path (the function forms'
``OpenRightOf``/``OpenLeftOf`` protocols) once left a dim unsolved there
(``Tensor[T, B, A@_sg_open_right_of, D]``: a false error at the return), gave an untraced
tape to a traced result, or kept a ``1`` where the keepdims axis meets an open one."""

from typing import Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor

T = TypeVar("T")
B = TypeVar("B")
S = TypeVar("S")
D = TypeVar("D")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def generic(x: Tensor[T, B, S, D], o: Tensor[T, B, Open, D], u: Tensor[NoTape, B, S, D]) -> Tensor[T, B, S, D]:
    assert_type(sg.add(x, o), Tensor[T, B, S, D])
    assert_type(sg.sub(o, x), Tensor[T, B, S, D])
    assert_type(sg.sub(u, o), Tensor[T, B, S, D])  # an untraced typed operand first: the traced tape
    assert_type(sg.sub(x, sg.mean(x, axis=-1, keepdims=True)), Tensor[T, B, S, D])
    return sg.add(sg.add(x, o), o)


def keepdims_over_an_open_axis(
    o: Tensor[T, Batch, Open, L[8]], k: Tensor[T, Batch, Seq, Open], w: Tensor[NoTape, Batch, Open, L[8]]
) -> None:
    mean = sg.mean(o, axis=1, keepdims=True)
    assert_type(mean, Tensor[T, Batch, L[1], L[8]])
    assert_type(sg.sub(o, mean), Tensor[T, Batch, Open, L[8]])
    assert_type(sg.sub(mean, o), Tensor[T, Batch, Open, L[8]])
    assert_type(sg.div(k, sg.max(k, axis=-1, keepdims=True)), Tensor[T, Batch, Seq, Open])
    assert_type(sg.add(w, sg.mean(o, axis=1, keepdims=True)), Tensor[T, Batch, Open, L[8]])


def main() -> None:
    x: Tensor[NoTape, Batch, Seq, L[8]] = sg.randn(Batch(2), Seq(5), 8)
    o = sg.concat([x[:, :1], x[:, 1:]], axis=1)  # (Batch, Open, 8), 5 rows at run time
    assert generic(x, o, x).shape == (2, 5, 8)
    keepdims_over_an_open_axis(o, x[..., 1:], o)
