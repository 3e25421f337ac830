"""Weights transposed once for ``sg.compile``: a matrix that many products of one step read
transposed (a recurrent weight, whose input gradient ``g @ W.T`` is taken at every time
step) is copied transposed into contiguous memory once, and every product reads the copy.

A BLAS product with its second operand transposed runs another kernel than one with it in
row order, and at the small shapes of a recurrent cell that kernel can be much slower
(OpenBLAS, 32×384 by 384×128 in float32: about 1.5×); one copy is paid back after a few
products that read enough rows. A group is taken only where the products give the same
bits with the copy as without (checked on the recorded values, as fused loops are), and
where nothing writes the matrix between its first and last read.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ._compile_ir import Op, Ref

# A copy costs about as much as a few transposed products: a matrix fewer read is left.
MIN_PRODUCTS = 8
# Nor where the products read few rows in all: a copy moves every element of the matrix once,
# and what it saves grows with the rows multiplied (a decoding loop's one-row products with a
# tied embedding's transpose would pay a large copy for nothing).
MIN_ROWS = 256


def _transposed_matrix(op: Op) -> int | None:
    """The register of ``W`` where ``op`` transposes it: ``matrix_transpose(W)`` (a linear
    layer's backward rule), ``transpose(W, (1, 0))`` (``w.T`` of a 2-D tensor), ``W.transpose()``
    (the caller checks that ``W`` is 2-D)."""
    if op.kwargs or not op.args or not isinstance(op.args[0], Ref):
        return None
    matrix, rest = op.args[0], op.args[1:]
    if op.kind == "call" and op.fn is np.matrix_transpose and not rest:
        return matrix.index
    if op.kind == "call" and op.fn in (np.transpose, np.permute_dims) and rest in ((), ((1, 0),)):
        return matrix.index
    if op.kind == "method" and op.fn == "transpose" and rest in ((), ((1, 0),), (1, 0)):
        return matrix.index
    return None


def transposed_once(
    rec: Any, uses: dict[int, list[int]], writes: list[set[int] | None], excluded: set[int], given_back: set[int]
) -> tuple[dict[int, int], int]:
    """``{position: register}`` and how many products read those registers: at each position
    a transpose of a matrix read by products alone, the register of the group's first
    transpose (its own at the first, which the replay makes contiguous; the others reuse it).
    ``uses``: each register's readers (``register_uses``); ``writes``: per op, the memory its
    replay may write (None: anything); ``given_back``: the registers the replay gives back (a
    transpose given back stays a view of its matrix, as eager's is)."""
    ops: list[Op] = rec.ops
    groups: dict[int, list[int]] = {}
    for position, op in enumerate(ops):
        matrix = _transposed_matrix(op)
        out = op.outs
        if matrix is None or not isinstance(out, int) or position in excluded or out in given_back:
            continue
        plain: Any = rec.plain[matrix]
        if not (isinstance(plain, np.ndarray) and plain.ndim == 2 and cast(Any, plain).dtype.kind == "f"):
            continue
        if all(_second_operand(ops[use], out) for use in uses.get(out, [])) and uses.get(out):
            groups.setdefault(matrix, []).append(position)
    chosen: dict[int, int] = {}
    reading = 0
    for matrix, positions in groups.items():
        products = sum(len(uses[ops[p].outs]) for p in positions)
        last_read = uses[ops[positions[-1]].outs][-1]
        owner = rec.owner[matrix]
        if products < MIN_PRODUCTS or any(w is None or owner in w for w in writes[positions[0] : last_read + 1]):
            continue  # too few, or the matrix may be written before its last product (None: a host call)
        if sum(_rows(rec, ops, uses, ops[p].outs) for p in positions) < MIN_ROWS:
            continue
        copy = np.ascontiguousarray(rec.plain[ops[positions[0]].outs])
        if not all(_same_products(rec, ops, uses, ops[p].outs, copy) for p in positions):
            continue
        first = ops[positions[0]].outs
        for position in positions:
            chosen[position] = first
        reading += products
    return chosen, reading


def _second_operand(op: Op, index: int) -> bool:
    """Whether ``op`` is ``matmul(a, index)`` with ``index`` read there alone."""
    if op.kind != "call" or op.fn is not np.matmul or op.kwargs or len(op.args) != 2:
        return False
    first, second = op.args
    return isinstance(second, Ref) and second.index == index and not (isinstance(first, Ref) and first.index == index)


def _rows(rec: Any, ops: list[Op], uses: dict[int, list[int]], transposed: int) -> int:
    """How many rows the products reading ``transposed`` multiply, in all."""
    rows = 0
    for use in uses[transposed]:
        shape = getattr(rec._resolve(ops[use].args[0]), "shape", ())  # noqa: SLF001 -- the recorder's own
        rows += int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) >= 2 else 1
    return rows


def _same_products(rec: Any, ops: list[Op], uses: dict[int, list[int]], transposed: int, copy: Any) -> bool:
    """Whether every product reading ``transposed`` gives the same bits with ``copy``, on the
    recording's values (its results may have been written since: compared with the product
    taken again)."""
    view = rec.plain[transposed]
    for use in uses[transposed]:
        left = rec._resolve(ops[use].args[0])  # noqa: SLF001 -- the recorder's own
        if not np.array_equal(np.matmul(left, copy), np.matmul(left, view)):
            return False
    return True
