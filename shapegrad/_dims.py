"""Symbolic dimensions."""

from __future__ import annotations

__all__ = ["Dim"]


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
