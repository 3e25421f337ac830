"""Order: sorting, ``topk``, ``argmax``/``argmin`` (index-valued results are untraced)."""

from __future__ import annotations

from typing import Any, Literal as L, Never, overload

from .._autodiff import NoTape
from .._dims import Open
from .._errors import ShapeError
from .._tensor import AnyTensor, Tensor, wrap
from .._torch_names import refuse_torch_keywords
from .._typevars import Z0, K, N, S, T
from . import shape as shp
from ._toolkit import checked_axis, integer
from .indexing import take_along_axis

__all__ = [
    "argmax",
    "argmin",
    "argsort",
    "sort",
    "topk",
]


# --------------------------------------------------------------------------- index-valued
def _index_result(x: AnyTensor, name: str, axis: int | None, keepdims: bool) -> Any:
    xp = x._backend.xp
    data = x._data
    if axis is None:
        out = getattr(xp, name)(xp.reshape(data, (-1,)))
        return wrap(xp.reshape(out, (1,) * x.ndim) if keepdims else out, x._backend)
    return wrap(getattr(xp, name)(data, axis=checked_axis(x, axis, name), keepdims=keepdims), x._backend)


@overload
def argmax(x: Tensor[Any, *S], axis: None = None, keepdims: L[False] = False) -> Tensor[NoTape]: ...
@overload
def argmax(x: Tensor[Any, *S, N], axis: L[-1], keepdims: L[False] = False) -> Tensor[NoTape, *S]: ...  # pyright: ignore[reportOverlappingOverload] -- the typed case first, the open fallback last
@overload
def argmax(x: Tensor[Any, *S, N], axis: L[-1], keepdims: L[True]) -> Tensor[NoTape, *S, L[1]]: ...
@overload
def argmax(x: Tensor[Any, N, *S], axis: L[0], keepdims: L[False] = False) -> Tensor[NoTape, *S]: ...
@overload
def argmax(x: Tensor[Any, N, K, *S], axis: L[1], keepdims: L[False] = False) -> Tensor[NoTape, N, *S]: ...
@overload
def argmax(
    x: Tensor[Any, *S], axis: int | None = None, keepdims: bool = False
) -> Tensor[NoTape, *tuple[Open, ...]]: ...
def argmax(x: Any, axis: int | None = None, keepdims: bool = False, **torch_keywords: Never) -> Any:
    """Where the largest value is along ``axis`` (over all values, flattened, when None):
    an untraced integer tensor, typed at a literal axis. PyTorch: ``torch.argmax``."""
    if torch_keywords:
        refuse_torch_keywords("argmax", torch_keywords)
    return _index_result(x, "argmax", axis, keepdims)


# The same overloads as argmax: an index reduction's shape rule.
@overload
def argmin(x: Tensor[Any, *S], axis: None = None, keepdims: L[False] = False) -> Tensor[NoTape]: ...
@overload
def argmin(x: Tensor[Any, *S, N], axis: L[-1], keepdims: L[False] = False) -> Tensor[NoTape, *S]: ...  # pyright: ignore[reportOverlappingOverload] -- the typed case first, the open fallback last
@overload
def argmin(x: Tensor[Any, *S, N], axis: L[-1], keepdims: L[True]) -> Tensor[NoTape, *S, L[1]]: ...
@overload
def argmin(x: Tensor[Any, N, *S], axis: L[0], keepdims: L[False] = False) -> Tensor[NoTape, *S]: ...
@overload
def argmin(x: Tensor[Any, N, K, *S], axis: L[1], keepdims: L[False] = False) -> Tensor[NoTape, N, *S]: ...
@overload
def argmin(
    x: Tensor[Any, *S], axis: int | None = None, keepdims: bool = False
) -> Tensor[NoTape, *tuple[Open, ...]]: ...
def argmin(x: Any, axis: int | None = None, keepdims: bool = False, **torch_keywords: Never) -> Any:
    """Where the smallest value is along ``axis`` (untraced integers), typed at a literal
    axis. PyTorch: ``torch.argmin``."""
    if torch_keywords:
        refuse_torch_keywords("argmin", torch_keywords)
    return _index_result(x, "argmin", axis, keepdims)


def argsort(
    x: Tensor[Any, *S], axis: int = -1, descending: bool = False, **torch_keywords: Never
) -> Tensor[NoTape, *S]:
    """The indices that sort ``x`` along ``axis`` (stable: equal values keep their order;
    descending, NaN first; untraced). PyTorch: ``torch.argsort(x, axis, descending, stable=True)``."""
    if torch_keywords:
        refuse_torch_keywords("argsort", torch_keywords)
    xp = x._backend.xp
    a = checked_axis(x, axis, "argsort")
    data = x._data
    if data.ndim == 0:  # NumPy's argsort of a rank-0 array has shape (1,); PyTorch's is rank 0
        return wrap(xp.zeros((), dtype=xp.int64), x._backend)
    if data.dtype == xp.bool:  # the array API sorts numbers only
        data = xp.astype(data, xp.uint8)
    if not descending:
        return wrap(xp.argsort(data, axis=a, stable=True), x._backend)
    # The ascending order of the reversed axis, reversed: descending, with equal values in
    # their first order. Not an ascending sort of -x, which is wrong for unsigned 0 (and
    # int64's minimum, its own negation), refused for booleans, and puts NaN last.
    backwards = xp.argsort(xp.flip(data, axis=a), axis=a, stable=True)
    return wrap((data.shape[a] - 1) - xp.flip(backwards, axis=a), x._backend)


def _to_last(x: AnyTensor, axis: int, op: str) -> tuple[Any, int]:
    """``x`` with ``axis`` moved last (a differentiable swap), and that axis's index."""
    a = checked_axis(x, axis, op)
    last = x.ndim - 1
    return (x if a == last else shp.swapaxes(x, a, last)), a


def _from_last(y: Any, a: int) -> Any:
    last = y.ndim - 1
    return y if a == last else shp.swapaxes(y, a, last)


def sort(x: Tensor[T, *S], axis: int = -1, descending: bool = False, **torch_keywords: Never) -> Tensor[T, *S]:
    """The values sorted along ``axis``; differentiable (each value's gradient goes back to
    where it came from). PyTorch: ``torch.sort(x, axis).values``."""
    if torch_keywords:
        refuse_torch_keywords("sort", torch_keywords)
    moved, a = _to_last(x, axis, "sort")
    return _from_last(take_along_axis(moved, argsort(moved, -1, descending)), a)


# A literal k (in sg.LiteralSize) or a sg.Dim is the new axis's size; a plain int is Open.
@overload
def topk(x: Tensor[T, *S, N], k: Z0, axis: L[-1] = -1) -> tuple[Tensor[T, *S, Z0], Tensor[NoTape, *S, Z0]]: ...  # pyright: ignore[reportOverlappingOverload] -- a literal or sg.Dim count first, a plain int (Open) next
@overload
def topk(x: Tensor[T, *S, N], k: int, axis: L[-1] = -1) -> tuple[Tensor[T, *S, Open], Tensor[NoTape, *S, Open]]: ...
@overload
def topk(
    x: Tensor[T, *S], k: int, axis: int = -1
) -> tuple[Tensor[T, *tuple[Any, ...]], Tensor[NoTape, *tuple[Any, ...]]]: ...
def topk(x: Any, k: int, axis: int = -1, **torch_keywords: Never) -> Any:
    """The ``k`` largest values along ``axis``, largest first, and their indices; the
    values are differentiable. Along the last axis the other dims are kept, and the ``k``
    axis is ``k``'s size where the type says it (a literal or a ``sg.Dim``), else open. PyTorch: ``torch.topk(x, k, axis)``."""
    if torch_keywords:
        refuse_torch_keywords("topk", torch_keywords)
    k = integer("topk", "k", k)
    moved, a = _to_last(x, axis, "topk")
    if not 0 <= k <= moved.shape[-1]:
        raise ShapeError(f"topk: k={k} is out of range for an axis of size {moved.shape[-1]}")
    indices: Any = argsort(moved, -1, descending=True)[..., :k]
    return _from_last(take_along_axis(moved, indices), a), _from_last(indices, a)
