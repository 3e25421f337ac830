"""Bounded memo tables: the caches of checks and constants that hot paths consult (a cast's
passed targets, reshape's checked sizes, permute's checked orders, causal masks)."""

from __future__ import annotations

from typing import TypeVar

__all__ = ["remember"]

_K = TypeVar("_K")
_V = TypeVar("_V")


def remember(table: dict[_K, _V], key: _K, value: _V, limit: int) -> _V:
    """``table[key] = value``, the table emptied first when it holds ``limit`` entries (a
    program sees a few keys; one that sees many pays a recheck, never unbounded memory), and
    ``value`` returned.

    Examples:
        >>> table: dict[int, str] = {1: "a"}
        >>> remember(table, 2, "b", limit=1), table
        ('b', {2: 'b'})
    """
    if len(table) >= limit:
        table.clear()
    table[key] = value
    return value
