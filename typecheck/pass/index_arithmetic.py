"""Index arithmetic as in PyTorch code: ``idx // ncols`` and ``idx % ncols`` (a flat index
into a row and a column), ``pos // 2`` for a sinusoidal embedding's pairs, ``x % n`` on
floats; each keeps its operands' shape and tape, broadcasting as ``+`` does, with a Python
number on either side (``sg.floor_divide``/``sg.remainder`` and the methods too)."""

from typing import Literal as L

from typing_extensions import assert_type

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def main(
    idx: Tensor[NoTape, Batch, Seq],
    pos: Tensor[NoTape, Seq],
    ncols: Tensor[NoTape, Batch, L[1]],
    x: Tensor[OwnedTape[None], Batch, Seq],
    period: Tensor[OwnedTape[None], Seq],
) -> None:
    assert_type(idx // 2, Tensor[NoTape, Batch, Seq])
    assert_type(idx % 3, Tensor[NoTape, Batch, Seq])
    assert_type(pos // 2, Tensor[NoTape, Seq])
    assert_type(10 // pos, Tensor[NoTape, Seq])
    assert_type(10 % pos, Tensor[NoTape, Seq])
    row: Tensor[NoTape, Batch, Seq] = idx // ncols  # keepdims column on the right
    col: Tensor[NoTape, Batch, Seq] = idx % ncols
    assert_type(row * ncols + col, Tensor[NoTape, Batch, Seq])
    assert_type(idx // pos, Tensor[NoTape, Batch, Seq])  # a vector on the right
    assert_type(x % 3, Tensor[OwnedTape[None], Batch, Seq])
    assert_type(x // 0.5, Tensor[OwnedTape[None], Batch, Seq])
    assert_type(1.0 % x, Tensor[OwnedTape[None], Batch, Seq])
    assert_type(x % period, Tensor[OwnedTape[None], Batch, Seq])
    assert_type(x.remainder(period), Tensor[OwnedTape[None], Batch, Seq])
    assert_type(idx.floor_divide(2), Tensor[NoTape, Batch, Seq])
    assert_type(sg.floor_divide(idx, ncols), Tensor[NoTape, Batch, Seq])
    assert_type(sg.remainder(x, period), Tensor[OwnedTape[None], Batch, Seq])
    even: Tensor[NoTape, Seq] = (pos % 2) == 0
    print(even)
