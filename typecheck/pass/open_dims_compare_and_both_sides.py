"""Open dims meet typed ones in the comparisons' function forms as in their operators (attack
16): ``sg.less(conv_out, typed)`` of a convolution built from plain ints, either order, every
comparison, typed as ``conv_out < typed``. And ``Open`` on both sides at different axes of the
last two (``(B, Open, L[32]) + (B, L[16], Open)``): each axis takes its typed dim, in the
operators and the function forms. Two typed dims that differ are still an error
(``typecheck/fail/open_dims_typed_mismatch.py``)."""

from typing import Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


def compare_functions(
    conv_out: Tensor[T, Batch, Open, Open, Open], typed: Tensor[T, Batch, L[16], L[32], L[32]]
) -> Tensor[NoTape, Batch, L[16], L[32], L[32]]:
    assert_type(conv_out < typed, Tensor[NoTape, Batch, L[16], L[32], L[32]])
    assert_type(sg.less(conv_out, typed), Tensor[NoTape, Batch, L[16], L[32], L[32]])
    assert_type(sg.greater(typed, conv_out), Tensor[NoTape, Batch, L[16], L[32], L[32]])
    assert_type(sg.less_equal(conv_out, typed), Tensor[NoTape, Batch, L[16], L[32], L[32]])
    assert_type(sg.greater_equal(typed, conv_out), Tensor[NoTape, Batch, L[16], L[32], L[32]])
    assert_type(sg.equal(conv_out, typed), Tensor[NoTape, Batch, L[16], L[32], L[32]])
    assert_type(sg.not_equal(typed, conv_out), Tensor[NoTape, Batch, L[16], L[32], L[32]])
    return sg.less(conv_out, typed)


def shifted(a: Tensor[T, Batch, Open, L[8]], b: Tensor[NoTape, Batch, L[4], L[8]]) -> None:
    assert_type(sg.less(a, b), Tensor[NoTape, Batch, L[4], L[8]])
    assert_type(sg.greater(b, a), Tensor[NoTape, Batch, L[4], L[8]])


def both_sides(
    x: Tensor[T, Batch, Open, L[32]], y: Tensor[T, Batch, L[16], Open]
) -> Tensor[T, Batch, L[16], L[32]]:
    assert_type(x + y, Tensor[T, Batch, L[16], L[32]])
    assert_type(y * x, Tensor[T, Batch, L[16], L[32]])
    assert_type(sg.add(x, y), Tensor[T, Batch, L[16], L[32]])
    assert_type(sg.sub(y, x), Tensor[T, Batch, L[16], L[32]])
    assert_type(x < y, Tensor[NoTape, Batch, L[16], L[32]])
    assert_type(sg.less(y, x), Tensor[NoTape, Batch, L[16], L[32]])
    return x + y


def main() -> None:
    c, h, w = (int(n) for n in "16 32 32".split())  # sizes from a config: open dims
    conv_out: Tensor[NoTape, Batch, Open, Open, Open] = sg.randn(Batch(2), c, h, w)
    typed: Tensor[NoTape, Batch, L[16], L[32], L[32]] = sg.randn(Batch(2), 16, 32, 32)
    assert compare_functions(conv_out, typed).shape == (2, 16, 32, 32)
    x: Tensor[NoTape, Batch, Open, L[32]] = sg.randn(Batch(2), c, 32)
    y: Tensor[NoTape, Batch, L[16], Open] = sg.randn(Batch(2), 16, w)
    assert both_sides(x, y).shape == (2, 16, 32)


if __name__ == "__main__":
    main()
