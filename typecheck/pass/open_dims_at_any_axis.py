"""An open dim meets a typed one at any axis (attack 15, F6): a residual around convolutions
built from plain ints (every dim but the batch open, or only the channels), a shifted sequence
(``h[:, 1:]``, open length) added to a typed one, on either side of the operator and in the
function forms. An open dim is never a proven mismatch, and the run time checks the sizes;
the result has the typed dims. Two typed dims that differ are still an error
(``typecheck/fail/open_dims_typed_mismatch.py``)."""

from typing import Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor, nn

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


class Block(nn.Module):
    """torchvision's BasicBlock with its widths from ``__init__`` ints: the convolutions'
    outputs are ``(B, Open, Open, Open)``, the shortcut typed."""

    def __init__(self, channels: int) -> None:
        self.conv1 = nn.Conv2d(3, padding=1, in_channels=channels, out_channels=channels)
        self.conv2 = nn.Conv2d(3, padding=1, in_channels=channels, out_channels=channels)

    def __call__(self, x: Tensor[T, Batch, L[16], L[32], L[32]]) -> Tensor[T, Batch, L[16], L[32], L[32]]:
        out = self.conv2(self.conv1(x).relu())
        assert_type(out, Tensor[T, Batch, Open, Open, Open])
        return (out + x).relu()


def open_channels(
    c: Tensor[NoTape, Batch, Open, L[32], L[32]], x: Tensor[NoTape, Batch, L[16], L[32], L[32]]
) -> Tensor[NoTape, Batch, L[16], L[32], L[32]]:
    assert_type(x * c, Tensor[NoTape, Batch, L[16], L[32], L[32]])
    return c + x


def shifted(h: Tensor[T, Batch, Seq, L[8]], nxt: Tensor[T, Batch, Seq, L[8]]) -> Tensor[T, Batch, Seq, L[8]]:
    tail = h[:, 1:]
    assert_type(tail, Tensor[T, Batch, Open, L[8]])
    assert_type(nxt - tail, Tensor[T, Batch, Seq, L[8]])
    return tail + nxt


def function_forms(a: Tensor[T, Batch, Open, L[8]], b: Tensor[T, Batch, Seq, L[8]], w: Tensor[NoTape, Batch, Seq, L[8]]) -> None:
    assert_type(sg.add(a, b), Tensor[T, Batch, Seq, L[8]])
    assert_type(sg.mul(b, a), Tensor[T, Batch, Seq, L[8]])
    assert_type(sg.sub(w, a), Tensor[T, Batch, Seq, L[8]])  # an untraced typed operand first
    assert_type(sg.maximum(sg.add(a, b), a), Tensor[T, Batch, Seq, L[8]])


def ranks(v: Tensor[NoTape, Open, L[4]], u: Tensor[NoTape, L[3], Open], m: Tensor[NoTape, L[3], L[4]]) -> None:
    assert_type(v + m, Tensor[NoTape, L[3], L[4]])
    assert_type(m / u, Tensor[NoTape, L[3], L[4]])
    assert_type(v < m, Tensor[NoTape, L[3], L[4]])


def main() -> None:
    x: Tensor[NoTape, Batch, L[16], L[32], L[32]] = sg.randn(Batch(2), 16, 32, 32)
    assert Block(16)(x).shape == (2, 16, 32, 32)
    h: Tensor[NoTape, Batch, Seq, L[8]] = sg.randn(Batch(2), Seq(5), 8)
    nxt: Tensor[NoTape, Batch, Seq, L[8]] = sg.randn(Batch(2), Seq(4), 8)  # the next 4 steps
    assert shifted(h, nxt).shape == (2, 4, 8)
    function_forms(h[:, 1:], nxt, nxt)


if __name__ == "__main__":
    main()
