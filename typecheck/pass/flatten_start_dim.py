"""PyTorch's ``x.flatten(1)`` (a CNN head) is shapegrad's ``x.flatten()``: ``start_dim`` 1 may
be written, and types the same; any other start dim is a pyright error (and a ``ShapeError``
at run time naming ``x.reshape(-1)`` for PyTorch's ``x.flatten()``)."""

from typing import Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import Prod, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


def head(x: Tensor[T, Batch, L[16], L[4], L[4]]) -> Tensor[T, Batch, Prod[L[16], L[4], L[4]]]:
    assert_type(x.flatten(1), Tensor[T, Batch, Prod[L[16], L[4], L[4]]])
    assert_type(sg.flatten(x, 1), Tensor[T, Batch, Prod[L[16], L[4], L[4]]])
    return x.flatten()


def main() -> None:
    x: Tensor[sg.NoTape, Batch, L[16], L[4], L[4]] = sg.randn(Batch(2), 16, 4, 4)
    assert head(x).shape == (2, 256)
