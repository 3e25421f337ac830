r"""An open dim meets a typed one at any axis, but two typed dims that differ are still a
static error beside it: a shifted sequence ``(B, Open, L[8])`` against ``(B, S, L[9])``, in
the operator and the function form, and a residual whose channels are open but whose height
differs; the comparisons' function forms alike (``sg.less``), and ``Open`` on both sides at
different axes beside a typed dim that differs.

runtime: add"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def shifted(h: Tensor[NoTape, Batch, Seq, L[8]], w: Tensor[NoTape, Batch, Seq, L[9]]) -> None:
    tail = h[:, 1:]
    tail + w  # E
    sg.add(tail, w)  # E
    sg.less(tail, w)  # E
    sg.greater_equal(w, tail)  # E


def residual(out: Tensor[NoTape, Batch, Open, L[16], L[16]], x: Tensor[NoTape, Batch, L[4], L[32], L[32]]) -> None:
    out + x  # E
    sg.add(x, out)  # E


def both_sides(x: Tensor[NoTape, Batch, Open, L[32]], y: Tensor[NoTape, Seq, L[16], Open]) -> None:
    x + y  # E
    sg.add(y, x)  # E


def main() -> None:
    h: Tensor[NoTape, Batch, Seq, L[8]] = sg.randn(Batch(2), Seq(5), 8)
    w: Tensor[NoTape, Batch, Seq, L[9]] = sg.randn(Batch(2), Seq(4), 9)
    shifted(h, w)


if __name__ == "__main__":
    main()
