"""Scattered gradients for ``sg.compile``: a sum of arrays that are zero but for one slice
each is written slice by slice into one array, with no sums.

The gradient of a slice of a tensor (``gx[:, :n]``, ``gx[:, n:2 * n]``: a GRU's gates, a
transformer's ``q``, ``k``, ``v``) is an array of zeros with the slice's gradient written into
it, and the gradients of an input read through several slices are summed: per slice a
``zeros``, a write and an ``add`` over the whole array. Where the slices do not overlap, the
sum of ``a`` (zero outside the slices written so far) and ``z`` (zero outside its own) is
``a`` with ``z``'s slice written into it, so the replay writes each slice into ``a`` directly:
one ``zeros`` and one write per slice, and no sums. The values are the sum's bit for bit but
for the sign of a zero (``-0.0 + 0.0`` is ``0.0``; the write keeps ``-0.0``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._compile_ir import Op, Ref, mentions_ref

# A region is tracked as a boolean mask of the array's shape; larger arrays are left alone.
_MAX_MASKED = 1 << 22


class Scatter:
    """The rewrites found: ``dropped`` (positions of ``zeros`` the replay no longer makes),
    ``moved`` (a write's position -> the register it now writes into), ``aliased`` (a sum's
    position -> (its result, the register it is)), and ``gone`` (registers never made)."""

    __slots__ = ("dropped", "moved", "aliased", "gone")

    def __init__(self) -> None:
        self.dropped: set[int] = set()
        self.moved: dict[int, int] = {}
        self.aliased: dict[int, tuple[int, int]] = {}
        self.gone: set[int] = set()

    def positions(self) -> set[int]:
        """Every position the rewrites touch (left out of fused loops)."""
        return self.dropped | set(self.moved) | set(self.aliased)

    def write(self, position: int, op: Op) -> Op:
        """The op to generate at ``position``: a moved write aims at its new target."""
        target = self.moved.get(position)
        if target is None:
            return op
        moved = Op(op.kind, op.fn, (Ref(target), *op.args[1:]), op.kwargs, op.outs)
        moved.state = op.state
        return moved


def _is_zeros(op: Op, out: int) -> bool:
    """Whether ``op`` makes ``out`` all zeros: ``zeros``, or ``full`` with a zero (``sg.zeros``)."""
    if op.kind != "call" or op.outs != out or mentions_ref((op.args, op.kwargs)):
        return False
    if op.fn is np.zeros:
        return True
    if op.fn is np.full and len(op.args) == 2:
        value = op.args[1]
        return type(value) in (int, float) and value == 0
    return False


def _constant_write(op: Op, target: int) -> Any:
    """The index of ``target[index] = value`` when ``op`` is that write with a constant index."""
    if op.kind != "method" or op.fn != "__setitem__" or len(op.args) != 3 or op.kwargs:
        return None
    first, index = op.args[0], op.args[1]
    if not (isinstance(first, Ref) and first.index == target) or mentions_ref(index):
        return None
    return index


def _mask(shape: tuple[int, ...], index: Any) -> Any:
    mask = np.zeros(shape, dtype=bool)
    try:
        mask[index] = True
    except (IndexError, TypeError, ValueError):
        return None
    return mask


def scatter_writes(
    rec: Any, uses: dict[int, list[int]], last: list[int], escaping: set[int], excluded: set[int]
) -> Scatter:
    """The sums of slice-only arrays in ``rec`` that the replay writes slice by slice.

    A sum ``s = add(a, z)`` (either order) qualifies where ``z`` is made by ``zeros`` and
    written once, at a constant index, and read only by the sum; ``a`` is made by ``zeros``
    (or is such a sum's result) and only written at constant indices that do not overlap
    ``z``'s, then read by the sum and by nothing after it; all three have one shape and dtype,
    and none is given back. ``uses``: each register's readers (``register_uses``). Positions
    in ``excluded`` (copies elided, constants) stay."""
    ops: list[Op] = rec.ops
    found = Scatter()
    # a register zero outside its mask -> the mask (None: made by zeros, its writes not yet
    # masked; masks are made only for a sum's operands, and dropped once the sum took them)
    region: dict[int, Any] = {}
    ready: dict[int, int] = {}  # such a register -> the position from which it holds its array
    for position, op in enumerate(ops):
        out = op.outs
        if not isinstance(out, int) or position in excluded:
            continue
        if _is_zeros(op, out):
            plain: Any = rec.plain[out]
            if isinstance(plain, np.ndarray) and rec.owner[out] == out and 0 < plain.size <= _MAX_MASKED:
                region[out] = None
                ready[out] = position
            continue
        if not (op.kind == "call" and op.ufunc and op.fn is np.add and not op.kwargs and len(op.args) == 2):
            continue
        first, second = op.args
        if not (isinstance(first, Ref) and isinstance(second, Ref)) or first.index == second.index:
            continue
        if out in escaping or rec.owner[out] != out:
            continue
        for a, z in ((first.index, second.index), (second.index, first.index)):
            rewrite = _rewrite(rec, ops, uses, region, ready, last, escaping, excluded, position, a, z)
            if rewrite is None:
                continue
            written, mask = rewrite
            found.dropped.add(rec.made_by[z])
            found.moved[written] = a
            found.aliased[position] = (out, a)
            found.gone.add(z)
            region[out] = region.pop(a) | mask
            del region[z]
            ready[out] = position
            break
    return found


def _rewrite(
    rec: Any,
    ops: list[Op],
    uses: dict[int, list[int]],
    region: dict[int, Any],
    ready: dict[int, int],
    last: list[int],
    escaping: set[int],
    excluded: set[int],
    position: int,
    a: int,
    z: int,
) -> tuple[int, Any] | None:
    """(the position of ``z``'s one write, its mask) where ``add(a, z)`` at ``position`` can
    become that write aimed at ``a``; else None."""
    if a not in region or z not in region or a in escaping or z in escaping or last[a] != position:
        return None
    made = rec.made_by[z]
    z_uses = uses.get(z, [])
    if len(z_uses) != 2 or z_uses[1] != position or made in excluded:
        return None
    written = z_uses[0]
    index = _constant_write(ops[written], z)
    if index is None or written in excluded or ready[a] > written:
        return None
    plain_a, plain_z, plain_out = rec.plain[a], rec.plain[z], rec.plain[ops[position].outs]
    if not (plain_a.shape == plain_z.shape == plain_out.shape and plain_a.dtype == plain_z.dtype == plain_out.dtype):
        return None
    # a is only written (at constant indices) before the sum, and nothing reads it but the sum
    shape: tuple[int, ...] = plain_a.shape
    known = region[a]
    mask = np.zeros(shape, dtype=bool) if known is None else known.copy()
    for use in uses.get(a, []):
        if use == position:
            continue
        if use > position or use in excluded:
            return None
        other = _constant_write(ops[use], a)
        if other is None:
            return None
        written_mask = _mask(shape, other)
        if written_mask is None:
            return None
        mask |= written_mask
    mask_z = _mask(shape, index)
    if mask_z is None or (mask & mask_z).any():
        return None
    region[a] = mask
    return written, mask_z
