"""Ops that move values without changing them: reshape, axis order, joins."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal as L, Never, cast, overload

import numpy as np

from .._autodiff import NoTape as NoTape
from .._bounded import remember
from .._dims import Open
from .._errors import ShapeError
from .._tensor import Tensor, record, wrap
from .._torch_names import refuse_torch_keywords
from .._typevars import Z0, Z1, Z2, Z3, A, B, C, D, K, N, S, T
from . import indexing as ix
from ._toolkit import FLOAT64, checked_axis, integer, integers, torch_promoted

__all__ = [
    "broadcast_to",
    "chunk",
    "concat",
    "expand_dims",
    "flatten",
    "flip",
    "narrow",
    "pad",
    "permute",
    "repeat",
    "reshape",
    "roll",
    "split",
    "squeeze",
    "stack",
    "swapaxes",
    "tile",
    "unflatten",
]


def reshape_backward(xp: Any, g: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    return (xp.reshape(g, shape),)


def reshape(x: Any, shape: Sequence[int]) -> Any:
    """The same values in ``shape`` (one entry may be -1). Sizes given as ``sg.Dim`` instances
    keep their classes in the result's type; plain ints give ``sg.Open`` dims (state them with
    ``sg.cast``).
    PyTorch: ``torch.reshape``."""
    if len(shape) == 1 and not isinstance(shape[0], int) and _is_sizes(shape[0]):  # pyright: ignore[reportUnnecessaryIsInstance] -- reshape((2, 3)) as well as reshape(2, 3)
        shape = tuple(shape[0])
    data = x._data
    source: tuple[int, ...] = data.shape
    plain = _plain_ints(shape)
    target = _targets.get((source, shape)) if plain else None  # pyright: ignore[reportArgumentType] -- a tuple of ints when plain
    if target is None:
        target = _reshape_target(x, shape)
        if plain:
            remember(_targets, (source, shape), target, _TARGETS_KEPT)  # pyright: ignore[reportArgumentType] -- a tuple of ints when plain
    out = x._backend.xp.reshape(data, target)
    return record(out, reshape_backward, (x,), (tuple(source),), x._backend)


# (source shape, sizes as given) -> the checked target shape, for plain-int sizes (see
# _plain_ints): a model reshapes with the same few sizes on every call.
_targets: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, ...]] = {}
_TARGETS_KEPT = 256


def _reshape_target(x: Any, shape: Sequence[int]) -> tuple[int, ...]:
    """``shape`` as ints, one -1 allowed, checked to hold ``x``'s elements; else ShapeError."""
    target = integers("reshape", "size", shape)
    known = math.prod(n for n in target if n != -1)
    if (
        target.count(-1) > 1
        or (-1 not in target and known != x.size)
        or (-1 in target and (known == 0 or x.size % known))
    ):
        raise ShapeError(f"reshape: cannot view shape {x.shape} ({x.size} elements) as {target}")
    return target


def _is_sizes(value: Any) -> bool:
    """Whether a lone argument of reshape or broadcast_to is its sizes, ``reshape((2, 3))``,
    not one size that is no integer (a float, a tensor), refused by name later."""
    return not isinstance(value, (np.integer, float, Tensor))


def flatten(x: Any, start_dim: Any = 1, /) -> Any:
    """Every axis after the first merged into one: ``(B, C, H, W)`` becomes
    ``(B, Prod[C, H, W])`` in the type. PyTorch: ``torch.flatten(x, 1)``; ``start_dim`` may be
    given, as 1 only (PyTorch's ``x.flatten()``, start 0, is ``x.reshape(-1)`` here)."""
    if start_dim != 1 or type(start_dim) is not int:
        raise ShapeError(
            f"flatten keeps the first axis (PyTorch's flatten(x, 1)): start_dim 1 only, found {start_dim!r}; "
            "PyTorch's x.flatten() or flatten(0) is x.reshape(-1) here, other ranges x.reshape(...)"
        )
    if x.ndim < 1:
        raise ShapeError("flatten expects a tensor of rank >= 1, found rank 0")
    return reshape(x, (x.shape[0], -1 if x.shape[0] else math.prod(x.shape[1:])))


def permute_backward(xp: Any, g: Any, axes: tuple[int, ...]) -> tuple[Any, ...]:
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return (xp.permute_dims(g, tuple(inverse)),)


# (axes as given, rank) -> the order they name, for plain-int axes that passed
# :func:`_permutation`: a model permutes with the same few orders on every call (attention's
# heads), and checking one costs more than the permuted view itself.
_orders: dict[tuple[tuple[int, ...], int], tuple[int, ...]] = {}
_ORDERS_KEPT = 256


def _permutation(x: Any, axes: Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """The order ``axes`` names over ``ndim`` axes (reversed when None), or ShapeError."""
    if axes and len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(cast(Sequence[int], axes[0]))  # the method's x.permute((0, 2, 1)), as PyTorch's
    given = integers("permute", "axis", axes) if axes else ()
    order = tuple(reversed(range(ndim))) if not given else tuple(a % ndim if ndim else a for a in given)
    if sorted(order) != list(range(ndim)) or any(not -ndim <= a < ndim for a in given):
        hint = ""
        if len(given) == 2 and ndim > 2:  # PyTorch's transpose(1, 2): the message pyright gives too
            hint = (
                f"; x.transpose(a, b) with two axes is PyTorch's swap, shapegrad's transpose, as NumPy's, takes "
                f"every axis in its new order: write x.swapaxes{tuple(given)}"
            )
        raise ShapeError(f"permute: {tuple(axes or ())} is not an ordering of the {ndim} axes of shape {x.shape}{hint}")
    return order


def _plain_ints(axes: Any) -> bool:
    # Only a tuple of ints keys the cache: its value cannot change after it is checked (a
    # 0-d tensor or an array among the axes could), and comparing keys stays int with int.
    return axes.__class__ is tuple and all(a.__class__ is int for a in axes)


def permute(x: Any, axes: Sequence[int] | None) -> Any:
    """Axes in the order ``axes`` gives (reversed when None). PyTorch: ``Tensor.permute``."""
    data = x._data
    ndim = data.ndim
    plain = _plain_ints(axes)
    order = _orders.get((axes, ndim)) if plain else None  # pyright: ignore[reportArgumentType] -- a tuple of ints when plain
    if order is None:
        order = _permutation(x, axes, ndim)
        if plain:
            remember(_orders, (axes, ndim), order, _ORDERS_KEPT)  # pyright: ignore[reportArgumentType] -- a tuple of ints when plain
    out = x._backend.xp.permute_dims(data, order)
    return record(out, permute_backward, (x,), (order,), x._backend)


@overload
def swapaxes(x: Tensor[T, *S, N, K], axis1: L[-2], axis2: L[-1]) -> Tensor[T, *S, K, N]: ...  # pyright: ignore[reportOverlappingOverload] -- the typed case goes first, the open fallback last
@overload
def swapaxes(x: Tensor[T, *S, N, K], axis1: L[-1], axis2: L[-2]) -> Tensor[T, *S, K, N]: ...
@overload
def swapaxes(x: Tensor[T, A, N, K, *S], axis1: L[1], axis2: L[2]) -> Tensor[T, A, K, N, *S]: ...
@overload
def swapaxes(x: Tensor[T, A, N, K, *S], axis1: L[2], axis2: L[1]) -> Tensor[T, A, K, N, *S]: ...
@overload
def swapaxes(x: Tensor[T, N, K, *S], axis1: L[0], axis2: L[1]) -> Tensor[T, K, N, *S]: ...
@overload
def swapaxes(x: Tensor[T, N, K, *S], axis1: L[1], axis2: L[0]) -> Tensor[T, K, N, *S]: ...
@overload
def swapaxes(x: Tensor[T, *S], axis1: int, axis2: int) -> Tensor[T, *tuple[Open, ...]]: ...
def swapaxes(x: Tensor[T, *S], axis1: int, axis2: int) -> Any:
    """Two axes exchanged. PyTorch: ``torch.swapaxes``. Typed at the literal pairs models use
    (``-2, -1``: the last two, a key's transpose; ``1, 2``: heads and positions; ``0, 1``);
    other axes give open dims."""
    axis1, axis2 = integer("swapaxes", "axis1", axis1), integer("swapaxes", "axis2", axis2)
    order = list(range(x.ndim))
    try:
        order[axis1], order[axis2] = order[axis2], order[axis1]
    except IndexError:
        raise ShapeError(f"swapaxes: axes {axis1}, {axis2} out of range for shape {x.shape}") from None
    return permute(x, tuple(order))  # a tuple: permute caches the orders it has checked


def swap_last(x: Tensor[T, *S, N, Any]) -> Any:
    """The last two axes swapped."""
    if x.ndim < 2:
        raise ShapeError(f"mT expects a tensor of rank >= 2, found shape {x.shape}")
    return swapaxes(x, -1, -2)


def expand_dims(x: Any, axis: int | None = None) -> Any:
    """A new size-1 axis at ``axis``. PyTorch: ``torch.unsqueeze``."""
    if axis is None:  # (None: no axis given, so that PyTorch's dim= reaches the function form's refusal)
        refuse_torch_keywords("expand_dims", {})
    axis = integer("expand_dims", "axis", axis)
    shape = list(x.shape)
    position = axis if axis >= 0 else len(shape) + 1 + axis
    if not 0 <= position <= len(shape):
        raise ShapeError(f"expand_dims: axis {axis} out of range for shape {x.shape}")
    shape.insert(position, 1)
    return reshape(x, shape)


def squeeze(x: Any, axis: int | None = None, *, any_axis: int | None = None) -> Any:
    """Size-1 axes removed (only ``axis`` when given). A literal axis is typed (and one that
    is not size 1 in the type is an error); a computed axis goes by keyword, ``any_axis=i``.
    PyTorch: ``torch.squeeze``."""
    shape = x.shape
    if any_axis is not None:
        axis = any_axis
    if axis is None:
        return reshape(x, [n for n in shape if n != 1])
    axis = integer("squeeze", "axis", axis)
    if not -len(shape) <= axis < len(shape) or shape[axis] != 1:
        raise ShapeError(f"squeeze: axis {axis} of shape {shape} is expected to have size 1")
    kept = list(shape)
    del kept[axis]
    return reshape(x, kept)


def broadcast_backward(xp: Any, g: Any) -> tuple[Any, ...]:
    return (g,)  # the engine sums the broadcast axes back


@overload
def broadcast_to(x: Tensor[T, *S], shape: tuple[Z0]) -> Tensor[T, Z0]: ...  # pyright: ignore[reportOverlappingOverload] -- the typed case goes first, the open fallback last
@overload
def broadcast_to(x: Tensor[T, *S], shape: tuple[Z0, Z1]) -> Tensor[T, Z0, Z1]: ...
@overload
def broadcast_to(x: Tensor[T, *S], shape: tuple[Z0, Z1, Z2]) -> Tensor[T, Z0, Z1, Z2]: ...
@overload
def broadcast_to(x: Tensor[T, *S], shape: tuple[Z0, Z1, Z2, Z3]) -> Tensor[T, Z0, Z1, Z2, Z3]: ...
@overload
def broadcast_to(x: Tensor[T, *S], shape: Sequence[int]) -> Tensor[T, *tuple[Open, ...]]: ...
def broadcast_to(x: Tensor[T, *S], shape: Sequence[int]) -> Tensor[T, *tuple[Any, ...]]:
    """The values repeated along new or size-1 axes; sizes that are ``sg.Dim`` instances or
    literals keep their types (``sg.broadcast_to(x, (b, 32))``). PyTorch: ``Tensor.expand``."""
    if len(shape) == 1 and not isinstance(shape[0], int) and _is_sizes(shape[0]):  # pyright: ignore[reportUnnecessaryIsInstance] -- broadcast_to((2, 3)) from untyped callers
        shape = tuple(shape[0])
    target = integers("broadcast_to", "size", shape)
    try:
        out = x._backend.xp.broadcast_to(x._data, target)
    except ValueError as exc:
        fits = len(target) >= x.ndim and all(
            n in (1, m) for n, m in zip(reversed(x.shape), reversed(target), strict=False)
        )
        if fits:  # NumPy's "iterator is too large": the shapes broadcast, the result is too big
            raise ShapeError(
                f"broadcast_to: shape {x.shape} broadcasts to {target}, but that result's "
                f"{math.prod(target)} values are more than {x.backend} can hold ({exc})"
            ) from None
        raise ShapeError(f"broadcast_to: shape {x.shape} cannot broadcast to {target}") from None
    return record(out, broadcast_backward, (x,), (), x._backend)


def repeat(x: Tensor[T, *S], *reps: int | Sequence[int]) -> Tensor[T, *tuple[Open, ...]]:
    """``x`` repeated ``reps[i]`` times along each axis; extra leading ``reps`` add new axes
    in front. Fewer ``reps`` than axes or a negative one is a ``ShapeError``, as in PyTorch
    (``sg.tile`` pads short ``reps`` with ones instead). The gradient sums the copies.
    PyTorch: ``Tensor.repeat`` (``x.repeat(2, 3)`` and ``sg.repeat(x, (2, 3))`` alike).

    Examples:
        >>> import shapegrad as sg
        >>> sg.repeat(sg.tensor([1, 2]), 2, 2).tolist()
        [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    first = reps[0] if len(reps) == 1 else None
    # repeat((2, 3)) as well as repeat(2, 3), as PyTorch takes both
    counts = integers("repeat", "count", first if isinstance(first, Sequence) else cast("tuple[int, ...]", reps))
    if len(counts) < x.ndim or any(r < 0 for r in counts):
        raise ShapeError(
            f"repeat expects one non-negative count per axis of shape {x.shape} (at least {x.ndim}), found {counts}"
        )
    shape = (1,) * (len(counts) - x.ndim) + x.shape
    # Each axis n becomes (r, n): a broadcast along a new size-r axis, then merged, so the
    # copies share one backward (the engine sums the broadcast axis).
    spread: list[int] = []
    target: list[int] = []
    for r, n in zip(counts, shape, strict=True):
        spread += [1, n]
        target += [r, n]
    expanded = broadcast_to(reshape(x, tuple(spread)), tuple(target))
    return reshape(expanded, tuple(r * n for r, n in zip(counts, shape, strict=True)))


def concat_backward(xp: Any, g: Any, axis: int, bounds: tuple[int, ...]) -> tuple[Any, ...]:
    parts: list[Any] = []
    index: list[Any] = [slice(None)] * g.ndim
    for start, stop in zip(bounds[:-1], bounds[1:], strict=False):
        index[axis] = slice(start, stop)
        parts.append(g[tuple(index)])
    return tuple(parts)


def concat(tensors: Sequence[Any], axis: int = 0, *, any_axis: int | None = None) -> Any:
    """Tensors joined along an existing ``axis``: the other dims must agree (in the type, at a
    literal axis 0, 1 or -1), the joined size is ``sg.Open`` (state it with ``sg.cast``). A
    computed axis goes by keyword, ``any_axis=i``. PyTorch: ``torch.cat``."""
    if any_axis is not None:
        axis = any_axis
    axis = integer("concat", "axis", axis)
    if not tensors:
        raise ShapeError("concat expects at least one tensor, found none")
    first = tensors[0]
    backend = first._backend
    ndim = first.ndim
    if not -ndim <= axis < ndim:
        raise ShapeError(f"concat: axis {axis} out of range for rank {ndim}")
    axis %= ndim
    for i, t in enumerate(tensors):
        if t._backend is not backend:
            from .._errors import BackendError

            raise BackendError(f"concat: tensor {i} is on backend {t.backend!r}, expected {first.backend!r}")
        if t.ndim != ndim or any(
            a != b for j, (a, b) in enumerate(zip(t.shape, first.shape, strict=False)) if j != axis
        ):
            raise ShapeError(
                f"concat along axis {axis}: tensor {i} has shape {t.shape}, expected {first.shape} on every other axis"
            )
    bounds = [0]
    for t in tensors:
        bounds.append(bounds[-1] + t.shape[axis])
    parts = [t._data for t in tensors]
    out = backend.xp.concat(parts, axis=axis)
    if out.dtype is FLOAT64:  # integer tensors joined with float ones: PyTorch's float dtype

        def join(*arrays: Any) -> Any:
            return backend.xp.concat(list(arrays), axis=axis)

        out, _ = torch_promoted(backend.xp, out, parts, join)
    return record(out, concat_backward, tuple(tensors), (axis, tuple(bounds)), backend)


def stack(tensors: Sequence[Any], axis: int = 0, *, any_axis: int | None = None) -> Any:
    """Tensors of one shape joined along a new ``axis`` (typed at a literal 0, 1 or -1, where
    the new axis is ``sg.Open``; a computed axis goes by keyword, ``any_axis=i``).
    PyTorch: ``torch.stack``."""
    if any_axis is not None:
        axis = any_axis
    axis = integer("stack", "axis", axis)
    if not tensors:
        raise ShapeError("stack expects at least one tensor, found none")
    shape = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != shape:
            raise ShapeError(f"stack: tensor {i} has shape {t.shape}, expected {shape} like tensor 0")
    return concat([expand_dims(t, axis) for t in tensors], any_axis=axis)


# --------------------------------------------------------------------------- primitives
def flip_backward(xp: Any, g: Any, axis: int) -> tuple[Any, ...]:
    return (xp.flip(g, axis=axis),)


# An axis with no default (PyTorch's ``dim``, required there too): the first overload is the
# op, the second the same with PyTorch's keywords gathered and typed ``Never`` (so pyright
# reports ``dim=``, as for the ops whose axis has a default); the implementation takes None for
# the axis so that ``dim=`` reaches ``refuse_torch_keywords`` (a KeywordError naming ``axis=``)
# instead of Python's missing-argument error.
@overload
def flip(x: Tensor[T, *S], axis: int) -> Tensor[T, *S]: ...
@overload
def flip(x: Tensor[T, *S], axis: int, **torch_keywords: Never) -> Tensor[T, *S]: ...
def flip(x: Tensor[T, *S], axis: int | None = None, **torch_keywords: Never) -> Tensor[T, *S]:
    """The values in reverse order along ``axis``. d/dx: the gradient flipped back.
    PyTorch: ``torch.flip(x, (axis,))``."""
    if torch_keywords or axis is None:
        refuse_torch_keywords("flip", torch_keywords)
    a = checked_axis(x, axis, "flip")
    return record(x._backend.xp.flip(x._data, axis=a), flip_backward, (x,), (a,), x._backend)


def roll_backward(xp: Any, g: Any, shift: int, axis: int) -> tuple[Any, ...]:
    return (xp.roll(g, -shift, axis=axis),)


@overload
def roll(x: Tensor[T, *S], shift: int, axis: int) -> Tensor[T, *S]: ...
@overload
def roll(x: Tensor[T, *S], shift: int, axis: int, **torch_keywords: Never) -> Tensor[T, *S]: ...
def roll(x: Tensor[T, *S], shift: int | None = None, axis: int | None = None, **torch_keywords: Never) -> Tensor[T, *S]:
    """The values shifted by ``shift`` along ``axis``, wrapping around. d/dx: rolled back.
    PyTorch: ``torch.roll`` (with ``axis`` required: PyTorch's default flattens)."""
    if torch_keywords or shift is None or axis is None:  # roll(x, shifts=1, dims=0): PyTorch's names
        refuse_torch_keywords("roll", torch_keywords, "shift" if shift is None else "axis")
    a = checked_axis(x, axis, "roll")
    shift = integer("roll", "shift", shift)
    return record(x._backend.xp.roll(x._data, shift, axis=a), roll_backward, (x,), (shift, a), x._backend)


# --------------------------------------------------------------------------- pieces (composite)


@overload
def narrow(x: Tensor[T, *S], axis: int, start: int, length: int) -> Tensor[T, *tuple[Open, ...]]: ...
@overload
def narrow(
    x: Tensor[T, *S], axis: int, start: int, length: int, **torch_keywords: Never
) -> Tensor[T, *tuple[Open, ...]]: ...
def narrow(
    x: Tensor[T, *S],
    axis: int | None = None,
    start: int | None = None,
    length: int | None = None,
    **torch_keywords: Never,
) -> Tensor[T, *tuple[Open, ...]]:
    """``length`` values from ``start`` along ``axis``. PyTorch: ``torch.narrow``."""
    if torch_keywords or axis is None or start is None or length is None:
        missing = "axis" if axis is None else "start" if start is None else "length"
        refuse_torch_keywords("narrow", torch_keywords, missing)
    a = checked_axis(x, axis, "narrow")
    start, length = integer("narrow", "start", start), integer("narrow", "length", length)
    if start < 0 or length < 0 or start + length > x.shape[a]:
        raise ShapeError(f"narrow: [{start}, {start + length}) does not fit axis {a} of size {x.shape[a]}")
    return ix.slice_along(x, a, start, start + length)


@overload
def split(x: Tensor[T, N, *S], size_or_sizes: int | list[int], axis: L[0] = 0) -> tuple[Tensor[T, Open, *S], ...]: ...  # pyright: ignore[reportOverlappingOverload] -- the typed case goes first, the open fallback last
@overload
def split(x: Tensor[T, *S, N], size_or_sizes: int | list[int], axis: L[-1]) -> tuple[Tensor[T, *S, Open], ...]: ...
@overload
def split(x: Tensor[T, N, K, *S], size_or_sizes: int | list[int], axis: L[1]) -> tuple[Tensor[T, N, Open, *S], ...]: ...
@overload
def split(
    x: Tensor[T, N, K, A, *S], size_or_sizes: int | list[int], axis: L[2]
) -> tuple[Tensor[T, N, K, Open, *S], ...]: ...
@overload
def split(
    x: Tensor[T, *S, K, N], size_or_sizes: int | list[int], axis: L[-2]
) -> tuple[Tensor[T, *S, Open, N], ...]: ...
@overload
def split(
    x: Tensor[T, *S], size_or_sizes: int | list[int], axis: int = 0
) -> tuple[Tensor[T, *tuple[Open, ...]], ...]: ...
def split(x: Any, size_or_sizes: int | list[int], axis: int = 0, **torch_keywords: Never) -> Any:
    """Pieces along ``axis``: of ``size`` each (the last may be smaller), or of the given
    sizes (which must add up to the axis). Each piece is differentiable; at a literal axis
    the other dims are kept (the split axis is open). PyTorch: ``torch.split``."""
    if torch_keywords:
        refuse_torch_keywords("split", torch_keywords)
    a = checked_axis(x, axis, "split")
    n = x.shape[a]
    if not isinstance(size_or_sizes, (list, tuple)):
        size = integer("split", "piece size", size_or_sizes)
        if size < 1:
            raise ShapeError(f"split expects a piece size of at least 1, found {size}")
        sizes = [min(size, n - start) for start in range(0, n, size)]
    else:
        sizes = list(integers("split", "size", size_or_sizes))
        if sum(sizes) != n:
            raise ShapeError(f"split: sizes {sizes} add up to {sum(sizes)}, expected axis {a}'s size {n}")
    pieces: list[Any] = []
    start = 0
    for size in sizes:
        pieces.append(ix.slice_along(x, a, start, start + size))
        start += size
    return tuple(pieces)


@overload
def chunk(x: Tensor[T, N, *S], chunks: int, axis: L[0] = 0) -> tuple[Tensor[T, Open, *S], ...]: ...  # pyright: ignore[reportOverlappingOverload] -- the typed case goes first, the open fallback last
@overload
def chunk(x: Tensor[T, *S, N], chunks: int, axis: L[-1]) -> tuple[Tensor[T, *S, Open], ...]: ...
@overload
def chunk(x: Tensor[T, N, K, *S], chunks: int, axis: L[1]) -> tuple[Tensor[T, N, Open, *S], ...]: ...
@overload
def chunk(x: Tensor[T, N, K, A, *S], chunks: int, axis: L[2]) -> tuple[Tensor[T, N, K, Open, *S], ...]: ...
@overload
def chunk(x: Tensor[T, *S, K, N], chunks: int, axis: L[-2]) -> tuple[Tensor[T, *S, Open, N], ...]: ...
@overload
def chunk(x: Tensor[T, *S], chunks: int, axis: int = 0) -> tuple[Tensor[T, *tuple[Open, ...]], ...]: ...
def chunk(x: Any, chunks: int, axis: int = 0, **torch_keywords: Never) -> Any:
    """``chunks`` pieces along ``axis`` of ``ceil(n / chunks)`` values (fewer pieces when the
    axis is short); at a literal axis the other dims are kept. PyTorch: ``torch.chunk``."""
    if torch_keywords:
        refuse_torch_keywords("chunk", torch_keywords)
    chunks = integer("chunk", "number of chunks", chunks)
    if chunks < 1:
        raise ShapeError(f"chunk expects a number of chunks >= 1, found {chunks!r}")
    n = x.shape[checked_axis(x, axis, "chunk")]
    return split(x, max(1, -(-n // chunks)), axis)


@overload
def unflatten(x: Tensor[T, *S], axis: int, sizes: tuple[int, ...]) -> Tensor[T, *tuple[Open, ...]]: ...
@overload
def unflatten(
    x: Tensor[T, *S], axis: int, sizes: tuple[int, ...], **torch_keywords: Never
) -> Tensor[T, *tuple[Open, ...]]: ...
def unflatten(
    x: Tensor[T, *S], axis: int | None = None, sizes: tuple[int, ...] | None = None, **torch_keywords: Never
) -> Tensor[T, *tuple[Open, ...]]:
    """Axis ``axis`` split into ``sizes`` (one may be -1). PyTorch: ``torch.unflatten``."""
    if torch_keywords or axis is None or sizes is None:
        refuse_torch_keywords("unflatten", torch_keywords, "axis" if axis is None else "sizes")
    a = checked_axis(x, axis, "unflatten")
    shape = x.shape
    return reshape(x, (*shape[:a], *integers("unflatten", "size", sizes), *shape[a + 1 :]))


def tile(x: Tensor[T, *S], reps: tuple[int, ...]) -> Tensor[T, *tuple[Open, ...]]:
    """``x`` repeated ``reps[i]`` times along each axis (NumPy's ``tile``: fewer ``reps``
    than axes repeat the last axes, ``sg.repeat`` refuses that as PyTorch does); the
    gradient sums the copies."""
    counts = integers("tile", "count", reps)
    return repeat(x, (1,) * (x.ndim - len(counts)) + counts)


# Padding keeps the rank. An axis whose pair is a literal (0, 0) keeps its dim (a reflection
# pad of an image's height and width keeps its batch and channels, for the convolution after
# it); every other axis is Open.
_NoPad = tuple[L[0], L[0]]
_Pair = tuple[int, int]


@overload
def pad(  # pyright: ignore[reportOverlappingOverload] -- the typed cases first, the open fallback last
    x: Tensor[T, N, K, A, B],
    widths: tuple[_NoPad, _NoPad, _Pair, _Pair],
    mode: str = "constant",
    value: float = 0.0,
) -> Tensor[T, N, K, Open, Open]: ...
@overload
def pad(  # pyright: ignore[reportOverlappingOverload] -- the typed cases first, the open fallback last
    x: Tensor[T, N, K, A], widths: tuple[_NoPad, _NoPad, _Pair], mode: str = "constant", value: float = 0.0
) -> Tensor[T, N, K, Open]: ...
@overload
def pad(  # pyright: ignore[reportOverlappingOverload] -- the typed cases first, the open fallback last
    x: Tensor[T, N, A], widths: tuple[_NoPad, _Pair], mode: str = "constant", value: float = 0.0
) -> Tensor[T, N, Open]: ...
@overload
def pad(x: Tensor[T, A], widths: Any, mode: str = "constant", value: float = 0.0) -> Tensor[T, Open]: ...
@overload
def pad(x: Tensor[T, A, B], widths: Any, mode: str = "constant", value: float = 0.0) -> Tensor[T, Open, Open]: ...
@overload
def pad(
    x: Tensor[T, A, B, C], widths: Any, mode: str = "constant", value: float = 0.0
) -> Tensor[T, Open, Open, Open]: ...
@overload
def pad(
    x: Tensor[T, A, B, C, D], widths: Any, mode: str = "constant", value: float = 0.0
) -> Tensor[T, Open, Open, Open, Open]: ...
@overload
def pad(x: Tensor[T, *S], widths: Any, mode: str = "constant", value: float = 0.0) -> Tensor[T, *tuple[Open, ...]]: ...
def pad(x: Any, widths: Any, mode: str = "constant", value: float = 0.0) -> Any:
    """``x`` padded by ``widths`` (NumPy's: one ``(before, after)`` pair per axis, or one pair
    for every axis): with ``value`` (``"constant"``), the edge value (``"replicate"``) or the
    values mirrored at the edge (``"reflect"``); a negative width removes that many values
    first (as PyTorch). Differentiable. The rank is kept; an axis
    padded by a literal ``(0, 0)`` keeps its dim. PyTorch: ``F.pad``, whose flat ``pad``
    lists the *last* axis first: ``F.pad(x, (1, 1, 2, 2))`` on ``(B, C, H, W)`` is
    ``sg.pad(x, ((0, 0), (0, 0), (2, 2), (1, 1)))``; a flat pair here pads every axis, as
    NumPy's ``np.pad(x, (1, 1))``."""
    if not isinstance(widths[0], (tuple, list)) and len(widths) != 2:
        raise ShapeError(
            f"pad expects (before, after) pairs, one per axis ({x.ndim}), or one pair for every axis; found "
            f"{tuple(widths)!r}. PyTorch's flat F.pad(x, (left, right, top, bottom)) lists the last axis first: "
            "here that is ((0, 0), ..., (top, bottom), (left, right))"
        )
    pairs = (
        [integers("pad", "width", w) for w in widths]
        if isinstance(widths[0], (tuple, list))
        else [integers("pad", "width", widths)] * x.ndim
    )
    if len(pairs) != x.ndim:
        raise ShapeError(f"pad expects one (before, after) pair per axis ({x.ndim}), found {len(pairs)}")
    if mode not in ("constant", "replicate", "reflect"):
        raise ShapeError(f"pad mode must be 'constant', 'replicate' or 'reflect', found {mode!r}")
    out: Any = x
    for axis, (before, after) in enumerate(pairs):
        if before == 0 and after == 0:
            continue
        n = out.shape[axis]
        if before < 0 or after < 0:  # a negative width crops that side first, as PyTorch
            cut_before, cut_after = max(-before, 0), max(-after, 0)
            if cut_before + cut_after > n:
                raise ShapeError(f"pad of {before, after} crops more than the {n} values of axis {axis}")
            out = ix.slice_along(out, axis, cut_before, n - cut_after)
            before, after, n = max(before, 0), max(after, 0), n - cut_before - cut_after
            if before == 0 and after == 0:
                continue
        if mode == "reflect" and (before >= n or after >= n):
            raise ShapeError(
                f"reflect padding of {before, after} needs more than that many values on axis {axis} ({n})"
            )
        parts: list[Any] = []
        for width, at_start in ((before, True), (after, False)):
            if width == 0:
                parts.append(None)
                continue
            if mode == "constant":
                shape = list(out.shape)
                shape[axis] = width
                xp = out._backend.xp
                parts.append(wrap(xp.full(tuple(shape), value, dtype=out.dtype), out._backend))
            elif mode == "replicate":
                edge = ix.slice_along(out, axis, 0, 1) if at_start else ix.slice_along(out, axis, n - 1, n)
                shape = list(out.shape)
                shape[axis] = width
                parts.append(broadcast_to(edge, tuple(shape)))
            else:
                mirror = (
                    ix.slice_along(out, axis, 1, width + 1)
                    if at_start
                    else ix.slice_along(out, axis, n - 1 - width, n - 1)
                )
                parts.append(flip(mirror, axis))
        pieces = [p for p in (parts[0], out, parts[1]) if p is not None]
        out = concat(pieces, any_axis=axis)
    return out
