"""Writes the typed op surface from the table in ``_opspec``.

    python shapegrad/_typegen.py          # rewrite the generated blocks
    python shapegrad/_typegen.py --check  # exit 1 when a block is stale (run by the tests)

Two wholly generated modules, nothing in them edited by hand:

- ``_function_ops.py``: the function forms of the table's ops (``sg.add``, ``sg.mean``, ...):
  each its overloads and a one-line implementation that calls the untyped implementation of
  the same name in its op module (signature and docstring read from there).
- ``_tensor_ops.py``: the method forms, the class ``TensorOps`` that ``Tensor`` inherits: each
  method its overloads and a one-line implementation that calls the implementation.
"""

from __future__ import annotations

import ast
import functools
import itertools
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

if __package__:
    from ._opspec import (
        BROADCAST,
        GETITEM,
        HAND_KINDS,
        NARROWED_SLICES,
        OPEN_DIM,
        OPS,
        OUTER,
        REDUCE_AXES,
        SIGNATURE_METHODS,
        SQUEEZE_AXES,
        OpSpec,
    )
else:  # run as a script (python shapegrad/_typegen.py): works while the package cannot import
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _opspec import (
        BROADCAST,
        GETITEM,
        HAND_KINDS,
        NARROWED_SLICES,
        OPEN_DIM,
        OPS,
        OUTER,
        REDUCE_AXES,
        SIGNATURE_METHODS,
        SQUEEZE_AXES,
        OpSpec,
    )

__all__ = ["check", "functions_module", "main", "methods_module", "write"]

PACKAGE = Path(__file__).resolve().parent
METHODS_MODULE = "_tensor_ops"
FUNCTIONS_MODULE = "_function_ops"
CREATION_MODULE = "_creation_ops"
# How _tensor_ops.py refers to the modules of the function forms (bound by _tensor.py, once
# the op modules can import).
ALIASES = {
    "ops.elementwise": "_ew",
    "ops.activations": "_act",
    "ops.math": "_math",
    "ops.reductions": "_red",
    "ops.order": "_order",
    "ops.shape": "_shape",
    "ops.indexing": "_index",
    "ops.linalg": "_linalg",
    "ops.creation": "_creation",
}

# One tape variable for every operand and the result: ``Tensor`` is covariant in its tape and
# ``NoTape`` is its bottom, so an untraced operand joins a traced one without an overload per
# combination. Two models' tapes join into a union (``OwnedTape[A] | OwnedTape[B]``), which
# ``backward()`` and every declared tape refuse. One case pyright does not solve: an untraced
# operand first and a caller's tape variable second (``sg.sub(w, x)`` inside a function
# generic over ``T``: ``T`` solved to ``Never`` is not widened to that ``T``). Each rule ends
# with a copy of its patterns for that case (``UNTRACED_FIRST``), after every other overload,
# so a call that matches earlier never tries them. (A function form's left union overloads,
# ``_common``, have their untraced copy first instead: pyright does not flag a narrower union
# before its twin.)
UNTRACED_FIRST = "NoTape"
Sig = tuple[str, list[str], str]  # (type of the first operand, the other parameters, result)


class Deprecated(str):
    """A result type whose overload is ``@deprecated(message)``: a pattern that NumPy accepts
    but that is almost always a mistake, reported in strict mode with our message."""

    message: str

    def __new__(cls, result: str, message: str) -> Deprecated:
        made = super().__new__(cls, result)
        made.message = message
        return made


def _outer(rows: Iterable[tuple[str, str, str, str, str]] = OUTER) -> Iterator[tuple[str, str, str]]:
    """OUTER's patterns as (left, right, result), a guard's result marked Deprecated."""
    for _, left, right, result, message in rows:
        yield left, right, Deprecated(result, message) if message else result


OPEN_DIMS = "*tuple[Open, ...]"


def tensor(tape: str, dims: str) -> str:
    """``Tensor[tape, dims]`` (``Tensor[tape]`` for rank 0)."""
    return f"Tensor[{tape}, {dims}]" if dims else f"Tensor[{tape}]"


# --------------------------------------------------------------------------- shape rules
def _broadcast(form: str) -> tuple[tuple[str, str, str, str], ...]:
    """The table's patterns in the order ``form`` tries them. An operator evaluates its
    operands once, whatever the order, and puts "same shape" first: it is the one an open rank
    (``Tensor[Any, *tuple[Any, ...]]``) matches without ``Unknown`` dims (pyright splits an
    unbounded tuple into ``*S, N`` as ``*tuple[Unknown, ...], Any``). A function form keeps
    the table's order, the bias first, for nesting."""
    if form == "function":
        return BROADCAST
    return tuple(sorted(BROADCAST, key=lambda p: p[1] != p[2]))


def _joined_tape(form: str) -> str:
    """The tape of both operands and the result in a join op's typed patterns: a function
    form's own ``T``; a method's the class's own tape parameter (``Tape_``), which is bound
    to the receiver's tape before the operand is checked, on every checker. With a method
    ``T`` (``self: Tensor[T, ...]``) mypy and pyright bind it from ``self`` first too, but
    Pyrefly and ty solve it from both operands, so ``x + y`` of two models' tapes joined
    into a union there instead of being refused. An untraced receiver (``Tape_`` bound to
    ``Never``) with a traced operand takes the untraced-first copies at the end."""
    return "Tape_" if form == "method" else "T"


# The kinds whose method form types its patterns with the receiver's tape.
_RECEIVER_TAPE = {"binary", "matmul"}


# A function form's first overloads: the common patterns as four overloads in which one
# operand has a single pattern and the other a union of the shapes that broadcast against it.
# Pyright evaluates a nested argument once per expected type, and each overload it tries
# before the match gives the argument an expected type of its own, which the nested call then
# passes down to its own arguments (pyright keeps 8 per expression); so a nested operand that
# matches within the first two overloads costs one evaluation per level, a later one a factor
# per level. The nested operand is almost always the left one (``sg.sub(sg.add(x, w), m)``):
# a same-shape operand, a bias, a keepdims reduction and a number on the right match at the
# first or second try. A vector, a keepdims reduction or a rank-0 tensor on the left follow,
# untraced first (a parameter, ``sg.sub(w, x)``): pyright solves ``T`` from an untraced
# (``Never``) first operand and does not widen it to a caller's tape variable after (see
# ``UNTRACED_FIRST``).
COMMON_RIGHT = ("*S, L[1]", "N")  # keepdims on the last axis, a bias
COMMON_LEFT = ("*S, L[1]", "N", "")  # keepdims on the last axis, a vector, rank 0


def _common(other: str) -> Iterator[Sig]:
    """The protocol overloads (``shapegrad/_broadcast.py``: the right operand's first, then
    the left's), then the union overloads (see ``COMMON_RIGHT``), the same shape (or a
    number) on the right second, and a number on the left."""
    yield "Operand", [f"{other}: RightOf[Operand, Result]"], "Result"
    yield "LeftOfBroadcast[Operand, Result]", [f"{other}: Operand"], "Result"
    # ``Open`` against a typed dim (``_open_protocol``), the typed operand the receiver
    yield "Operand", [f"{other}: OpenRightOf[Operand, Result]"], "Result"
    yield "OpenLeftOf[Operand, Result]", [f"{other}: Operand"], "Result"
    right = " | ".join(tensor("T", dims) for dims in COMMON_RIGHT)
    yield "Tensor[T, *S, N]", [f"{other}: {right}"], "Tensor[T, *S, N]"
    yield "Tensor[T, *S]", [f"{other}: Tensor[T, *S] | float"], "Tensor[T, *S]"
    for tape in (UNTRACED_FIRST, "T"):
        left = " | ".join(tensor(tape, dims) for dims in COMMON_LEFT)
        yield left, [f"{other}: Tensor[T, *S, N]"], "Tensor[T, *S, N]"
    yield "float", [f"{other}: Tensor[T, *S]"], "Tensor[T, *S]"  # a Python number on the left, as NumPy


def _open_protocol(name: str, receiver_side: int, other: str) -> Iterator[tuple[str, str, str, str, str]]:
    """The overloads of ``name``, the method of ``_broadcast.OpenRightOf`` (``receiver_side``
    1: the receiver is the right operand) or ``OpenLeftOf`` (0: the left): ``Open`` against a
    typed dim at some of the last four axes.

    A binary function form tries them right after ``RightOf`` and ``LeftOfBroadcast``: a
    nested call is evaluated again for every overload tried before the match, and a
    protocol's parameter hands it the same few expected types at every level, where each
    plain overload hands it one more (after the table's plain overloads, ``sg.add(sg.add(x,
    o), o)`` of an open ``o`` took about 10 s, one level more over 300 s; now 8 levels take
    under 2 s, ``tests/test_typing_speed.py``). What neither protocol matches falls through to
    the plain overloads, which give the same results.

    Two rules of pyright 1.1.414 shape them (found by calls, not assignments): a dim bound by
    the other operand alone is left unsolved where the caller's dims are type variables
    (``Tensor[T, B, N@_sg_open_right_of]``), so the receiver binds every dim of the first
    rows; and the result's tape is the receiver's, an untraced receiver's ``Never`` with a
    traced operand, so a traced receiver must be tried first (the right operand's protocol
    comes first and holds the open receivers too, last; an untraced typed first operand with
    a traced open second reaches the untraced-first copies at the end of the plain overloads).
    In order: a keepdims receiver (``L[1]``) meeting an operand open there (the result open
    there: ``x - x.mean(axis=1, keepdims=True)`` of an open ``x``); a typed receiver of the
    last four, three, two axes, the last axis, each with a union of every operand open at some
    of its axes (the result the receiver's dims); for the right operand's protocol, the
    table's patterns with the operand's ``L[1]``, then an open receiver with a typed operand
    (``OPEN_DIM``'s and ``OPEN_AXES``' patterns, the result the operand's dims)."""
    for receiver, others, result in _open_rows(receiver_side):
        yield name, tensor("U", receiver), other, " | ".join(tensor("U", o) for o in others), tensor("U", result)


def _open_variants(typed: Sequence[str], kept: Sequence[int] = ()) -> list[str]:
    """Every operand of the dims ``typed`` (the last axes, after ``*S``) open at some of them,
    always at the positions ``kept``: each axis ``Open`` or its own dim, not all their own."""
    choices = [("Open",) if i in kept else ("Open", dim) for i, dim in enumerate(typed)]
    return ["*S, " + ", ".join(dims) for dims in itertools.product(*choices) if "Open" in dims]


def _open_rows(receiver_side: int) -> list[tuple[str, list[str], str]]:
    """``_open_protocol``'s patterns: (the receiver, the other operand's union, the result)."""
    names = ("C", "K", "A", "N")  # the last four axes' dims, outermost first
    rows: list[tuple[str, list[str], str]] = []  # (receiver, the other operand's union, result)
    # A keepdims receiver (``L[1]`` at one of the last four axes, or the last two) meets an
    # operand open there: the result is open there. Every dim bound by the receiver: a dim
    # bound by the operand alone is left unsolved with a caller's type-variable dims.
    for span in range(len(names), 0, -1):
        typed = list(names[len(names) - span :])
        for kept in ([0, 1], [0]) if span == 2 else ([0],):
            mine = ", ".join("L[1]" if i in kept else dim for i, dim in enumerate(typed))
            result = ", ".join("Open" if i in kept else dim for i, dim in enumerate(typed))
            rows.append((f"*S, {mine}", _open_variants(typed, kept), f"*S, {result}"))
    for span in range(len(names), 0, -1):
        typed = names[len(names) - span :]
        receiver = "*S, " + ", ".join(typed)
        rows.append((receiver, _open_variants(typed), receiver))
    if receiver_side == 1:  # an open receiver with a typed operand, after every typed receiver
        for row in [*_patterns(BROADCAST), *_patterns(OPEN_DIM)]:
            mine, theirs = row[receiver_side], row[1 - receiver_side]
            if "L[1]" in theirs and "L[1]" not in mine and mine.count(",") == theirs.count(","):
                rows.append((mine, [theirs], row[2]))
        for row in [*_patterns(OPEN_DIM), *OPEN_AXES]:
            mine, theirs = row[receiver_side], row[1 - receiver_side]
            if "Open" in mine and "Open" not in theirs and "L[1]" not in mine + theirs:
                rows.append((mine, [theirs], row[2]))
    return rows


# The open protocols' overloads pyright calls overlapped by an earlier one (0-based): a receiver
# ``*S`` then more dims after one with more dims, and a keepdims pattern after another of its
# rank; pyright reads the TypeVarTuple as covering the shorter rank (as for flatten), and each
# is reached (tests/test_typing_speed.py, typecheck/pass/open_dims_at_any_axis.py).
_PROTOCOL_OVERLAP = "  # pyright: ignore[reportOverlappingOverload] -- a shorter receiver after a longer one"
_PROTOCOL_OVERLAPPING: dict[str, set[int]] = {"_sg_open_right_of": {6, 7, 8, 13}, "_sg_open_left_of": {6, 7, 8}}


def broadcast_protocol_methods() -> list[str]:
    """The methods of ``Tensor`` that the protocols of ``_broadcast.py`` match, seen by the
    type checker only, from the same patterns as the union overloads above (a pattern added
    to ``COMMON_RIGHT`` or ``COMMON_LEFT`` reaches both): the receiver is one operand, the
    argument the other, and the receiver's tape is the result's."""
    right = " | ".join(tensor("U", dims) for dims in ("*S, N", *COMMON_RIGHT, ""))
    left = " | ".join(tensor("U", dims) for dims in COMMON_LEFT)
    signatures = (
        ("_sg_right_of", "Tensor[U, *S, N]", "left", f"Tensor[U, *S, N] | {left} | float", "Tensor[U, *S, N]"),
        ("_sg_right_of", "Tensor[U]", "left", "Tensor[U] | float", "Tensor[U]"),
        ("_sg_left_of_broadcast", "Tensor[U, *S, N]", "right", f"{right} | float", "Tensor[U, *S, N]"),
        ("_sg_left_of_broadcast", "Tensor[U]", "right", "Tensor[U] | float", "Tensor[U]"),
        *_open_protocol("_sg_open_right_of", 1, "left"),
        *_open_protocol("_sg_open_left_of", 0, "right"),
    )
    lines = [
        "    # The broadcasting patterns of a binary function form's first overloads, seen by the",
        "    # type checker only (``shapegrad/_broadcast.py`` says why).",
        "    if TYPE_CHECKING:",
    ]
    for name, group in itertools.groupby(signatures, key=lambda signature: signature[0]):
        side = ""
        for index, (_, receiver, side, other, result) in enumerate(group):
            suffix = _PROTOCOL_OVERLAP if index in _PROTOCOL_OVERLAPPING.get(name, ()) else ""
            lines.append("        @overload")
            lines.append(f"        def {name}(self: {receiver}, {side}: {other}, /) -> {result}: ...{suffix}")
        lines.append(f"        def {name}(self, {side}: Any, /) -> Any: ...")
    return lines


# The table's patterns the union overloads cover (left, right): a function form leaves them
# out, and their untraced-first copies.
_COVERED: set[tuple[str, str]] = {
    ("*S, N", "N"),
    ("*S, N", "*S, L[1]"),
    ("*S", "*S"),
    ("N", "*S, N"),
    ("*S, L[1]", "*S, N"),
}


def binary(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    if form == "function":
        yield from _function_binary(other)
        return
    tape = _joined_tape(form)
    for left, right, result in _open_left_first(_patterns(_broadcast(form))):
        b = tensor(tape, right)
        if left == right == "*S":  # a Python number on either side, as NumPy
            b += " | float"
        yield tensor(tape, left), [f"{other}: {b}"], tensor(tape, result)
    # The untraced-first copies (an untraced receiver, a traced operand) of the broadcast
    # patterns come before the outer and open patterns; the same-shape copy stays last (see
    # ``_untraced_first``).
    patterns = _patterns(BROADCAST)
    same = [p for p in patterns if p[0] == p[1] == "*S"]
    yield from _untraced_first(_open_left_first([p for p in patterns if p not in same]), other)
    rest = [*_outer(), *_patterns(OPEN_DIM), *OPEN_AXES, *OPEN_RANK[1:]]  # the open left came first
    for left, right, result in rest:
        yield tensor(tape, left), [f"{other}: {tensor(tape, right)}"], _typed(tensor(tape, result), result)
    yield from _untraced_first([*rest, *same], other)


def _function_binary(other: str) -> Iterator[Sig]:
    """A function form's overloads: the common patterns (``_common``), then each group of the
    table's patterns with its untraced-first copies before it. A joined ``T`` that pyright
    solves from an untraced first operand stays ``Never`` when the second is a caller's tape
    variable (``sg.sub(pos_table, x)`` of a ``Tensor[T, ...]`` was ``Tensor[Never, ...]``,
    untraced): the copy, whose second operand's tape is the result's, must match first."""
    yield from _common(other)
    patterns = _patterns(BROADCAST)
    same = [p for p in patterns if p[0] == p[1] == "*S"]
    table = [p for p in patterns if p not in same and p[:2] not in _COVERED]
    rest = [*_outer(), *_patterns(OPEN_DIM), *OPEN_RANK]
    for group in (table, rest):
        yield from _untraced_first(group, other)
        for left, right, result in group:
            yield tensor("T", left), [f"{other}: {tensor('T', right)}"], _typed(tensor("T", result), result)
    # ``Open`` against a typed dim at any of the last four axes (``_open_axes``): first a
    # protocol (``OpenRightOf``, the right operand's tape the result's), which takes an
    # untraced first operand with a traced second (the plain patterns after it would solve
    # ``T`` as ``Never`` from the first) but, in pyright 1.1.414, not two operands of a
    # caller's tape variable; then the plain patterns, one tape or an untraced second
    # operand. (No untraced-first copies: 26 overloads less for every call to try.) The
    # same-shape copy stays last, for the message (``_untraced_first``).
    for left, right, result in OPEN_AXES:
        yield tensor("T", left), [f"{other}: {tensor('T', right)}"], tensor("T", result)
    # An untraced typed operand first with a traced open one (the protocols serve a traced
    # receiver only), last: only calls no other overload took come here.
    yield from _untraced_first([row for row in OPEN_AXES if "Open" not in row[0]], other)
    yield from _untraced_first(same, other)


def _open_left_first(patterns: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """``patterns`` with the open rank on the left (``OPEN_RANK``'s first) moved before the
    first lower-rank suffix on the left: an operator's receiver of open rank
    (``*tuple[Open, ...]``) binds ``*S`` there, and pyright matches the other operand's
    ``A, *S`` with ``*S`` empty, giving ``A`` and then an open tail, a rank no tensor has
    (``o * g`` was ``Tensor[T, B, L[8], *tuple[Open, ...]]``, where ``g * o`` was open). A
    receiver that is a typed rank of ``Open`` dims meets that guard too, after every pattern
    of its own rank."""
    at = next(i for i, (left, right, _) in enumerate(patterns) if left == "*S" and right.endswith(", *S"))
    return [*patterns[:at], OPEN_RANK[0], *patterns[at:]]


def _open_axes() -> list[tuple[str, str, str]]:
    """``Open`` against a typed dim at any of the last four axes (any axis of ranks 1-4), on
    either side, the other axes the same: (left, right, result), the result the typed
    operand's dims. An open dim is never a proven mismatch (the run time checks it), so
    ``conv(x) + x`` of a conv built from plain ints, ``(B, Open, Open, Open) + (B, L[16],
    L[32], L[32])``, and ``h[:, 1:] + typed`` type-check; two typed dims that differ still
    match nothing. Each subset of the last four axes that holds an ``Open`` is one pattern
    (the outermost open axis ends the ``*S`` prefix), less OPEN_DIM's rows of the same
    patterns. The operators carry them after every other pattern (with their untraced-first
    copies); a binary function form after every other pattern too, as a protocol for an
    untraced first operand and the plain patterns without copies (``_function_binary``:
    every overload a function form has costs each nested call some time, matched or not); a
    comparison's function form after every other pattern too (``compare``)."""
    names = ("C", "K", "A", "N")  # the last four axes' dims, outermost first
    known = _patterns(OPEN_DIM)
    rows: list[tuple[str, str, str]] = []
    for span in range(1, len(names) + 1):
        typed = names[len(names) - span :]
        for inner in itertools.product((True, False), repeat=span - 1):
            opened = ", ".join("Open" if is_open else dim for is_open, dim in zip((True, *inner), typed, strict=True))
            dims = "*S, " + ", ".join(typed)
            for pair in ((f"*S, {opened}", dims), (dims, f"*S, {opened}")):
                if (*pair, dims) not in known:
                    rows.append((*pair, dims))
    # ``Open`` on both sides at different axes of the last two, each axis typed on one side
    # (``(B, Open, L[32]) + (B, L[16], Open)``): the result takes each axis's typed dim. Only
    # the last two axes: every mix over the last three or four would be 48 patterns more in
    # every binary op and comparison, each costing every call that reaches them (README,
    # "Open dims on both sides").
    rows.append(("*S, Open, N", "*S, A, Open", "*S, A, N"))
    rows.append(("*S, A, Open", "*S, Open, N", "*S, A, N"))
    return rows


def _patterns(rows: Iterable[tuple[str, str, str, str]]) -> list[tuple[str, str, str]]:
    """A table's named rows (BROADCAST, OPEN_DIM) as (left, right, result)."""
    return [(left, right, result) for _, left, right, result in rows]


# An operand of open rank (``view(-1, V)``, ``reshape(-1)``, data) meets any other: the
# result is open (run time checks the sizes). Last, so no typed pattern is shadowed and a
# nested expression never tries them before its match.
OPEN_RANK: tuple[tuple[str, str, str], ...] = ((OPEN_DIMS, "*S", OPEN_DIMS), ("*S", OPEN_DIMS, OPEN_DIMS))

OPEN_AXES = _open_axes()


def _typed(rendered: str, result: str) -> str:
    """``rendered`` (a result type), Deprecated as ``result`` is."""
    return Deprecated(rendered, result.message) if isinstance(result, Deprecated) else rendered


def _untraced_first(patterns: Iterable[tuple[str, str, str]], other: str) -> Iterator[Sig]:
    """The patterns again with an untraced first operand (see ``UNTRACED_FIRST``), the
    same-shape one (``*S`` with ``*S``) last: when nothing matches, pyright's detail describes
    the last overload that failed on the second operand, and that one compares the shapes
    dim by dim."""
    ordered = sorted(patterns, key=lambda p: p[0] == p[1] == "*S")
    for left, right, result in ordered:
        yield tensor(UNTRACED_FIRST, left), [f"{other}: {tensor('T', right)}"], _typed(tensor("T", result), result)


def compare(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    patterns = _patterns(_broadcast(form))
    if form == "method":  # as binary's (``_open_left_first``): ``o < g`` of an open-rank ``o``
        patterns = _open_left_first(patterns)
    for left, right, result in patterns:
        a, b = tensor("Any", left), tensor("Any", right)
        if left == right == "*S" or left == OPEN_DIMS:
            b += " | float"
        yield a, [f"{other}: {b}"], tensor("NoTape", result)
    if form == "function":
        yield "float", [f"{other}: Tensor[Any, *S]"], "Tensor[NoTape, *S]"
    # ``Open`` against a typed dim at any of the last four axes, operators and function forms
    # alike (``sg.less(conv_out, typed)``): a comparison's operands are ``Any``-taped, so no
    # untraced-first copies or protocol are needed, and comparisons are rarely nested.
    for left, right, result in [*_outer(), *_patterns(OPEN_DIM), *OPEN_AXES]:
        yield tensor("Any", left), [f"{other}: {tensor('Any', right)}"], _typed(tensor("NoTape", result), result)
    # Last, an open rank on either side (``Tensor[T, *tuple[Open, ...]]``, no pattern above
    # splits it for mypy, Pyrefly or ty) gives an open-rank mask; without these, ``==`` and
    # ``!=`` fell back to ``object.__eq__`` there (``bool``), and pyright refused an open rank
    # against a typed one. A typed rank never reaches these (a typed dim is no Open).
    if form != "method":  # (the method's open rank on the left came first)
        yield tensor("Any", OPEN_DIMS), [f"{other}: Tensor[Any, *tuple[Any, ...]] | float"], tensor("NoTape", OPEN_DIMS)
    yield "Tensor[Any, *S]", [f"{other}: {tensor('Any', OPEN_DIMS)}"], tensor("NoTape", OPEN_DIMS)


def matmul(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    patterns = (
        ("*S, N, K", "K, A", "*S, N, A"),  # a batch of matrices times one matrix
        ("*S, N, K", "*S, K, A", "*S, N, A"),  # batched on both sides
        ("*S, N, K", "K", "*S, N"),  # matrix times vector
        ("K", "K, A", "A"),  # vector times matrix
        ("K", "K", ""),  # dot product
        *OPEN_RANK,
    )
    tape = _joined_tape(form)
    for left, right, result in patterns:
        yield tensor(tape, left), [f"{other}: {tensor(tape, right)}"], tensor(tape, result)
    yield from _untraced_first(patterns, other)


def reduce(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    extra = list(op.extra)
    yield "Tensor[T, *S]", ["axis: None = None", "keepdims: L[False] = False", *extra], "Tensor[T]"
    for axis, dims, dropped, kept in REDUCE_AXES:
        yield tensor("T", dims), [f"axis: {axis}", "keepdims: L[False] = False", *extra], tensor("T", dropped)
        yield tensor("T", dims), [f"axis: {axis}", "keepdims: L[True]", *extra], tensor("T", kept)
    # A computed axis: the result's dims are open (the literal axes above never get here
    # unless the rank is wrong, and then the open result refuses every typed annotation).
    fallback = ["axis: int | tuple[int, ...] | None = None", "keepdims: bool = False", *extra]
    yield "Tensor[T, *S]", fallback, tensor("T", OPEN_DIMS)


def squeeze(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    for axis, with_one, without in SQUEEZE_AXES:
        yield tensor("T", with_one), [f"axis: {axis}"], tensor("T", without)
    # Every size-1 axis, or a computed one (keyword-only, so a literal axis of the wrong
    # size never falls through to it).
    yield "Tensor[T, *S]", ["axis: None = None"], tensor("T", OPEN_DIMS)
    yield "Tensor[T, *S]", ["*", "any_axis: int"], tensor("T", OPEN_DIMS)


def expand_dims(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    for axis, with_one, without in SQUEEZE_AXES:
        yield tensor("T", without), [f"axis: {axis}"], tensor("T", with_one)
    yield "Tensor[T, *S]", ["axis: int"], tensor("T", OPEN_DIMS)


_NAMES = ("N", "K", "A", "C")


def _orders() -> Iterator[tuple[int, ...]]:
    for rank in (2, 3, 4):
        yield from itertools.permutations(range(rank))


def permute(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    for order in _orders():
        dims = _NAMES[: len(order)]
        source, result = ", ".join(dims), ", ".join(dims[i] for i in order)
        literal = [f"L[{i}]" for i in order]
        if form == "method":
            params = [f"a{i}: {lit}" for i, lit in enumerate(literal)] + ["/"]
        else:
            params = [f"axes: tuple[{', '.join(literal)}]"]
        yield tensor("T", source), params, tensor("T", result)
    yield (
        "Tensor[T, *S]",
        ["*axes: int | Sequence[int]"] if form == "method" else ["axes: Sequence[int] | None"],
        tensor("T", OPEN_DIMS),
    )


# x.transpose(0, 1) of a matrix is PyTorch's swap but NumPy's (and so shapegrad's) identity
# permutation: a port that keeps it computes with the matrix untransposed, silently.
_IDENTITY_SWAP = (
    "x.transpose(0, 1) of a matrix is NumPy's identity permutation (it changes nothing), not "
    "PyTorch's swap of the two axes: write x.swapaxes(0, 1) or x.T"
)


# x.transpose(1, 2) of a tensor of rank 3 or more is PyTorch's swap of two axes, and raises in
# shapegrad (two axes are no ordering of three or more): the same message at both times.
_TWO_AXES = (
    "x.transpose(a, b) with two axes is PyTorch's swap; shapegrad's transpose, as NumPy's, takes "
    "every axis in its new order: write x.swapaxes(a, b)"
)
_AXIS = "L[0, 1, 2, 3, 4, 5, -1, -2, -3, -4, -5]"


def transpose(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    yield "Tensor[T, N, K]", [], "Tensor[T, K, N]"
    yield "Tensor[T, N, K, A]", [], "Tensor[T, A, K, N]"
    yield "Tensor[T, N, K, A, C]", [], "Tensor[T, C, A, K, N]"
    *orders, fallback = permute(op, other, form)
    for first, params, result in orders:
        identity = form == "method" and params == ["a0: L[0]", "a1: L[1]", "/"]
        yield first, params, Deprecated(result, _IDENTITY_SWAP) if identity else result
    if form == "method":
        # Two literal axes of a rank of 3 or more, or of an open rank (``k.view(b, t, h,
        # d).transpose(1, 2)``) other than a matrix's ``(1, 0)``/``(0, 1)``.
        two = [f"a0: {_AXIS}", f"a1: {_AXIS}", "/"]
        yield "Tensor[T, N, K, A, *S]", two, Deprecated(tensor("T", OPEN_DIMS), _TWO_AXES)
        yield tensor("T", OPEN_DIMS), ["a0: L[0, 1]", "a1: L[0, 1]", "/"], tensor("T", OPEN_DIMS)
        yield tensor("T", OPEN_DIMS), two, Deprecated(tensor("T", OPEN_DIMS), _TWO_AXES)
    yield fallback


# A creation call's size variables: a Dim keeps its class, a literal in sg.LiteralSize its
# literal (``B, S, C = x.shape`` then ``x.reshape(B, S, C)`` keeps all three).
_SIZE_VARS = ("Z0", "Z1", "Z2", "Z3")


def reshape(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    # Sizes given as sg.Dim instances or literal sizes keep their types (a Dim does not widen
    # to int); any plain int (a computed size, -1) gives an open rank, to be stated with sg.cast.
    for rank in (1, 2, 3, 4):
        names = _SIZE_VARS[:rank]
        if form == "method":
            params = [f"d{i}: {n}" for i, n in enumerate(names)] + ["/"]
        else:
            params = [f"shape: tuple[{', '.join(names)}]"]
        yield "Tensor[T, *S]", params, tensor("T", ", ".join(names))
    if form == "method":  # x.reshape(other.shape), x.reshape((2, 3)), as PyTorch
        yield "Tensor[T, *S]", ["shape: Sequence[int]", "/"], tensor("T", OPEN_DIMS)
    rest = ["*shape: int"] if form == "method" else ["shape: Sequence[int]"]
    yield "Tensor[T, *S]", rest, tensor("T", OPEN_DIMS)


def sizes(op: OpSpec) -> Iterator[tuple[list[str], str]]:
    """A creation op's overloads, as (parameters, result): sizes as arguments (``zeros(b, 3)``)
    or one tuple (``zeros((b, 3))``; ``full`` takes only the tuple, then its value).

    Each size is typed by itself, for every mix at ranks 1-4: a ``Z`` variable keeps a Dim's
    class or a literal (``L[3]``); ``Y | int`` takes a plain int, giving ``Open`` (the
    variable's default) or, under an annotation, the annotated dim. Pyright picks the first
    overload that fits, so a size that can keep its type does: ``zeros(b, 3, 32, 32)`` is
    ``Tensor[NoTape, Open, L[3], L[32], L[32]]``. More than four sizes, or a sequence whose
    length Python does not know, give an open rank."""
    keywords = list(op.extra)
    tuple_only = keywords[0] != "*"  # full(shape, value, ...)
    forms = ("tuple",) if tuple_only else ("arguments", "tuple")
    for form in forms:
        for rank in range(5):
            for combo in itertools.product((False, True), repeat=rank):
                # Z, or W (a Z with a default) after a Y: pyright asks a type variable after
                # one with a default to have one
                kept = [f"W{i}" if any(combo[:i]) else f"Z{i}" for i in range(rank)]
                types = [f"Y{i} | int" if plain else kept[i] for i, plain in enumerate(combo)]
                dims = ", ".join(f"Y{i}" if plain else kept[i] for i, plain in enumerate(combo))
                if form == "arguments":
                    params = [*(f"d{i}: {t}" for i, t in enumerate(types)), "/"] if rank else []
                else:
                    params = [f"shape: tuple[{', '.join(types) or '()'}]"] + ([] if tuple_only else ["/"])
                yield [*params, *keywords], tensor("NoTape", dims)
        if form == "arguments":
            yield ["*dims: int", *keywords[1:]], tensor("NoTape", OPEN_DIMS)
        else:
            yield ["shape: Sequence[int]", *([] if tuple_only else ["/"]), *keywords], tensor("NoTape", OPEN_DIMS)


def flatten(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    # ``start_dim`` 1 only: PyTorch's ``x.flatten(1)``, which is what flatten does here
    start = ["start_dim: L[1] = 1", "/"]
    yield "Tensor[T, N, K]", start, "Tensor[T, N, K]"
    yield "Tensor[T, N, K, A]", start, "Tensor[T, N, Prod[K, A]]"
    yield "Tensor[T, N, K, A, C]", start, "Tensor[T, N, Prod[K, A, C]]"
    yield "Tensor[T, N, *S]", start, "Tensor[T, N, Open]"


def getitem(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    for index, dims, result in GETITEM:
        yield tensor("T", dims), [f"index: {index}"], tensor("T", result)
    yield "Tensor[T, *S]", ["index: Any"], tensor("T", OPEN_DIMS)


# concat and stack take a sequence of tensors of one tape: (axis, each tensor's dims, the
# result's dims), joining along an existing axis (concat) or a new one (stack).
_CONCAT = (
    ("L[0]", "Any, *S", "Open, *S"),
    ("L[1]", "N, Any, *S", "N, Open, *S"),
    ("L[2]", "N, K, Any, *S", "N, K, Open, *S"),
    ("L[-2]", "*S, Any, N", "*S, Open, N"),
    ("L[-1]", "*S, Any", "*S, Open"),
)
_STACK = (
    ("L[0]", "*S", "Open, *S"),
    ("L[1]", "N, *S", "N, Open, *S"),
    ("L[2]", "N, K, *S", "N, K, Open, *S"),
    ("L[-2]", "*S, N", "*S, Open, N"),
    ("L[-1]", "*S", "*S, Open"),
)


# A pair given as a tuple, ``sg.concat((x, skip), axis=1)``: the sizes are known one by one,
# so the joined one is their Sum (U-Net skips, [sin, cos] embeddings) and a stack's new axis
# is 2. (axis, the first tensor's dims, the second's, the result's). A list has no length in
# its type: it takes the open rules above.
_CONCAT_PAIRS = (
    ("L[0]", "A, *S", "K, *S", "Sum[A, K], *S"),
    ("L[1]", "N, A, *S", "N, K, *S", "N, Sum[A, K], *S"),
    ("L[2]", "N, C, A, *S", "N, C, K, *S", "N, C, Sum[A, K], *S"),
    ("L[-2]", "*S, A, N", "*S, K, N", "*S, Sum[A, K], N"),
    ("L[-1]", "*S, A", "*S, K", "*S, Sum[A, K]"),
)
_STACK_PAIRS = (
    ("L[0]", "*S", "*S", "L[2], *S"),
    ("L[1]", "N, *S", "N, *S", "N, L[2], *S"),
    ("L[2]", "N, K, *S", "N, K, *S", "N, K, L[2], *S"),
    ("L[-2]", "*S, N", "*S, N", "*S, L[2], N"),
    ("L[-1]", "*S", "*S", "*S, L[2]"),
)


def _joined(pairs: tuple[tuple[str, str, str, str], ...], rules: tuple[tuple[str, str, str], ...]) -> Iterator[Sig]:
    for i, (axis, first, second, result) in enumerate(pairs):
        pair = f"tuple[{tensor('T', first)}, {tensor('T', second)}]"
        yield pair, [f"axis: {axis}{' = 0' if i == 0 else ''}"], tensor("T", result)
    # Tensors of open rank, at any axis (``[sg.sin(angles), sg.cos(angles)]`` of a reshape to
    # ints): mypy, Pyrefly and ty split no ``*tuple[Open, ...]`` into the rules below. A
    # typed rank never matches (a typed dim is no Open).
    yield f"Sequence[{tensor('T', OPEN_DIMS)}]", ["axis: int = 0"], tensor("T", OPEN_DIMS)
    for i, (axis, each, result) in enumerate(rules):
        yield f"Sequence[{tensor('T', each)}]", [f"axis: {axis}{' = 0' if i == 0 else ''}"], tensor("T", result)
    # Typed tensors with open-rank ones (a U-Net skip with a padded up-sampling): an open
    # rank, as an operator gives. The typed ones must still agree with each other (one ``*S``;
    # typed tensors of different sizes along the joined axis beside an open one are refused),
    # and when nothing matches, pyright's detail is this overload's: it names the typed
    # tensor whose dims differ from the first one's.
    mixed = f"Sequence[{tensor('T', OPEN_DIMS)} | {tensor('T', '*S')}]"
    yield mixed, ["axis: int = 0"], tensor("T", OPEN_DIMS)
    yield f"Sequence[{tensor('T', '*S')}]", ["*", "any_axis: int"], tensor("T", OPEN_DIMS)


def concat(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    return _joined(_CONCAT_PAIRS, _CONCAT)


def stack(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    return _joined(_STACK_PAIRS, _STACK)


# sg.where's masks: (the branch's dims, the mask's dims that broadcast over them). A mask of
# the branch's shape first, then a keepdims column (a padding mask ``keep[:, :, None]``), a
# suffix (a causal ``(S, S)`` mask over ``(B, S, S)`` or ``(B, H, S, S)`` scores) and a
# per-item mask; the mask's tape is never the result's. Typed through the branch's protocol
# (``_broadcast.MaskedBy``), so the branch's broadcasting against the other branch is written
# once, not once per mask.
WHERE_MASKS: tuple[tuple[str, str], ...] = (
    ("*S", "*S"),
    ("*S, N", "*S, L[1]"),
    ("A, *S", "*S"),
    ("A, K, *S", "*S"),
    ("A, N, *S", "A, L[1], *S"),
    ("A, K, N, *S", "A, L[1], L[1], *S"),
)
# The other branch against the full one: (the full branch's dims, the shapes that broadcast to
# them) — a keepdims reduction (``x.mean(axis=1, keepdims=True)``), a bias, a rank-0 tensor, a
# suffix, as the binary operators take them.
WHERE_BRANCHES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("*S, N", ("*S, L[1]", "N", "")),
    ("A, N, *S", ("A, L[1], *S", "L[1], N, *S", "N, *S", "*S")),
)


_OPEN_BRANCH_OVERLAP = (
    "  # pyright: ignore[reportOverlappingOverload] -- an open-rank branch with a typed mask reaches it"
)


def masked_by_methods() -> list[str]:
    """``Tensor._sg_masked_by``'s overloads (``_broadcast.MaskedBy``), checker only: the
    receiver is a branch of ``sg.where``, the argument its mask, the result the branch; an
    open-rank mask or branch gives an open rank."""
    lines = [
        "    # sg.where's masks (``_broadcast.MaskedBy``), seen by the type checker only.",
        "    if TYPE_CHECKING:",
    ]
    signatures = [(tensor("U", full), tensor("Any", mask), tensor("U", full)) for full, mask in WHERE_MASKS]
    signatures.append(("Tensor[U, *S]", tensor("Any", OPEN_DIMS), tensor("U", OPEN_DIMS)))
    signatures.append((tensor("U", OPEN_DIMS), "Tensor[Any, *tuple[Any, ...]]", tensor("U", OPEN_DIMS)))
    for receiver, mask, result in signatures:
        # (pyright reads the open-rank branch as covered by the first overload, which it is not:
        # an open rank there is no typed mask's shape)
        suffix = _OPEN_BRANCH_OVERLAP if receiver == tensor("U", OPEN_DIMS) else ""
        lines += _def("_sg_masked_by", [f"self: {receiver}", f"mask: {mask}", "/"], result, "        ", suffix)
    lines.append("        def _sg_masked_by(self, mask: Any, /) -> Any: ...")
    return lines


def _masked(dims: str, tape: str = "T") -> str:
    return f"MaskedBy[Operand, {tensor(tape, dims)}]"


def where(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    """``sg.where(cond, a, b)``. First the plain patterns (``where_patterns``: a mask of
    ``WHERE_MASKS`` under two branches of one shape or a number), which mypy, Pyrefly and ty
    match too (ty and mypy do not solve ``MaskedBy`` below). Then, for pyright, the mask as a
    bare type variable (``Operand``) that the full branch's protocol checks
    (``masked_by_methods``): the other branch of its shape, a number, or one that broadcasts
    to it (``WHERE_BRANCHES``); an open rank on either side gives an open rank, as the
    operators do. An untraced full branch with a traced other one comes first in its group:
    pyright solves ``T`` from the protocol's result and keeps it ``Never`` (untraced)."""
    # An untraced first branch before a traced second one, first (pyright matches the plain
    # patterns' ``T`` with ``Never`` there: an untraced result of a traced branch), a plain
    # overload (a protocol one first made nested ``where`` 3x slower at depth 8); its
    # broadcasting twin opens the protocol group.
    yield "Tensor[Any, *S]", [f"a: {tensor(UNTRACED_FIRST, '*S')}", "b: Tensor[T, *S]"], "Tensor[T, *S]"
    yield from where_patterns(op, other, form)
    yield "Operand", [f"a: {_masked('*S', UNTRACED_FIRST)}", "b: Tensor[T, *S]"], "Tensor[T, *S]"
    yield "Operand", [f"a: {_masked('*S')}", "b: Tensor[T, *S] | float"], "Tensor[T, *S]"
    yield "Operand", ["a: float", f"b: {_masked('*S')}"], "Tensor[T, *S]"
    # A typed branch with an open-rank one, either way round: an open rank.
    yield "Operand", [f"a: {_masked('*S')}", f"b: {tensor('T', OPEN_DIMS)}"], tensor("T", OPEN_DIMS)
    for tape in (UNTRACED_FIRST, "T"):
        yield "Operand", [f"a: {_masked(OPEN_DIMS, tape)}", f"b: {tensor('T', '*S')}"], tensor("T", OPEN_DIMS)
    yield "Operand", [f"a: {tensor('T', '*S')}", f"b: {_masked(OPEN_DIMS)}"], tensor("T", OPEN_DIMS)
    for full, smaller in WHERE_BRANCHES:
        union = " | ".join(tensor("T", dims) for dims in smaller)
        yield "Operand", [f"a: {_masked(full)}", f"b: {union}"], tensor("T", full)
    for full, smaller in WHERE_BRANCHES:
        for tape in (UNTRACED_FIRST, "T"):
            union = " | ".join(tensor(tape, dims) for dims in smaller)
            yield "Operand", [f"a: {union}", f"b: {_masked(full)}"], tensor("T", full)
    # Last, for its message only (every call it takes, the protocol's same-shape overload took): when nothing
    # matches, pyright describes an overload that failed at the last argument, and this one
    # names the mask and the branch, ``MaskedBy[<mask>, <branch>]``.
    yield "Operand", ["a: Tensor[T, *S]", f"b: {_masked('*S')}"], "Tensor[T, *S]"


def where_patterns(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    """``sg.where`` as plain patterns, ``where``'s first overloads and the Pyrefly stubs' rule
    (``_pyrefly_stubs``): each of ``WHERE_MASKS`` with two branches of the full shape, or a
    number for either, and a mask under two numbers."""
    for full, mask in WHERE_MASKS:
        branch = tensor("T", full)
        for a, b in ((branch, branch), (branch, "float"), ("float", branch)):
            yield tensor("Any", mask), [f"a: {a}", f"b: {b}"], branch
    yield "Tensor[Any, *S]", ["a: float", "b: float"], "Tensor[NoTape, *S]"


RENDERERS: dict[str, Callable[[OpSpec, str, str], Iterator[Sig]]] = {
    "binary": binary,
    "compare": compare,
    "matmul": matmul,
    "reduce": reduce,
    "squeeze": squeeze,
    "expand_dims": expand_dims,
    "permute": permute,
    "transpose": transpose,
    "reshape": reshape,
    "flatten": flatten,
    "getitem": getitem,
    "concat": concat,
    "stack": stack,
    "where": where,
}

# --------------------------------------------------------------------------- method bodies
# (parameters of the implementation after self, the call of the function form)
_METHOD_IMPL: dict[str, tuple[str, str]] = {
    "binary": ("other: Any", "{f}(self, other)"),
    "compare": ("other: Any", "{f}(self, other)"),
    "matmul": ("other: Any", "{f}(self, other)"),
    "reduce": ("axis: Any = None, keepdims: bool = False", "{f}(self, axis, keepdims{extra})"),
    "squeeze": ("axis: Any = None, *, any_axis: int | None = None", "{f}(self, axis, any_axis=any_axis)"),
    "expand_dims": ("axis: Any = None", "{f}(self, axis)"),  # None: see ops.shape.expand_dims
    "permute": ("*axes: int | Sequence[int]", "{f}(self, axes)"),  # x.permute(0, 2, 1) or ((0, 2, 1)), as PyTorch
    "transpose": ("*axes: int | Sequence[int]", "_shape_any.permute(self, axes or None)"),
    "reshape": ("*shape: Any", "{f}(self, shape)"),  # reshape((2, 3)) is unwrapped by the function
    "flatten": ("start_dim: Any = 1, /", "{f}(self, start_dim)"),
    "getitem": ("index: Any", "_index_any.getitem(self, index)"),
}


# An op that takes ``axis`` gathers unknown keywords in ``**torch_keywords`` and refuses them
# first, so that PyTorch's ``dim=`` raises a KeywordError naming ``axis=`` (see _torch_names);
# its overloads do not have it, so pyright still reports the keyword.
_TORCH_KEYWORDS = "torch_keywords"


def _refusal(name: str, indent: str) -> str:
    return f'{indent}    if {_TORCH_KEYWORDS}:\n{indent}        refuse_torch_keywords("{name}", {_TORCH_KEYWORDS})'


def _takes_axis(args: ast.arguments) -> bool:
    return any(a.arg == "axis" for a in [*args.posonlyargs, *args.args, *args.kwonlyargs])


def _narrowed_slices() -> set[int]:
    """The GETITEM rows with a literal slice (``:k`` kept as k, ``-1:`` as 1) that a later
    row with the general slice (``:b``, ``a:``) covers: pyright calls each an overlap."""
    indexes = [index for index, _, _ in GETITEM]
    found: set[int] = set()
    for i, index in enumerate(indexes):
        for narrow, wide in NARROWED_SLICES.items():
            if narrow in index and index.replace(narrow, wide) in indexes[i + 1 :]:
                found.add(i)
    return found


# Overloads pyright flags as overlapping on purpose: a typed literal axis beside the open
# fallback (a call that matches both gets the typed one), a tuple pair beside any sequence
# (concat, stack), and flatten's rank-2 case beside
# its open fallback (pyright misreads the TypeVarTuple there as covering rank 2).
_OVERLAP = "  # pyright: ignore[reportOverlappingOverload] -- the typed case goes first, the open fallback last"
_OVERLAPPING: dict[str, set[int]] = {
    "reduce": {1},
    "flatten": {0, 3},
    "expand_dims": {0},
    "permute": {0},
    "transpose": {0},
    "reshape": {0},
    "getitem": {0, *_narrowed_slices()},
    "concat": set(range(len(_CONCAT_PAIRS))),  # a tuple pair (Sum) beside the open rules for any sequence
    "stack": set(range(len(_STACK_PAIRS))),
}


def _def(name: str, params: list[str], ret: str, indent: str, suffix: str = "") -> list[str]:
    warn = [f"{indent}@deprecated({ret.message!r})"] if isinstance(ret, Deprecated) else []
    if warn and suffix == _UNTRACED_OVERLAP:
        suffix = ""  # pyright does not call a deprecated overload unreachable
    return [f"{indent}@overload", *warn, f"{indent}def {name}({', '.join(params)}) -> {ret}: ...{suffix}"]


# Pyright calls the untraced-first copies unreachable (``Never`` fits any ``T``), though its
# solver reaches them for a caller's tape variable (see ``UNTRACED_FIRST``).
_UNTRACED_OVERLAP = (
    "  # pyright: ignore[reportOverlappingOverload] -- reached when the second operand has a caller's tape variable"
)


# pyright matches an open-rank receiver of a comparison with its first pattern; the open-rank
# overload after every pattern is for the checkers that do not.
_OPEN_RANK_OVERLAP = (
    "  # pyright: ignore[reportOverlappingOverload] -- an open rank: pyright matches it earlier, the others here"
)


# pyright reads an open last axis (``*S, Open``) as overlapping the open rank's overloads
# after it (``*tuple[Open, ...]``), which give another result: the typed pattern goes first.
_OPEN_LAST_OVERLAP = "  # pyright: ignore[reportOverlappingOverload] -- an open last axis first, the open rank after"
_OPEN_LAST = {("*S, Open", "*S, N"), ("*S, N", "*S, Open")}

# pyright reads keepdims over the last two axes as covered by the per-item mask over heads
# (``A, K, N, *S`` with ``A, L[1], L[1], *S``), which it is at rank 3 only: at rank 4,
# ``(B, C, H, W) - x.mean((-2, -1), keepdims=True)`` reaches it.
_LAST_TWO_OVERLAP = "  # pyright: ignore[reportOverlappingOverload] -- the per-item mask covers it at rank 3 only"
_LAST_TWO = {("*S, A, N", "*S, L[1], L[1]"), ("*S, L[1], L[1]", "*S, A, N")}


def _dims_of(annotation: str) -> str:
    """``Tensor[T, *S, N]`` -> ``*S, N`` (the parameter part of a rendered tensor type)."""
    inner = annotation.partition("[")[2].removesuffix("]")
    return inner.partition(", ")[2]


def _suffix(op: OpSpec, index: int, first: str, rest: list[str], form: str) -> str:
    if op.kind == "compare" and first == tensor("Any", OPEN_DIMS) and form != "method":
        return _OPEN_RANK_OVERLAP
    # A binary function form puts each untraced-first copy before its typed pattern
    # (``_function_binary``): pyright flags neither there, except the open last axis's copy
    # (before the typed one and the open rank).
    copies_first = form == "function" and op.kind == "binary"
    untraced = first.startswith(f"Tensor[{UNTRACED_FIRST}")
    if op.kind in ("binary", "compare") and rest:
        pair = (_dims_of(first), _dims_of(rest[0].partition(": ")[2]))
        # (a binary method's open rank on the left comes before both: ``_open_left_first``)
        open_left_first = op.kind in ("binary", "compare") and form == "method" and pair[0] == "*S, Open"
        # (a method's untraced copy is not flagged: the open axes' patterns (``OPEN_AXES``)
        # come between it and the open rank)
        flagged = not untraced if form == "method" and op.kind == "binary" else untraced or not copies_first
        if pair in _OPEN_LAST and flagged and not open_left_first:
            return _OPEN_LAST_OVERLAP
        if pair in _LAST_TWO:
            return _LAST_TWO_OVERLAP
        if copies_first:
            # (the same-shape copy, last, is not flagged either since the mixed open patterns
            # of ``_open_axes`` sit between it and the union overload of the same shape)
            return ""
    operand = rest[0].partition(": ")[2] if op.kind == "where" else first  # where: the mask comes first
    if op.kind == "where" and index == 0:
        return ""  # where's untraced-first overload is its first (see ``where``): nothing before it
    # (a union of untraced patterns comes before its traced twin, which pyright does not flag)
    if operand.startswith(f"Tensor[{UNTRACED_FIRST}") and op.tape == "join" and " | " not in operand:
        # A method's typed patterns have the receiver's own tape (``_joined_tape``), which
        # does not cover these.
        return "" if form == "method" and op.kind in _RECEIVER_TAPE else _UNTRACED_OVERLAP
    return _OVERLAP if index in _OVERLAPPING.get(op.kind, set()) else ""


# pyright 1.1.414 checks an overload against the ones before it only while it is one of the
# first 99 (``overloads.length < 100`` in its checker): an overlap suppression on a later one
# would be reported as unnecessary (the binary function forms have about 104 overloads).
_PYRIGHT_OVERLAP_CHECKED = 99


def _checked_suffix(suffix: str, index: int) -> str:
    """``suffix``, unless pyright does not check the overload at ``index`` for overlaps."""
    return suffix if index < _PYRIGHT_OVERLAP_CHECKED or "reportOverlappingOverload" not in suffix else ""


def method_block(op: OpSpec, indent: str = "    ", name: str | None = None) -> list[str]:
    """The method form of ``op`` (named ``name``, its operator by default): its overloads and
    an implementation that calls the function."""
    assert op.method is not None
    name = name or op.method
    lines: list[str] = []
    for i, (first, rest, ret) in enumerate(RENDERERS[op.kind](op, "other", "method")):
        suffix = _checked_suffix(_suffix(op, i, first, rest, "method"), i)
        lines += _def(name, [f"self: {first}", *rest], ret, indent, suffix)
    impl_params, call = _METHOD_IMPL[op.kind]
    impl_params += "".join(f", {p}" for p in op.extra)
    extra_args = "".join(f", {p.split(':')[0]}" for p in op.extra)
    # Called through the untyped module handles (`_ew_any`, ..., bound by _tensor.py):
    # the overloads above are the types, and a cast() here would cost a call per operator.
    function = f"{ALIASES[op.module]}_any.{op.name}" if op.module else ""
    refuses = "axis" in impl_params
    if refuses:
        impl_params += f", **{_TORCH_KEYWORDS}: Any"
    params = "self" + (f", {impl_params}" if impl_params else "")
    lines.append(f"{indent}def {name}({params}) -> Any:")
    see = f" (``sg.{op.name}``)" if op.module else ""
    lines.append(f'{indent}    """{op.doc}{see}."""')
    if refuses:
        lines.append(_refusal(name, indent))
    lines.append(f"{indent}    return {call.format(f=function, extra=extra_args)}")
    if op.reflected and name == op.method:
        # An untraced op's (``True & mask``) is untraced whatever the receiver's tape.
        receiver, result = ("Any", "NoTape") if op.tape == "untraced" else ("T", "T")
        lines += [
            "",
            f"{indent}def {op.reflected}(self: Tensor[{receiver}, *S], other: float) -> Tensor[{result}, *S]:",
            f'{indent}    """{op.doc} with a Python number on the left."""',
            f"{indent}    return {function}(other, self)",
        ]
    return lines


def _definitions(source: str, module: str, name: str, table: str) -> tuple[list[ast.FunctionDef], ast.FunctionDef]:
    """The overloads and the implementation of the top-level function ``name`` in ``module``,
    read from its ``source`` (the generator runs without importing the package)."""
    defs = _functions(source).get(name)
    implementation = next((d for d in defs or () if not d.decorator_list), None)
    if implementation is None:
        raise SystemExit(f"_opspec.{table}: no implementation of {name!r} in shapegrad/{module}")
    assert defs is not None
    return [d for d in defs if any(ast.unparse(x) == "overload" for x in d.decorator_list)], implementation


@functools.cache
def _functions(source: str) -> dict[str, list[ast.FunctionDef]]:
    # Parsed once per source text: every op of a module reads the same tree.
    found: dict[str, list[ast.FunctionDef]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            found.setdefault(node.name, []).append(node)
    return found


_SUPPRESSION = "  # pyright: " + "ignore"  # split: the suppression-reason test reads every line


def signature_method_block(module: str, name: str, indent: str = "    ") -> list[str]:
    """The method form of a hand-typed op: each of its signatures (its overloads, or its one
    definition) with ``self`` for the first parameter, and a body that calls the function."""
    source = _path(module).read_text()
    overloads, implementation = _definitions(source, module, name, "SIGNATURE_METHODS")
    lines_of_source = source.splitlines()
    lines: list[str] = []
    for signature in overloads or [implementation]:
        params = _method_params(signature.args)
        ret = ast.unparse(signature.returns) if signature.returns else "Any"
        if overloads:
            # An overload's suppression (an intended overlap: typed case first, open fallback
            # last) holds for its method too.
            _, marker, reason = lines_of_source[(signature.end_lineno or signature.lineno) - 1].partition(_SUPPRESSION)
            lines += _def(name, params, ret, indent, marker + reason)
        else:
            lines.append(f"{indent}def {name}({', '.join(params)}) -> {ret}:")
    if overloads:
        lines.append(f"{indent}def {name}({', '.join(_method_params(implementation.args, annotate=False))}) -> Any:")
    doc = (ast.get_docstring(implementation) or "").split("\n\n")[0].replace("\n", " ")
    lines.append(f'{indent}    """{doc.rstrip(".")}; the method form of ``sg.{name}``."""')
    args = implementation.args
    if _takes_axis(args) and args.kwarg is not None and args.kwarg.arg == _TORCH_KEYWORDS:
        lines.append(_refusal(name, indent))  # refused here: a call passing **{} costs ~140 ns
        args = ast.arguments(
            args.posonlyargs, args.args, args.vararg, args.kwonlyargs, args.kw_defaults, None, args.defaults
        )
    lines.append(f"{indent}    return {ALIASES[module]}_any.{name}({_call_args(args)})")
    return lines


def _method_params(args: ast.arguments, annotate: bool = True) -> list[str]:
    """A function's parameters, the first one renamed ``self``."""

    def one(arg: ast.arg, default: ast.expr | None, prefix: str = "") -> str:
        text = prefix + arg.arg
        if annotate and arg.annotation is not None:
            text += f": {ast.unparse(arg.annotation)}"
        elif not annotate:
            text += ": Any"
        if default is not None:
            text += f" = {ast.unparse(default)}"
        return text

    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    params = [one(a, d) for a, d in zip(positional, defaults, strict=True)]
    params[0] = "self" + params[0][len(positional[0].arg) :]
    if args.vararg is not None:
        params.append(one(args.vararg, None, "*"))
    elif args.kwonlyargs:
        params.append("*")
    params += [one(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    if args.kwarg is not None:
        params.append(one(args.kwarg, None, "**"))
    return params


def _call_args(args: ast.arguments, first: str | None = "self") -> str:
    """The call that passes a method's parameters on to the function (``self`` first), or a
    function's to its implementation (``first`` None: every parameter by its name)."""
    positional = [*args.posonlyargs, *args.args]
    passed = [first, *(a.arg for a in positional[1:])] if first else [a.arg for a in positional]
    if args.vararg is not None:
        passed.append(f"*{args.vararg.arg}")
    passed += [f"{a.arg}={a.arg}" for a in args.kwonlyargs]
    if args.kwarg is not None:
        passed.append(f"**{args.kwarg.arg}")
    return ", ".join(passed)


def function_block(op: OpSpec) -> list[str]:
    """The function form's overloads (its implementation follows the block, by hand)."""
    lines: list[str] = []
    if op.kind == "sizes":
        for params, ret in sizes(op):
            lines += _def(op.name, params, ret, "")
        return lines
    first_name, *others = op.params
    other = others[0] if others else "other"
    for i, (first, rest, ret) in enumerate(RENDERERS[op.kind](op, other, "function")):
        suffix = _checked_suffix(_suffix(op, i, first, rest, "function"), i)
        lines += _def(op.name, [f"{first_name}: {first}", *rest], ret, "", suffix)
    return lines


def function_form(op: OpSpec) -> list[str]:
    """``op``'s function form: its overloads, then an implementation with the signature and
    docstring of the untyped implementation in its module, which it calls."""
    assert op.module is not None
    _, implementation = _definitions(_path(op.module).read_text(), op.module, op.name, "OPS")
    params = ast.unparse(implementation.args)
    refuses = _takes_axis(implementation.args) and implementation.args.kwarg is None
    if refuses:
        params += f", **{_TORCH_KEYWORDS}: Any"
    ret = ast.unparse(implementation.returns) if implementation.returns else "Any"
    doc = ast.get_docstring(implementation, clean=False) or ""
    lines = [*function_block(op), f"def {op.name}({params}) -> {ret}:"]
    lines.append(f'    """{doc}"""')
    if refuses:
        lines.append(_refusal(op.name, ""))
    lines.append(f"    return {ALIASES[op.module]}.{op.name}({_call_args(implementation.args, first=None)})")
    return lines


_FUNCTIONS_HEADER = '''"""The function forms of the op table's ops (``sg.add``, ``sg.mean``, ``sg.reshape``, ...),
typed: each one's overloads, then a call of the untyped implementation in its op module.

Generated by ``python shapegrad/_typegen.py`` from ``shapegrad/_opspec.py``: do not edit.
"""

# fmt: off
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal as L, overload

from typing_extensions import deprecated

from ._autodiff import NoTape
from ._broadcast import LeftOfBroadcast, MaskedBy, OpenLeftOf, OpenRightOf, RightOf
{creation}from ._dims import Open, Prod, Sum
from ._tensor import AnyTensor, Tensor
from ._torch_names import refuse_torch_keywords
from ._typevars import Z0, Z1, Z2, Z3, A, C, K, N, Operand, Result, S, T
'''

_CREATION_HEADER = '''"""The creation ops that take sizes (``sg.zeros``, ``sg.ones``, ``sg.rand``, ``sg.randn``,
``sg.full``), typed size by size: each one's overloads (``_typegen.sizes``), then a call of the
untyped implementation in ``ops/creation.py``. ``_function_ops`` re-exports them.

Generated by ``python shapegrad/_typegen.py`` from ``shapegrad/_opspec.py``: do not edit.
"""

# Every mix of kept and plain sizes is an overload, a kept one before the plain one it
# overlaps: the order is the point, and pyright's pairwise check of 65 overloads a function
# takes minutes.
# pyright: reportOverlappingOverload=false
# fmt: off
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

from ._autodiff import NoTape
from ._backend import Backend
from ._dims import Open
from ._tensor import Tensor
from ._typevars import W1, W2, W3, Y0, Y1, Y2, Y3, Z0, Z1, Z2, Z3
from .ops import creation as _creation
from .ops.creation import Generator
'''


def _natural(name: str) -> list[str | int]:
    """The order isort gives import members: digit runs compared as numbers (log2 < log10)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def functions_module() -> str:
    """The whole text of ``_function_ops.py``: the table's overloaded function forms, then the
    hand-typed ops re-exported from their modules, and ``__all__``: every op that is
    ``sg.<name>`` (``shapegrad/__init__.py`` exports it from here)."""
    typed = [op for op in OPS if op.module and op.kind not in HAND_KINDS and op.kind != "sizes"]
    hand = [op for op in OPS if op.module and op.kind in HAND_KINDS and op.top_level]
    sized = [op for op in OPS if op.kind == "sizes"]
    modules = sorted({op.module for op in typed if op.module})
    imports = "".join(f"    {m.removeprefix('ops.')} as {ALIASES[m]},\n" for m in modules)
    names = "".join(f"    {op.name} as {op.name},\n" for op in sorted(sized, key=lambda op: _natural(op.name)))
    creation = f"from .{CREATION_MODULE} import (\n{names})\n"
    text = _FUNCTIONS_HEADER.replace("{creation}", creation) + f"from .ops import (\n{imports})\n"
    by_module: dict[str, list[str]] = {}
    for op in hand:
        assert op.module is not None
        by_module.setdefault(op.module, []).append(op.name)
    for module in sorted(by_module):
        names = "".join(f"    {name} as {name},\n" for name in sorted(by_module[module], key=_natural))
        text += f"from .{module} import (\n{names})\n"
    text += "\n__all__ = [\n" + "".join(f'    "{op.name}",\n' for op in [*typed, *hand, *sized]) + "]\n"
    for op in typed:
        text += "\n\n" + "\n".join(function_form(op)) + "\n"
    return text


def creation_module() -> str:
    """The whole text of ``_creation_ops.py``: the ``sizes`` ops' function forms."""
    sized = [op for op in OPS if op.kind == "sizes"]
    text = _CREATION_HEADER + "\n__all__ = [" + ", ".join(f'"{op.name}"' for op in sized) + "]\n"
    for op in sized:
        text += "\n\n" + "\n".join(function_form(op)) + "\n"
    return text


_METHODS_HEADER = '''"""The method forms of the op table's ops (``x + y``, ``x.sum(axis=1)``, ``x[:, 0]``, ...):
the class ``TensorOps``, which ``Tensor`` inherits.

Generated by ``python shapegrad/_typegen.py`` from ``shapegrad/_opspec.py``: do not edit.
Each method's overloads are its type; its body calls the function form through an untyped
module handle, which ``_tensor.py`` binds once the op modules can import.
"""

# The methods annotate ``self`` as ``Tensor[...]``, the subclass: how a mixin states the shape
# rule of the class it is mixed into (pyright asks for a supertype of the mixin there).
# pyright: reportGeneralTypeIssues=false
# fmt: off
from __future__ import annotations

from collections.abc import Sequence
from types import EllipsisType
from typing import TYPE_CHECKING, Any, Generic, Literal as L, Never, TypeVar, TypeVarTuple, overload

from typing_extensions import deprecated

from ._autodiff import NoTape
from ._dims import Open, Prod
from ._torch_names import refuse_torch_keywords
from ._typevars import Z0, Z1, Z2, Z3, A, B, C, K, N, S, T, U

if TYPE_CHECKING:
    from ._tensor import Tensor
    from .ops.creation import Generator

__all__ = ["TensorOps"]

Tape_ = TypeVar("Tape_", covariant=True)
Dims = TypeVarTuple("Dims")

# Bound by _tensor.py after the op modules import (they import Tensor).
{handles}

class TensorOps(Generic[Tape_, *Dims]):
    """The op table's method forms, mixed into ``Tensor``."""

    __slots__ = ()

    # Defining __eq__ (element-wise, below) would make the class unhashable: tensors hash by
    # identity, as PyTorch's do (parameters are dict keys).
    __hash__ = object.__hash__

'''


def methods_module() -> str:
    """The whole text of ``_tensor_ops.py``."""
    methods: list[str] = []
    for op in OPS:
        if op.kind in HAND_KINDS:
            continue  # below, from their signatures
        if op.method:
            methods += [*method_block(op), ""]
        if op.named:
            methods += [*method_block(op, name=op.name), ""]
    for module, name in SIGNATURE_METHODS:
        methods += [*signature_method_block(module, name), ""]
    handles = "".join(f"{alias}_any: Any = None\n" for alias in ALIASES.values())
    methods = [*broadcast_protocol_methods(), "", *masked_by_methods(), "", *methods]
    return _METHODS_HEADER.replace("{handles}\n", handles) + "\n".join(methods[:-1]) + "\n"


def _path(module: str) -> Path:
    return PACKAGE.joinpath(*module.split(".")).with_suffix(".py")


def _stale() -> dict[str, str]:
    """The new text of each generated module that differs from the table."""
    changed: dict[str, str] = {}
    for module, render in (
        (FUNCTIONS_MODULE, functions_module),
        (METHODS_MODULE, methods_module),
        (CREATION_MODULE, creation_module),
    ):
        path = _path(module)
        new = render()
        if not path.exists() or path.read_text() != new:
            changed[module] = new
    return changed


def write() -> list[str]:
    """Rewrite the stale generated blocks; the modules that changed."""
    changed = _stale()
    for module, text in changed.items():
        _path(module).write_text(text)
    return list(changed)


def check() -> list[str]:
    """The stale modules (empty when everything is up to date)."""
    return list(_stale())


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "--check" in args:
        modules = check()
        for m in modules:
            print(f"stale: shapegrad/{m.replace('.', '/')}.py (run python shapegrad/_typegen.py)")
        return 1 if modules else 0
    for m in write():
        print(f"wrote shapegrad/{m.replace('.', '/')}.py")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
