"""Broadcasting as protocols: the first overloads of a binary function form (``sg.add``,
``sg.sub``, ...) check the common patterns through a method of ``Tensor`` that only the type
checker sees (generated into ``_tensor_ops.py``'s ``TensorOps`` by ``_typegen``, from the
patterns of the union overloads that follow them).

Why: pyright evaluates a nested argument once per overload it tries, with that overload's
parameter as its expected type; an ordinary overload's tensor parameter hands the nested call
an expected type that the nested call's own overloads are solved against, each giving the
next level new expected types, and past pyright's 8 cached types per expression every level
multiplies the work (``sg.sub(1.0, sg.sub(1.0, ...))`` took 20 s at depth 4). A protocol
parameter is an expected type no overload's result is solved against, and the other operand's
parameter is a bare type variable: every level is evaluated with the same few expected types,
so the time grows linearly with the depth, the nested operand on either side
(``tests/test_typing_speed.py``). The patterns:

- ``RightOf``: the same shape, a vector, a keepdims reduction, a rank-0 tensor or a number on
  the left (each failed overload costs the nested operand one more evaluation per level, so the
  right operand's patterns are one protocol, not two);
- ``LeftOfBroadcast``: the same shape, a bias, a keepdims reduction, a rank-0 tensor or a
  number on the right;
- ``OpenRightOf``, ``OpenLeftOf``: ``Open`` against a typed dim, the right operand the
  receiver, then the left.

Each matches a rank-0 receiver too (losses combined in function forms): without that, a rank-0
operand nested 8 deep took 19 minutes. The result is one type variable, the method's whole
return type: a protocol generic over the result's tape and dims (``Tensor[_Tape, *_Dims]``)
never matched in pyright 1.1.414, and then every nested level ran all the later overloads
(``sg.sub(y, sg.sub(y, ...))`` on ``Tensor[T, Batch, L[64]]``: 148 s at depth 5; on type-variable
dims those overloads fail fast, which hid it). The receiver's tape is the result's; the other
operand may be untraced (``NoTape`` is the bottom tape). Everything else (a rank broadcast, two tapes, an outer product, the
``(N, 1) op (N,)`` guard, an open rank) falls through to the table's overloads after these.

``MaskedBy`` types ``sg.where``'s mask (``Tensor._sg_masked_by``, generated from
``_typegen.WHERE_MASKS``): the mask is a bare type variable, the branch the receiver, so each
mask pattern is written once, not once per pair of branches.
"""

from __future__ import annotations

from typing import Protocol

from typing_extensions import TypeVar

__all__ = ["LeftOfBroadcast", "MaskedBy", "OpenLeftOf", "OpenRightOf", "RightOf"]

_Other = TypeVar("_Other", contravariant=True)
_Given = TypeVar("_Given", contravariant=True)
_Result = TypeVar("_Result", covariant=True)


class RightOf(Protocol[_Other, _Result]):
    """A right operand that a left operand ``_Other`` of its own shape, a vector, a keepdims
    reduction, a rank-0 tensor or a number meets."""

    def _sg_right_of(self, left: _Other, /) -> _Result: ...


class LeftOfBroadcast(Protocol[_Other, _Result]):
    """A left operand that a same-shape, bias, keepdims, rank-0 or number right operand
    ``_Other`` meets."""

    def _sg_left_of_broadcast(self, right: _Other, /) -> _Result: ...


class OpenRightOf(Protocol[_Other, _Result]):
    """A right operand that a left operand ``_Other`` of its rank meets with ``Open`` against
    a typed dim at some of the last four axes, on either side, the other axes the same
    (``conv(x) + x`` of a conv built from plain ints, ``h[:, 1:] + typed``): the result has the
    typed dims (open where a keepdims ``1`` meets ``Open``) and the receiver's tape. Third in
    a binary function form, after the common patterns, so that a nested call on either side
    is evaluated against a few fixed expected types (``_typegen._open_protocol`` says which
    receivers it takes, and why the typed ones come first). A protocol of its own so that the
    common patterns' ``RightOf`` stays short (pyright binds the receiver of each of a protocol
    method's overloads)."""

    def _sg_open_right_of(self, left: _Other, /) -> _Result: ...


class OpenLeftOf(Protocol[_Other, _Result]):
    """``OpenRightOf``'s mirror for a typed left operand (the receiver) that a right operand
    ``_Other`` of its rank, ``Open`` at some of the last four axes, meets; fourth in a binary
    function form."""

    def _sg_open_left_of(self, right: _Other, /) -> _Result: ...


class MaskedBy(Protocol[_Given, _Result]):
    """A branch of ``sg.where`` (``_Result``: its type) that the mask ``_Given`` broadcasts
    over: the mask of its shape, a keepdims column, a suffix (a causal ``(S, S)`` mask over
    ``(B, H, S, S)`` scores), a per-item mask, or an open rank on either side (an open-rank
    result).

    A protocol whose type parameters are whole types, not a ``TypeVarTuple``: pyright solves
    a protocol's parameters from the first overload whose ``self`` fits, then compares them
    with the expected ones, so the branch (which fixes every dim of the result) is the
    receiver and the mask, already known from the first argument, the checked parameter."""

    def _sg_masked_by(self, mask: _Given, /) -> _Result: ...
