"""Symbolic dimensions: named dims, the open dim, product dims."""

from __future__ import annotations

from typing import Generic

from typing_extensions import TypeVarTuple

__all__ = ["Dim", "Open", "Prod"]

_Sizes = TypeVarTuple("_Sizes")


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
    """A size the type system could not compute: the result of ``reshape`` to ints, a
    convolution's spatial sizes, ``concat``'s joined axis, a bounded slice, ``sg.tensor`` of data.

    An open dim flows through later ops (``Tensor[T, Batch, Open] + bias`` is typed) but is
    not assignable to ``L[784]`` or to a named dim: leave it with :func:`shapegrad.cast`,
    which states the size and checks it at run time.

    Examples:
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> flat = sg.ones(2, 4, 4).reshape(2, 16)  # Tensor[NoTape, *tuple[Open, ...]]
        >>> sg.cast(flat, sg.Tensor[sg.NoTape, L[2], L[16]]).shape
        (2, 16)
    """

    __slots__ = ()


class Prod(Generic[*_Sizes]):
    """The product of the sizes ``_Sizes``: what ``flatten`` makes of ``(B, C, H, W)``
    (``Tensor[T, B, Prod[C, H, W]]``). A ``Linear[Prod[C, H, W], O]`` takes it as it is;
    there is no arithmetic, so ``Prod[L[28], L[28]]`` is not ``L[784]`` (use ``sg.cast``).
    At run time a product of literal sizes is checked as their product."""
