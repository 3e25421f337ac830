"""A block whose widths come from ``__init__`` ints, written for "any size" (attack 15, F4):
``Open`` in a parameter means exactly ``Open`` (a size the types could not compute), so a
parameter that takes any size is spelled with a ``TypeVar`` per dim, which keeps the caller's
dims, or with ``Any``, which checks nothing there. Both take literal-sized and named inputs,
and a list of such blocks chains in a loop."""

from typing import Any, Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor, nn

T = TypeVar("T")
C = TypeVar("C")
H = TypeVar("H")
W = TypeVar("W")


class Batch(sg.Dim): ...


class Block(nn.Module):
    """Conv-ReLU with its channels from an int: any input channels, height and width."""

    def __init__(self, cin: int, cout: int) -> None:
        self.conv = nn.Conv2d(3, padding=1, in_channels=cin, out_channels=cout)

    def __call__(self, x: Tensor[T, Batch, C, H, W]) -> Tensor[T, Batch, Open, Open, Open]:
        return self.conv(x).relu()


def keep_dims(x: Tensor[T, Batch, C, H, W]) -> Tensor[T, Batch, C, H, W]:
    """Any sizes, the caller's dims kept (a TypeVar per dim)."""
    return (x - x.mean((-2, -1), keepdims=True)).relu()


def any_sizes(x: Tensor[T, Batch, Any, Any, Any]) -> Tensor[T, Batch, Any, Any, Any]:
    """Any sizes, unchecked (``Any``): the result is unchecked too."""
    return x * 2.0


def run(x: Tensor[NoTape, Batch, L[16], L[32], L[32]], blocks: list[Block]) -> Tensor[NoTape, Batch, Any, Any, Any]:
    assert_type(keep_dims(x), Tensor[NoTape, Batch, L[16], L[32], L[32]])
    assert_type(Block(16, 16)(x), Tensor[NoTape, Batch, Open, Open, Open])
    out: Tensor[NoTape, Batch, Any, Any, Any] = any_sizes(x)
    for block in blocks:
        out = block(out)
    return out


def loop_from_the_input(x: Tensor[NoTape, Batch, L[16], L[32], L[32]], blocks: list[Block]) -> None:
    """The PyTorch loop as written (``out = x``, then each block): left alone, ``out`` is the
    union of ``x``'s type and the blocks' result, from which pyright cannot solve the block's
    TypeVars (attack 15, F5); declared with ``Any`` at the dims the blocks change, it chains."""
    out: Tensor[NoTape, Batch, Any, Any, Any] = x
    for block in blocks:
        out = block(out)
    assert nn.GlobalAvgPool2d()(out).shape[1] == 8


def main() -> None:
    x: Tensor[NoTape, Batch, L[16], L[32], L[32]] = sg.randn(Batch(2), 16, 32, 32)
    assert run(x, [Block(16, 8), Block(8, 8)]).shape == (2, 8, 32, 32)
    loop_from_the_input(x, [Block(16, 8), Block(8, 8)])


if __name__ == "__main__":
    main()
