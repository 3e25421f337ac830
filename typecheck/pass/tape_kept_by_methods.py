"""Every kind of method keeps its receiver's tape, on every checker (issue #28): a reduction,
an element-wise op, a shape op, an index, an operator with an untraced operand on either side,
and the same inside a function generic over the tape. (mypy, Pyrefly and ty once lost a tape
``T`` written beside a TypeVarTuple in a method's ``self`` annotation, so ``x.sum()`` of an
untraced tensor passed ``backward()``.)"""

from typing import Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Model: ...


Traced = OwnedTape[Model]


def traced(x: Tensor[Traced, L[2], L[3]], w: Tensor[NoTape, L[2], L[3]], v: Tensor[NoTape, L[3]]) -> None:
    assert_type(x.sum(), Tensor[Traced])
    assert_type(x.mean(axis=0), Tensor[Traced, L[3]])
    assert_type(x.max(axis=-1, keepdims=True), Tensor[Traced, L[2], L[1]])
    assert_type(x.exp(), Tensor[Traced, L[2], L[3]])
    assert_type(x.relu(), Tensor[Traced, L[2], L[3]])
    assert_type(x.softmax(axis=-1), Tensor[Traced, L[2], L[3]])
    assert_type(x.T, Tensor[Traced, L[3], L[2]])
    assert_type(x.mT, Tensor[Traced, L[3], L[2]])
    assert_type(x.transpose(), Tensor[Traced, L[3], L[2]])
    assert_type(x.permute(1, 0), Tensor[Traced, L[3], L[2]])
    assert_type(x.expand_dims(0), Tensor[Traced, L[1], L[2], L[3]])
    assert_type(x[0], Tensor[Traced, L[3]])
    assert_type(x.to("numpy"), Tensor[Traced, L[2], L[3]])
    assert_type(-x, Tensor[Traced, L[2], L[3]])
    # An untraced operand on either side joins the traced tape.
    assert_type(x + w, Tensor[Traced, L[2], L[3]])
    assert_type(w + x, Tensor[Traced, L[2], L[3]])
    assert_type(x * v, Tensor[Traced, L[2], L[3]])
    assert_type(v * x, Tensor[Traced, L[2], L[3]])
    assert_type(x - 1.0, Tensor[Traced, L[2], L[3]])
    assert_type(2.0 * x, Tensor[Traced, L[2], L[3]])
    assert_type(x.add(w), Tensor[Traced, L[2], L[3]])
    assert_type(x @ v, Tensor[Traced, L[2]])
    assert_type(w.T @ x, Tensor[Traced, L[3], L[3]])
    assert_type((x * w).sum(), Tensor[Traced])
    assert_type(w.sum(), Tensor[NoTape])
    grads: sg.Gradients[Model] = (x + w).sum().backward()
    print(grads)


def generic(x: Tensor[T, L[2], L[3]], w: Tensor[NoTape, L[2], L[3]], v: Tensor[NoTape, L[3]]) -> Tensor[T]:
    assert_type(x.sum(), Tensor[T])
    assert_type(x.mean(axis=1), Tensor[T, L[2]])
    assert_type(x.tanh(), Tensor[T, L[2], L[3]])
    assert_type(x.T, Tensor[T, L[3], L[2]])
    assert_type(x + w, Tensor[T, L[2], L[3]])
    assert_type(w + x, Tensor[T, L[2], L[3]])
    assert_type(v * x, Tensor[T, L[2], L[3]])
    assert_type(x @ v, Tensor[T, L[2]])
    assert_type(w.T @ x, Tensor[T, L[3], L[3]])
    return (x * w - v).sum()
