"""Constant folding for ``sg.compile``: values a recording computes from no input are
computed once, when the recording is built, instead of at every replay.

A causal mask built in each attention block (``arange``, ``reshape``, ``less_equal``), a
``ones`` vector a bias gradient is a product with, an index list turned into an array: the
same arrays at every replay. An operation is folded where it is pure (NumPy math, an array
method, the backend's ``asarray``), reads only folded values, and its value is safe to share
between replays: nothing writes the memory it lives in and no result the replay gives back
is (or views) that memory. The replay then starts from the recorded value.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from ._compile_ir import refs
from ._compile_narrow import KERNEL_ROWS


def folded_positions(rec: Any, escaping: set[int], into: dict[int, int]) -> tuple[set[int], list[int]]:
    """The positions of the operations the replay need not run, and the registers among
    their results that the operations it runs read (to start the replay from)."""
    written: set[int] = set()
    written_arrays: list[Any] = []
    for op in rec.ops:
        if op.kind == "host":
            # an optimizer's update or an allreduce: it writes parameters, their state and
            # gradients (inputs of the recording), never an array the step made that no
            # tensor it gives back or rebinds holds (those escape)
            continue
        if op.kind == "kernel" and op.label in KERNEL_ROWS:
            continue  # the library's row-wise kernels write only what they make
        if op.kind == "check":
            continue
        for r in rec._writes(op.kind, op.fn, op.args, op.kwargs):  # noqa: SLF001 -- the recorder's own rule
            written.add(rec.owner[r])
            written_arrays.append(rec.plain[r])
    # written or given back by a way the owners do not show
    shared = written_arrays + [rec.plain[r] for r in range(len(rec.plain)) if rec.owner[r] in escaping]
    constant: set[int] = set()
    positions: set[int] = set()
    for position, op in enumerate(rec.ops):
        out = op.outs
        if op.kind not in ("call", "method", "attr") or not op.pure or not isinstance(out, int) or position in into:
            continue
        if isinstance(op.fn, types.MethodType) and getattr(op.fn, "__name__", "") != "asarray":
            continue
        if rec.made_by[out] != position or not all(r in constant for r in refs((op.args, op.kwargs), [])):
            continue
        owner = rec.owner[out]
        if owner in written or owner in escaping or not isinstance(rec.plain[out], np.ndarray):
            continue
        if owner != out and owner not in constant:
            continue  # a view of memory that is not folded
        value = rec.plain[out]
        if any(np.may_share_memory(value, w) for w in shared):
            continue
        constant.add(out)
        positions.add(position)
    read: dict[int, None] = {}  # in order of first use
    for position, op in enumerate(rec.ops):
        if position not in positions:
            read.update((r, None) for r in refs((op.args, op.kwargs), []) if r in constant)
    return positions, list(read)
