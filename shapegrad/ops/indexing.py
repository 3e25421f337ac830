"""Indexing, slicing and gathers (embeddings, picking the logit of each label)."""

from __future__ import annotations

from typing import Any, Never, cast, overload

import numpy as np

from .._autodiff import NoTape, wants_grad
from .._backend import same_backend
from .._device_checks import require_in_range
from .._dims import Open
from .._errors import DTypeError, ShapeError
from .._tensor import AnyTensor, Tensor, record, wrap
from .._torch_names import refuse_torch_keywords
from .._typevars import Z0, K, N, S, T
from . import elementwise as ew, shape as shp
from ._toolkit import checked_axis, integer, keep_where, number_out_of_range, unary

__all__ = [
    "diag",
    "diagonal",
    "gather",
    "getitem",
    "masked_fill",
    "one_hot",
    "take_along_axis",
    "tril",
    "triu",
]


def _is_basic(index: tuple[Any, ...]) -> bool:
    return all(isinstance(i, (int, slice)) or i is None or i is Ellipsis for i in index)


def getitem_backward(
    xp: Any, g: Any, shape: tuple[int, ...], dtype: Any, index: Any, basic: bool, scatter: Any
) -> tuple[Any, ...]:
    full = xp.zeros(shape, dtype=dtype)
    if basic:
        full[index] = g
    else:
        scatter(full, index, g)
    return (full,)


def _raw_index(index: Any, x: AnyTensor) -> Any:
    if isinstance(index, Tensor):
        tensor = cast(AnyTensor, index)
        same_backend(x, tensor)
        return tensor._data
    if isinstance(index, tuple):
        return tuple(_raw_index(i, x) for i in cast(tuple[Any, ...], index))
    if isinstance(index, list):
        return x._backend.asarray(index, None)
    if isinstance(index, np.ndarray):
        # A copy: the backward pass scatters through the index, which the caller may refill
        # (a batch's ids) before it runs, unseen by any write counter.
        return cast("np.ndarray[Any, Any]", index).copy()
    return index


def index_tensors(index: Any) -> tuple[AnyTensor, ...]:
    """The tensors in an index (itself, or the items of a tuple): the backward pass reads
    their memory (``_raw_index`` uses their arrays as they are), so a write into one before
    it runs must be seen (``record``'s ``watch``)."""
    if isinstance(index, Tensor):
        return (cast(AnyTensor, index),)
    if isinstance(index, tuple):
        return tuple(cast(AnyTensor, i) for i in cast(tuple[Any, ...], index) if isinstance(i, Tensor))
    return ()


def _as_tuple(raw: Any) -> tuple[Any, ...]:
    return cast(tuple[Any, ...], raw) if isinstance(raw, tuple) else (raw,)


def _complete(raw: Any) -> Any:
    # NumPy fills missing trailing axes with ':'; the Array API wants that said with '...'.
    key = _as_tuple(raw)
    if any(k is Ellipsis for k in key):
        return raw
    if len(key) == 1 and getattr(key[0], "dtype", None) is not None and "bool" in str(key[0].dtype):
        return raw  # a lone boolean mask covers every axis it has
    return (*key, Ellipsis)


def _basic_key(index: Any) -> tuple[Any, ...] | None:
    """``index`` completed with ``...`` (as :func:`_complete` does) when every entry is a
    Python int, a slice of Python ints, ``None`` or ``...``, the common case (``x[:, :n]``,
    ``x[i]``); None for anything else, which takes the general path. Such an index needs no
    conversion and none of the checks: entries of these kinds are all valid, and NumPy
    refuses an int out of range with ``IndexError`` as CuPy does."""
    key: tuple[Any, ...] = cast(tuple[Any, ...], index) if type(index) is tuple else (index,)
    ellipsis = False
    for entry in key:
        if type(entry) is int or entry is None:
            continue
        if type(entry) is slice:
            start, stop, step = entry.start, entry.stop, entry.step
            if (
                (start is None or type(start) is int)
                and (stop is None or type(stop) is int)
                and (step is None or type(step) is int)
            ):
                continue
            return None
        if entry is Ellipsis:
            ellipsis = True
            continue
        return None  # a bool (a mask to NumPy), an array, a tensor, a list, a NumPy integer
    return key if ellipsis else (*key, Ellipsis)


def _kind(entry: Any) -> str:
    """One entry of a completed index: "int" (a Python or NumPy integer, a 0-d integer
    array: PyTorch applies these as basic indexing), "array" (an integer array of rank >= 1,
    a boolean array or a Python bool: advanced indices), "none", "ellipsis" or "slice"."""
    if entry is None:
        return "none"
    if entry is Ellipsis:
        return "ellipsis"
    if isinstance(entry, bool):
        return "array"
    if isinstance(entry, (int, np.integer)):
        return "int"
    if isinstance(entry, slice):
        return "slice"
    dtype = getattr(entry, "dtype", None)
    if dtype is not None and "bool" not in str(dtype) and getattr(entry, "ndim", 1) == 0:
        return "int"
    return "array"


def _used(key: tuple[Any, ...], kinds: list[str]) -> int:
    """How many axes of the indexed array the entries other than ``...`` use (a Python bool
    uses none: it makes a new axis, as ``None``)."""
    return sum(
        0 if k is True or k is False else _consumed(k) for k, c in zip(key, kinds, strict=True) if c != "ellipsis"
    )


def _block(key: tuple[Any, ...], kinds: list[str], advanced: set[str], ndim: int) -> tuple[int, bool]:
    """How many result dimensions come before those of the advanced indices (the entries
    of ``advanced`` kinds), and whether those entries are adjacent, NumPy's test; an entry
    of an ignored kind (PyTorch's integers) makes no result dimension and separates nothing.
    A ``None`` between them separates them, an ``...`` that covers an axis too."""
    used = _used(key, kinds)
    before = 0
    seen = gap = False
    for kind in kinds:
        if kind in advanced:
            if seen and gap:
                return before, False
            seen = True
        elif kind != "int":
            made = ndim - used if kind == "ellipsis" else 1
            if made and seen:
                gap = True
            elif made:
                before += made
    return before, True


def torch_axes(raw: Any, ndim: int) -> tuple[int, ...] | None:
    """The axes (for ``permute_dims``) that turn NumPy's result of ``array[raw]`` into
    PyTorch's, or None where the two agree (always, unless integers and advanced indices
    are mixed). NumPy counts an integer as an advanced index, so ``x[1, :, [0, 4]]`` puts
    the list's dimension first (the advanced indices are not adjacent); PyTorch applies the
    integer first, as basic indexing, and the list's dimension stays in place."""
    key = _as_tuple(raw)
    kinds = [_kind(k) for k in key]
    if "int" not in kinds or "array" not in kinds:
        return None
    np_at, np_adjacent = _block(key, kinds, {"int", "array"}, ndim)
    torch_at, torch_adjacent = _block(key, kinds, {"array"}, ndim)
    np_at = np_at if np_adjacent else 0
    torch_at = torch_at if torch_adjacent else 0
    if np_at == torch_at:
        return None
    block = max(
        (1 if (getattr(k, "dtype", None) is None or "bool" in str(k.dtype)) else k.ndim)
        for k, c in zip(key, kinds, strict=True)
        if c == "array"
    )
    used = _used(key, kinds)
    made = sum(ndim - used if c == "ellipsis" else 1 for c in kinds if c in ("slice", "none", "ellipsis"))
    rest = [a for a in range(block + made) if not np_at <= a < np_at + block]
    moved = list(range(np_at, np_at + block))
    return tuple(rest[:torch_at] + moved + rest[torch_at:])


def getitem(x: Tensor[T, *S], index: Any) -> Tensor[T, *tuple[Open, ...]]:
    """``x[index]``: ints, slices, ``None``, ``...``, integer or boolean tensors.
    The gradient lands back in the picked places (accumulating where picked twice).
    Integers mixed with advanced indices follow PyTorch, not NumPy: an integer is applied
    first as basic indexing, so ``x[1, :, [0, 4]]`` of a (3, 4, 5) tensor is (4, 2)."""
    data = x._data
    key = _basic_key(index)
    if key is not None:  # ints and slices: no conversion, no checks to run (see _basic_key)
        try:
            out = data[key]
        except IndexError as exc:
            raise ShapeError(f"index {index!r} does not fit shape {x.shape}: {exc}") from None
        # No scatter saved: a basic index is written back by assignment (and a bound method
        # per op would be one more object for the garbage collector to trace per node). The
        # rule reads no tensor's memory (the shape, the key): ``unary``'s path records it.
        return unary(x, out, getitem_backward, (data.shape, data.dtype, key, True, None))
    if isinstance(index, Tensor) and cast(AnyTensor, index).backend_dtype_name().startswith(("int", "uint")):
        rows: Any = x
        # x[ids] picks rows, as take(x, ids, axis=0); negative ids count from the end.
        return _gather(rows, cast(AnyTensor, index), negative=True)
    raw = _complete(_raw_index(index, x))
    _check_array_bounds(x, raw)
    try:
        out = pick(x._backend, data, raw)  # through host memory where the backend cannot index so
    except IndexError as exc:
        raise ShapeError(f"index {index!r} does not fit shape {x.shape}: {exc}") from None
    backend = x._backend
    axes = torch_axes(raw, data.ndim)
    if axes is not None:  # integers mixed with advanced indices: PyTorch's order, not NumPy's
        out = backend.xp.permute_dims(out, axes)
        saved = (tuple(data.shape), data.dtype, raw, axes, backend.scatter_add)
        return record(out, permuted_getitem_backward, (x,), saved, backend, watch=index_tensors(index))
    saved = (tuple(data.shape), data.dtype, raw, _is_basic(_as_tuple(raw)), backend.scatter_add)
    return record(out, getitem_backward, (x,), saved, backend, watch=index_tensors(index))


def _inverse(axes: tuple[int, ...]) -> tuple[int, ...]:
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return tuple(inverse)


def permuted_getitem_backward(
    xp: Any, g: Any, shape: tuple[int, ...], dtype: Any, index: Any, axes: tuple[int, ...], scatter: Any
) -> tuple[Any, ...]:
    """:func:`getitem_backward` for a result put in PyTorch's order (see :func:`torch_axes`):
    the gradient goes back to NumPy's order first."""
    return getitem_backward(xp, xp.permute_dims(g, _inverse(axes)), shape, dtype, index, False, scatter)


def _numpy_order(backend: Any, target: Any, raw: Any, axes: tuple[int, ...] | None, values: Any) -> Any:
    """``values`` for ``target[raw] = values`` in NumPy's terms: broadcast against PyTorch's
    result shape, then put in NumPy's order (see :func:`torch_axes`)."""
    if axes is None or isinstance(values, (bool, int, float)):
        return values
    xp = backend.xp
    picked = tuple(pick(backend, target, raw).shape)
    spread = xp.broadcast_to(backend.asarray(values, None), tuple(picked[a] for a in axes))
    return xp.permute_dims(spread, _inverse(axes))


def _consumed(key: Any) -> int:
    """How many axes of the indexed array one entry of an index tuple uses."""
    if key is None or key is Ellipsis:
        return 0
    dtype = getattr(key, "dtype", None)
    if dtype is not None and "bool" in str(dtype):
        return key.ndim
    return 1


def _index_entry_error(entry: Any, position: int, backend: Any) -> DTypeError | None:
    """Why ``entry`` cannot index an axis (a float, a float array, ...), or None."""
    if entry is None or entry is Ellipsis or isinstance(entry, (int, np.integer)):
        return None
    if isinstance(entry, slice):
        bounds = cast("slice[Any, Any, Any]", entry)
        parts: tuple[Any, ...] = (bounds.start, bounds.stop, bounds.step)
        if all(p is None or isinstance(p, (int, np.integer)) for p in parts):
            return None
        found = f"the slice {entry!r}"
    else:
        dtype = getattr(entry, "dtype", None)
        if dtype is not None and ("int" in str(dtype) or "bool" in str(dtype)):
            return None
        kind = f"the {type(entry).__name__} {entry!r}"
        found = kind if dtype is None else f"an array of dtype {backend.dtype_name(dtype)}"
    return DTypeError(
        f"index entry {position} is {found}; expected an int, a slice of ints, None, ..., "
        "or an integer or boolean tensor"
    )


def _check_array_bounds(x: AnyTensor, raw: Any) -> None:
    # NumPy raises for an integer-array index out of range; CuPy wraps it around silently.
    # Checked here on every backend, so that the same program fails the same way; and each
    # entry's kind, so that a float index is a DTypeError on every backend and in .at[].
    key = _as_tuple(raw)
    shape = x.shape
    axis = 0
    for i, entry in enumerate(key):
        error = _index_entry_error(entry, i, x._backend)
        if error is not None:
            raise error
        if entry is Ellipsis:
            axis = len(shape) - sum(_consumed(k) for k in key[i + 1 :])
            continue
        dtype = getattr(entry, "dtype", None)
        if dtype is not None and getattr(entry, "ndim", 0) > 0 and "int" in str(dtype) and axis < len(shape):
            n = shape[axis]
            message = f"index: an integer index is out of range for axis {axis} of size {n} (shape {shape})"
            require_in_range(x._backend, entry, -n, n, message)
        axis += _consumed(entry)


def _check_indices(indices: AnyTensor, op: str) -> None:
    name = indices._backend.dtype_name(indices._data.dtype)
    if not name.startswith(("int", "uint")):
        raise DTypeError(f"{op} expects integer indices, found dtype {name} with shape {indices.shape}")


def _along_axis_index(xp: Any, indices: Any, axis: int) -> tuple[Any, ...]:
    index: list[Any] = []
    for d, n in enumerate(indices.shape):
        if d == axis:
            index.append(indices)
        else:
            shape = [1] * indices.ndim
            shape[d] = n
            index.append(xp.reshape(xp.arange(n), tuple(shape)))
    return tuple(index)


def take_along_axis_backward(
    xp: Any, g: Any, shape: tuple[int, ...], dtype: Any, index: tuple[Any, ...], scatter: Any
) -> tuple[Any, ...]:
    full = xp.zeros(shape, dtype=dtype)
    scatter(full, index, g)
    return full, None


def take_along_axis(
    x: Tensor[T, *S, N], indices: Tensor[Any, *S, K], axis: int = -1, **torch_keywords: Never
) -> Tensor[T, *S, K]:
    """``out[..., j] = x[..., indices[..., j]]`` along ``axis`` (the last by default).
    PyTorch: ``torch.take_along_dim`` / ``torch.gather``."""
    if torch_keywords:
        refuse_torch_keywords("take_along_axis", torch_keywords)
    backend = same_backend(x, indices)
    _check_indices(indices, "take_along_axis")
    data, idx = x._data, indices._data
    if idx.ndim != data.ndim:
        raise ShapeError(
            f"take_along_axis expects indices of rank {data.ndim} like {x.shape}, found shape {indices.shape}"
        )
    axis = checked_axis(x, axis, "take_along_axis")
    for d in range(data.ndim):
        if d != axis and idx.shape[d] != data.shape[d]:
            raise ShapeError(f"take_along_axis: indices {indices.shape} and values {x.shape} differ on axis {d}")
    n = data.shape[axis]
    require_in_range(backend, idx, -n, n, f"take_along_axis: an index is out of range for axis {axis} of size {n}")
    index = _along_axis_index(backend.xp, idx, axis)
    out = data[index]
    saved = (tuple(data.shape), data.dtype, index, backend.scatter_add)
    # The indices are an input too: traced ids carry their tape to the result.
    return record(out, take_along_axis_backward, (x, indices), saved, backend, watch=(indices,))  # index: a view


@overload
def gather(x: Tensor[T, N, K], indices: Tensor[T, *S]) -> Tensor[T, *S, K]: ...  # pyright: ignore[reportOverlappingOverload] -- the typed case first, the open fallback last
@overload  # an untraced table with a caller's traced ids (pyright does not join the two under one T)
def gather(x: Tensor[NoTape, N, K], indices: Tensor[T, *S]) -> Tensor[T, *S, K]: ...  # pyright: ignore[reportOverlappingOverload] -- reached, for a generic T
@overload
def gather(x: Tensor[T, N, *S], indices: Tensor[Any, *tuple[Any, ...]]) -> Tensor[T, *tuple[Open, ...]]: ...
def gather(x: Any, indices: Any = None, *torch_style: Any, **torch_keywords: Any) -> Any:
    """Rows of the first axis picked by integer ``indices``: the result's shape is
    ``indices.shape + x.shape[1:]`` (an embedding lookup; typed so for a table of rank 2).
    PyTorch: ``F.embedding``. PyTorch's ``x.gather(dim, index)`` is
    ``sg.take_along_axis(x, index, axis=dim)``."""
    if torch_style or torch_keywords or not isinstance(indices, Tensor):
        raise _torch_gather(indices, torch_style, torch_keywords)
    return _gather(x, cast(AnyTensor, indices), negative=False)


def _torch_gather(indices: Any, more: tuple[Any, ...], keywords: dict[str, Any]) -> TypeError:
    """The error of a PyTorch-style call, ``x.gather(1, idx)`` or ``x.gather(dim=1, index=idx)``."""
    dim = keywords.get("dim", indices)
    if "dim" in keywords or "index" in keywords or (more and isinstance(indices, int)):
        return TypeError(
            f"gather(x, indices) is an embedding lookup here (rows of the first axis, PyTorch's F.embedding), "
            f"called as PyTorch's x.gather(dim, index): that is sg.take_along_axis(x, index, axis={dim!r}) "
            "here (x.take_along_axis(index) along the last axis)"
        )
    given = ", ".join([*(repr(type(a).__name__) for a in (indices, *more)), *keywords])
    return TypeError(
        f"gather(x, indices) expects one tensor of integer indices (rows of the first axis, PyTorch's "
        f"F.embedding), found {given}; PyTorch's x.gather(dim, index) is sg.take_along_axis(x, index, axis=dim)"
    )


def embedding_lookup(x: AnyTensor, indices: AnyTensor, padding_idx: int | None) -> Any:
    """``gather(x, indices)`` whose gradient leaves row ``padding_idx`` (non-negative) at
    zero, as PyTorch's ``F.embedding(ids, weight, padding_idx=...)``: ``nn.Embedding``'s
    lookup. The row is zeroed by the backward rule's own array operation, so a compiled
    step replays it."""
    return _gather(x, indices, negative=False, padding=padding_idx)


def _gather(x: AnyTensor, indices: AnyTensor, *, negative: bool, padding: int | None = None) -> Any:
    backend = same_backend(x, indices)
    _check_indices(indices, "gather")
    data, idx = x._data, indices._data
    n = data.shape[0]
    if negative:
        require_in_range(backend, idx, -n, n, f"index: indices must lie in [-{n}, {n}) for a first axis of size {n}")
        idx = backend.xp.where(idx < 0, idx + n, idx)
    else:
        require_in_range(backend, idx, 0, n, f"gather: indices must lie in [0, {n}) for a first axis of size {n}")
    flat = backend.xp.reshape(idx, (-1,))
    out = backend.xp.reshape(backend.xp.take(data, flat, axis=0), tuple(idx.shape) + tuple(data.shape[1:]))
    saved = (tuple(data.shape), data.dtype, flat, backend.scatter_add)
    # The indices are an input too: traced ids carry their tape to the result.
    if padding is not None:
        return record(out, embedding_backward, (x, indices), (*saved, padding), backend, watch=(indices,))
    return record(out, gather_backward, (x, indices), saved, backend, watch=(indices,))  # flat: a view of them


def gather_backward(xp: Any, g: Any, shape: tuple[int, ...], dtype: Any, flat: Any, scatter: Any) -> tuple[Any, ...]:
    full = xp.zeros(shape, dtype=dtype)
    scatter(full, flat, xp.reshape(g, (flat.shape[0],) + tuple(shape[1:])))
    return full, None


def embedding_backward(
    xp: Any, g: Any, shape: tuple[int, ...], dtype: Any, flat: Any, scatter: Any, padding: int
) -> tuple[Any, ...]:
    full, _ = gather_backward(xp, g, shape, dtype, flat, scatter)
    full[padding, ...] = 0  # the padding row receives no gradient (PyTorch's padding_idx)
    return full, None


def raw_index(index: Any, x: AnyTensor) -> Any:
    """``index`` in the backend's terms (tensors unwrapped, trailing axes completed), with
    integer arrays checked against ``x``'s shape."""
    raw = _complete(_raw_index(index, x))
    _check_array_bounds(x, raw)
    return raw


def assign_into(x: AnyTensor, raw: Any, values: Any) -> Any:
    """``assign`` into ``x``'s array (``x[index] = values``), a Python int the dtype cannot
    hold raising ``number_out_of_range``'s error rather than NumPy's ``OverflowError``."""
    try:
        values = _numpy_order(x._backend, x._data, raw, torch_axes(raw, x.ndim), values)
        return assign(x._backend, x._data, raw, values)
    except OverflowError as error:
        if type(values) is not int:
            raise
        raise number_out_of_range("x[index] = value", x, values, error) from None


def assign(backend: Any, target: Any, raw: Any, values: Any) -> Any:
    """``target[raw] = values``, in place where the backend can; a backend without
    integer-array assignment (a strict Array-API library) goes through host memory and
    gives a new array back. Returns the array that holds the result."""
    try:
        target[raw] = values
        return target
    except (IndexError, TypeError):
        host = np.array(backend.to_numpy(target))
        host[_host_index(backend, raw)] = np.asarray(backend.to_numpy(values)) if backend.is_array(values) else values
        return backend.asarray(host, None)


def pick(backend: Any, source: Any, raw: Any) -> Any:
    """``source[raw]``, through host memory where the backend cannot index with it."""
    try:
        return source[raw]
    except (IndexError, TypeError):
        return backend.asarray(np.array(backend.to_numpy(source))[_host_index(backend, raw)], None)


def _host_index(backend: Any, raw: Any) -> Any:
    if isinstance(raw, tuple):
        return tuple(_host_index(backend, r) for r in cast(tuple[Any, ...], raw))
    return np.asarray(backend.to_numpy(raw)) if backend.is_array(raw) else raw


def update_at_backward(
    xp: Any,
    g: Any,
    raw: Any,
    basic: bool,
    add: bool,
    need: tuple[bool, bool],
    backend: Any,
    axes: tuple[int, ...] | None = None,
) -> tuple[Any, ...]:
    gx = None
    if need[0]:
        gx = g
        if not add:  # the overwritten places do not reach the result
            gx = assign(backend, xp.asarray(g, copy=True), raw, 0)
    gv = pick(backend, g, raw) if need[1] else None
    if gv is not None and axes is not None:
        gv = xp.permute_dims(gv, axes)
    return gx, gv


def update_at(x: AnyTensor, index: Any, value: Any, *, add: bool) -> Any:
    """``x.at[index].set(value)`` / ``.add(value)``: a new tensor, ``x`` unchanged."""
    from ._toolkit import NUMBER, operand

    backend = x._backend
    xp = backend.xp
    raw = raw_index(index, x)
    basic = _is_basic(_as_tuple(raw))
    other = operand(value, x, "at[...]")
    is_tensor = isinstance(other, Tensor)
    if is_tensor:
        same_backend(x, other)
    v = other._data if is_tensor else other
    out = xp.asarray(x._data, copy=True)
    axes = None if basic else torch_axes(raw, x.ndim)
    try:
        v = _numpy_order(backend, out, raw, axes, v)
        if not add:
            out = assign(backend, out, raw, v)
        elif basic:
            out[raw] = out[raw] + v
        else:  # repeated indices add once each, as in JAX
            picked_shape = tuple(pick(backend, out, raw).shape)
            backend.scatter_add(out, raw, xp.broadcast_to(xp.asarray(v, dtype=out.dtype), picked_shape))
    except OverflowError as error:  # a Python int the dtype cannot hold: NumPy's bare error
        if type(v) is not int:
            raise
        raise number_out_of_range("at[...].add" if add else "at[...].set", x, v, error) from None
    except ValueError as error:  # NumPy's bare "could not be broadcast": name the shapes
        if "broadcast" not in str(error):
            raise
        target = tuple(pick(backend, x._data, raw).shape)
        raise ShapeError(
            f"at[...].{'add' if add else 'set'}: a value of shape {tuple(getattr(v, 'shape', ()))} does not "
            f"broadcast to the indexed shape {target} of x {x.shape}"
        ) from None
    need = (wants_grad(x), is_tensor and wants_grad(other))
    inputs: Any = (x, other if is_tensor else NUMBER)
    saved = (raw, basic, add, need, backend, axes)
    return record(out, update_at_backward, inputs, saved, backend, watch=index_tensors(index))


def _triangle_mask(xp: Any, rows: int, cols: int, k: int, lower: bool) -> Any:
    i = xp.reshape(xp.arange(rows), (rows, 1))
    j = xp.reshape(xp.arange(cols), (1, cols))
    return (j - i <= k) if lower else (j - i >= k)


def triangle_backward(xp: Any, g: Any, mask: Any) -> tuple[Any, ...]:
    return (keep_where(xp, mask, g),)


def _triangle(x: AnyTensor, k: int, lower: bool) -> Any:
    name = "tril" if lower else "triu"
    if x.ndim < 2:
        raise ShapeError(f"{name} expects a tensor of rank >= 2, found shape {x.shape}")
    # A tensor k compared as an array gave a traced mask, which failed eagerly (and was
    # recorded by sg.compile); a float k drew a triangle PyTorch refuses to.
    k = integer(name, "diagonal offset k", k)
    xp = x._backend.xp
    mask = _triangle_mask(xp, x.shape[-2], x.shape[-1], k, lower)
    return record(keep_where(xp, mask, x._data), triangle_backward, (x,), (mask,), x._backend)


def tril(x: Tensor[T, *S], k: int = 0) -> Tensor[T, *S]:
    """The lower triangle of the last two axes (``j - i <= k``), zeros above: a causal mask
    is ``tril(ones(S, S))``. d/dx: the gradient's lower triangle. PyTorch: ``torch.tril``."""
    return _triangle(x, k, lower=True)


def triu(x: Tensor[T, *S], k: int = 0) -> Tensor[T, *S]:
    """The upper triangle of the last two axes (``j - i >= k``), zeros below.
    PyTorch: ``torch.triu``."""
    return _triangle(x, k, lower=False)


@overload
def one_hot(labels: Tensor[Any, *S], num_classes: Z0, dtype: str = "float32") -> Tensor[NoTape, *S, Z0]: ...  # pyright: ignore[reportOverlappingOverload] -- a literal or sg.Dim count first, a plain int (Open) next
@overload
def one_hot(labels: Tensor[Any, *S], num_classes: int, dtype: str = "float32") -> Tensor[NoTape, *S, Open]: ...
def one_hot(labels: Tensor[Any, *S], num_classes: int, dtype: str = "float32") -> Any:
    """``labels (..)`` as ``(.., num_classes)`` rows of zeros with a 1 at each label
    (untraced). PyTorch: ``F.one_hot`` (which gives integers)."""
    name = labels.backend_dtype_name()
    if not name.startswith(("int", "uint")):
        raise DTypeError(f"one_hot expects integer labels, found dtype {name}")
    from .._device_checks import require_in_range

    num_classes = integer("one_hot", "num_classes", num_classes)
    backend = labels._backend
    xp = backend.xp
    require_in_range(backend, labels._data, 0, num_classes, f"one_hot: labels must lie in [0, {num_classes})")
    hot = xp.expand_dims(labels._data, axis=-1) == xp.arange(num_classes)
    return wrap(xp.astype(hot, backend.dtype(dtype)), backend)


# --------------------------------------------------------------------------- composites
def masked_fill(x: Tensor[T, *S], mask: Tensor[Any, *tuple[Any, ...]], value: float) -> Tensor[T, *S]:
    """``value`` where ``mask`` is true (broadcast against ``x``), ``x`` elsewhere; the
    gradient flows to ``x`` where it is kept. PyTorch: ``Tensor.masked_fill``.

    The result keeps ``x``'s dtype, as in PyTorch: an integer or boolean ``x`` stays so. A
    number that dtype holds exactly is accepted (``2.0`` into int64, ``True``/``False`` or
    0/1 into bool); one it does not hold raises ``DTypeError`` (``2.5`` into int64, which
    PyTorch silently truncates to 2; ``300`` into int8, or ``-1`` into uint8, which PyTorch
    wraps to 255)."""
    fill: Any = value
    if isinstance(fill, np.generic):  # a NumPy scalar would promote x (float32 to float64)
        fill = cast(Any, fill).item()
    name = x._backend.dtype_name(x._data.dtype)
    if not name.startswith("float") and not isinstance(fill, Tensor):
        fill = _exact_fill(x, name, fill)
    select: Any = ew.where  # the mask broadcasts against x, which where's typed stack does not say yet
    return select(mask, fill, x)


def _exact_fill(x: AnyTensor, name: str, value: Any) -> Any:
    """``value`` as a number of the integer or boolean dtype ``name``, or a ``DTypeError``
    where converting it would change it (PyTorch would truncate 2.5 to 2 with no error)."""
    number: Any = value
    if name == "bool":
        if isinstance(number, (bool, int, float)) and number in (0, 1):
            return bool(number)
        raise DTypeError(
            f"masked_fill: the value {value!r} is not a boolean, and x is a tensor of dtype bool (shape {x.shape}); "
            "expected True or False (or 0, 1), or convert x first, e.g. x.astype('float32')"
        )
    if isinstance(number, float):
        if not number.is_integer():
            raise DTypeError(
                f"masked_fill: the value {value!r} is not an integer, and x is a tensor of dtype {name} "
                f"(shape {x.shape}), which holds integers only (PyTorch would truncate it silently); expected an "
                "integer value, or convert x first, e.g. x.astype('float32')"
            )
        number = int(number)
    if isinstance(number, int):
        number = int(number)  # True as 1: a strict Array-API library does not mix bools and integers
        info = np.iinfo(np.dtype(name))
        if not info.min <= number <= info.max:
            raise DTypeError(
                f"masked_fill: the value {value!r} is out of range for x, a tensor of dtype {name} (shape "
                f"{x.shape}), which holds {info.min} to {info.max} (NumPy would wrap it around); expected a value "
                "in that range, or convert x first, e.g. x.astype('int64')"
            )
    return number


def diagonal(x: Tensor[T, *S], offset: int = 0) -> Tensor[T, *tuple[Open, ...]]:
    """The diagonal ``x[..., i, i + offset]`` of the last two axes. PyTorch:
    ``torch.diagonal(x, offset, -2, -1)``."""
    if x.ndim < 2:
        raise ShapeError(f"diagonal expects a tensor of rank >= 2, found shape {x.shape}")
    offset = integer("diagonal", "offset", offset)
    rows, cols = x.shape[-2], x.shape[-1]
    length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    # Picked, not summed from x times an identity mask (an infinite value off the diagonal,
    # a causal mask's -inf, would make that sum NaN): in the flattened matrix the diagonal
    # is every (cols + 1)-th value from x[0, offset] or x[-offset, 0].
    start = offset if offset >= 0 else -offset * cols
    flat = shp.reshape(x, (*x.shape[:-2], rows * cols))
    return slice_along(flat, flat.ndim - 1, start, start + (length - 1) * (cols + 1) + 1, cols + 1)


def diag(v: Tensor[T, N]) -> Tensor[T, N, N]:
    """The square matrix with ``v`` on its diagonal, in ``v``'s dtype (an integer or
    boolean vector too). PyTorch: ``torch.diag`` of a vector."""
    if v.ndim != 1:
        raise ShapeError(f"diag expects a vector, found shape {v.shape}")
    n = v.shape[0]
    xp = v._backend.xp
    on_diagonal = wrap(_triangle_mask(xp, n, n, 0, True) & _triangle_mask(xp, n, n, 0, False), v._backend)
    column: AnyTensor = shp.expand_dims(v, -1)
    select: Any = ew.where  # the (N, N) condition broadcasts the (N, 1) column
    name = v._backend.dtype_name(v._data.dtype)
    # a zero of v's kind: a float 0.0 would promote an integer or boolean v to float64
    zero = False if name == "bool" else 0 if name.startswith(("int", "uint")) else 0.0
    return select(on_diagonal, column, zero)  # selected, not column · eye: inf · 0 would be NaN


def slice_along(x: AnyTensor, axis: int, start: int, stop: int, step: int = 1) -> Any:
    """``x[..., start:stop:step, ...]`` at ``axis`` (recorded as indexing)."""
    index: tuple[Any, ...] = (slice(None),) * axis + (slice(start, stop, step),)
    return getitem(x, index)
