"""Symbolic dimensions: named dims, the open dim, product dims."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Generic, Literal, get_args, get_origin

from typing_extensions import TypeVar, TypeVarTuple

__all__ = ["Dim", "Half", "LiteralSize", "Open", "Prod", "Sum", "Twice", "literal_size"]

_Sizes = TypeVarTuple("_Sizes")
_A = TypeVar("_A")
_B = TypeVar("_B")


class Dim(int):
    """A named dimension: subclass it once per meaning, use the class in annotations.

    At run time an instance is just an int, so ``Batch(32)`` can be passed wherever a size
    is expected, while ``Tensor[NoTape, Batch, L[784]]`` states that the first axis is the
    batch axis. Checked functions bind every ``Batch`` in one call to the same size.

    Examples:
        >>> class Batch(Dim): ...
        >>> Batch(32) + 1
        33
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({int(self)})"


class Open(Dim):
    """A size the type system could not compute: a ``reshape`` to computed ints (``-1``, a
    variable), a convolution's spatial sizes, the joined axis of a ``concat`` of a list, a
    bounded slice, ``sg.tensor`` of data, a layer's size given as a plain int (``Linear(n, m)``).

    An open dim flows through later ops (``Tensor[T, Batch, Open] + bias`` is typed) but is
    not assignable to ``L[784]`` or to a named dim: leave it with :func:`shapegrad.cast`,
    which states the size and checks it at run time.

    Examples:
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> flat = sg.ones(2, 4, 4).reshape(2, -1)  # Tensor[NoTape, *tuple[Open, ...]]
        >>> sg.cast(flat, sg.Tensor[sg.NoTape, L[2], L[16]]).shape
        (2, 16)
    """

    __slots__ = ()


# The int literals a creation call keeps as sizes. Pyright widens a literal to ``int`` when it
# solves a TypeVar from it, except when the TypeVar's bound is a union of literals; checking a
# plain ``int`` against that bound costs time in proportion to the union's length, so it holds
# the sizes models are written with (0-32, the powers of two, the classic widths and
# vocabularies), not every int. Another literal, or an int variable, gives an ``Open`` dim.
LiteralSize = Literal[
    0,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    8,
    9,
    10,
    11,
    12,
    13,
    14,
    15,
    16,
    17,
    18,
    19,
    20,
    21,
    22,
    23,
    24,
    25,
    26,
    27,
    28,
    29,
    30,
    31,
    32,
    40,
    48,
    56,
    64,
    65,
    80,
    84,
    96,
    100,
    112,
    120,
    128,
    160,
    192,
    200,
    224,
    256,
    320,
    384,
    400,
    448,
    500,
    512,
    640,
    768,
    784,
    1000,
    1024,
    1280,
    1536,
    2048,
    3072,
    3136,
    4096,
    8192,
    9216,
    16384,
    32000,
    32768,
    50257,
    50304,
    65536,
]


class Prod(int, Generic[*_Sizes]):
    """The product of the sizes ``_Sizes``: what ``flatten`` makes of ``(B, C, H, W)``
    (``Tensor[T, B, Prod[C, H, W]]``). A ``Linear[Prod[C, H, W], O]`` takes it as it is;
    there is no arithmetic, so ``Prod[L[28], L[28]]`` is not ``L[784]`` (use ``sg.cast``).
    At run time a product of literal sizes is checked as their product."""


class Sum(int, Generic[_A, _B]):
    """The sum of the sizes ``_A`` and ``_B``: what a two-way ``concat`` of a tuple makes of
    the joined axis (``sg.concat((x, skip), axis=1)`` of ``(B, A, H, W)`` and ``(B, C, H, W)``
    is ``Tensor[T, B, Sum[A, C], H, W]``). A ``Linear[Sum[A, B], O]`` or a
    ``Conv2d[Sum[A, C], O]`` takes it as it is; there is no arithmetic, so
    ``Sum[L[64], L[32]]`` is not ``L[96]`` (use ``sg.cast``). At run time a sum of literal
    sizes is checked as the number."""


class Half(int, Generic[_A]):
    """Half the size ``_A``, rounded down (PyTorch's pooling by 2 floors: 7 -> 3): what
    ``MaxPool2d(2)`` and ``AvgPool2d(2)`` make of the height and width. At run time
    ``Half[L[7]]`` is checked as 3."""


class Twice(int, Generic[_A]):
    """Twice the size ``_A``: what an up-sampling ``ConvTranspose2d[I, O, Twice]`` (stride 2,
    ``2·padding = dilation·(kernel - 1) + output_padding - 1``, such as kernel 4, stride 2,
    padding 1) makes of the height and width. At run time ``Twice[L[7]]`` is checked as 14."""


_ARITHMETIC: dict[Any, Callable[[list[int]], int]] = {
    Prod: math.prod,
    Sum: sum,
    Half: lambda sizes: sizes[0] // 2,
    Twice: lambda sizes: sizes[0] * 2,
}


def literal_size(arg: Any) -> int | None:
    """The number a size type stands for, where it is made of literals: ``L[784]``,
    ``Prod[L[16], L[7], L[7]]`` (784), ``Sum[L[64], L[32]]`` (96), ``Half[L[7]]`` (3, floor
    as PyTorch's pooling), ``Twice[L[7]]`` (14); ``None`` for anything else (a named or open
    dim, arithmetic over one). The run-time checks compare sizes through it."""
    origin = get_origin(arg)
    if origin is Literal:
        (size,) = get_args(arg)
        return int(size)
    rule = _ARITHMETIC.get(origin)
    if rule is None:
        return None
    sizes = [n for part in get_args(arg) if (n := literal_size(part)) is not None]
    return rule(sizes) if len(sizes) == len(get_args(arg)) else None
