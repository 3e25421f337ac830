"""Reductions and the softmax family."""

from __future__ import annotations

import builtins
import math
from typing import Any, Literal as L, Never, overload

import numpy as np

from .._autodiff import NoTape as NoTape
from .._backend import fused_kernel, same_backend
from .._dims import Open
from .._errors import ShapeError
from .._tensor import NUMPY_FLOAT_RESULTS, AnyTensor, Tensor, record, wrap
from .._torch_names import refuse_torch_keywords
from .._typevars import N, S, T
from . import elementwise as ew
from ._toolkit import checked_axis, integer, integers, keep_where, require_bool_mask, require_float, shape_clash

__all__ = [
    "all",
    "any",
    "count_nonzero",
    "cumprod",
    "cumsum",
    "log_softmax",
    "logsumexp",
    "max",
    "mean",
    "min",
    "norm",
    "prod",
    "softmax",
    "std",
    "sum",
    "var",
]


def normalize_axes(axis: int | tuple[int, ...] | None, ndim: int, op: str = "this reduction") -> tuple[int, ...]:
    """``axis`` as a sorted tuple of non-negative axes (every axis when None); ``DTypeError``
    naming ``op`` for an axis that is not an integer, ``ShapeError`` for one out of range."""
    if axis is None:
        return tuple(range(ndim))
    if type(axis) is int:
        axes: tuple[int, ...] = (axis,)
    elif isinstance(axis, (tuple, list)):
        axes = integers(op, "axis", axis)
    else:  # a NumPy integer; a float or a tensor is refused by name
        axes = (integer(op, "axis", axis),)
    result: list[int] = []
    for a in axes:
        # A rank-0 tensor takes axis 0 or -1, as PyTorch, and reduces nothing: its value is
        # its own sum, mean and maximum (no axis to hand NumPy, which refuses one).
        if not -builtins.max(ndim, 1) <= a < builtins.max(ndim, 1):
            raise ShapeError(f"axis {a} is out of range for a tensor of rank {ndim}")
        if ndim:
            result.append(a % ndim)
    return tuple(sorted(set(result)))


def _over_empty(data: Any, axes: tuple[int, ...]) -> bool:
    """Whether a reduction over ``axes`` reduces an axis of size 0 (no values at all)."""
    return builtins.any(data.shape[a] == 0 for a in axes)


def _restore(xp: Any, g: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> Any:
    """A reduced gradient given back its reduced axes (size 1), ready to broadcast."""
    if not keepdims and axes:
        kept = list(shape)
        for a in axes:
            kept[a] = 1
        g = xp.reshape(g, tuple(kept))
    return g


def _spread(xp: Any, g: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> Any:
    """A reduction's gradient ``g`` spread back over the input's ``shape``: a read-only view,
    as ``xp.broadcast_to`` makes it. A loss's gradient (one number) on NumPy is viewed
    directly: NumPy's ``reshape`` and ``broadcast_to`` are Python code taking ~5 µs, a
    fifth of a small step's backward pass."""
    if type(g) in NUMPY_FLOAT_RESULTS and g.size == 1:  # a 0-d array's arithmetic gives NumPy scalars
        view = np.ndarray(shape, g.dtype, g, 0, (0,) * len(shape))
        view.flags.writeable = False
        return view
    return xp.broadcast_to(_restore(xp, g, shape, axes, keepdims), shape)


def sum_backward(xp: Any, g: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[Any, ...]:
    return (_spread(xp, g, shape, axes, keepdims),)


def sum(x: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
    """Sum over ``axis`` (all axes when None). d/dx = 1. PyTorch: ``torch.sum``."""
    data = x._data
    axes = normalize_axes(axis, data.ndim, "sum")
    if type(data) is np.ndarray:  # what np.sum runs, without its Python wrapper (~1.5 µs)
        out = np.add.reduce(data, axis=axes, keepdims=keepdims)
    else:
        out = x._backend.xp.sum(data, axis=axes, keepdims=keepdims)
    return record(out, sum_backward, (x,), (tuple(data.shape), axes, keepdims), x._backend)


def mean_backward(
    xp: Any, g: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool, count: int
) -> tuple[Any, ...]:
    return (_spread(xp, g / count, shape, axes, keepdims),)


# The dtypes np.mean sums in their own precision (float16 it sums in float32), each with the
# largest count it holds exactly: np.mean divides by the count as a float64 (NumPy's intp), the
# direct path by a Python int, which a float32 sum rounds to float32 (2**24 + 1 to 2**24).
_MEAN_DIRECT = {np.dtype(np.float32): 2**24, np.dtype(np.float64): 2**53}


def mean(x: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
    """Mean over ``axis``. d/dx = 1/n. PyTorch: ``torch.mean``."""
    require_float(x, "mean")
    data = x._data
    axes = normalize_axes(axis, data.ndim, "mean")
    count = 1
    for a in axes:
        count *= data.shape[a]
    if type(data) is np.ndarray and 0 < count <= _MEAN_DIRECT.get(data.dtype, 0):
        # np.mean's own arithmetic (a sum, then a division in the same precision), without its
        # Python layers (~5 µs, more than the mean of a small tensor)
        out = np.add.reduce(data, axis=axes, keepdims=keepdims) / count
    else:
        out = x._backend.xp.mean(data, axis=axes, keepdims=keepdims)
    saved = (tuple(data.shape), axes, keepdims, count)
    return record(out, mean_backward, (x,), saved, x._backend)


def max_min_backward(xp: Any, g: Any, x: Any, out: Any, axes: tuple[int, ...], keepdims: bool) -> tuple[Any, ...]:
    shape = tuple(x.shape)
    kept = _restore(xp, out, shape, axes, keepdims)
    hit = x == kept
    zero = xp.zeros_like(x)
    mask = xp.where(hit, xp.ones_like(x), zero)
    count = xp.sum(mask, axis=axes, keepdims=True)
    # A NaN extremum equals no value: its slice's gradient is NaN (torch.amax's 0/0), not 0.
    spread = _restore(xp, g, shape, axes, keepdims) / xp.where(count == 0, xp.ones_like(count), count)
    return (xp.where(hit, spread, xp.where(count == 0, spread * math.nan, zero)),)


def _extremum(x: AnyTensor, axis: int | tuple[int, ...] | None, keepdims: bool, name: str) -> Any:
    data = x._data
    axes = normalize_axes(axis, data.ndim, name)
    if builtins.any(data.shape[a] == 0 for a in axes):
        raise ShapeError(f"{name} over an empty axis of shape {tuple(data.shape)} has no value")
    out = getattr(x._backend.xp, name)(data, axis=axes, keepdims=keepdims)
    return record(out, max_min_backward, (x,), (data, out, axes, keepdims), x._backend)


def max(x: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
    """Maximum over ``axis``; tied maxima share the gradient equally. PyTorch: ``torch.amax``."""
    return _extremum(x, axis, keepdims, "max")


def min(x: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
    """Minimum over ``axis``; tied minima share the gradient equally. PyTorch: ``torch.amin``."""
    return _extremum(x, axis, keepdims, "min")


def var(x: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, correction: float = 0.0) -> Any:
    """Variance over ``axis``: ``mean((x - mean(x))²) · n / (n - correction)``. PyTorch: ``torch.var(x, correction=...)`` (whose default correction is 1; here it is 0, as NumPy)."""
    # Composite: made of mean, sub and mul, so it needs no rule of its own.
    axes = normalize_axes(axis, x.ndim, "var")
    count = 1
    for a in axes:
        count *= x.shape[a]
    centred = x - mean(x, axes, True)
    squared = mean(centred * centred, axes, keepdims)
    if correction:
        # As PyTorch (and NumPy's ddof): with no more values than the correction the sum of
        # squares is divided by 0, inf where the values differ, NaN where they are equal (0·inf).
        squared = squared * (count / (count - correction) if count > correction else math.inf)
    return squared


def logsumexp_backward(xp: Any, g: Any, x: Any, out: Any, axes: tuple[int, ...], keepdims: bool) -> tuple[Any, ...]:
    shape = tuple(x.shape)
    return (_restore(xp, g, shape, axes, keepdims) * xp.exp(x - _restore(xp, out, shape, axes, keepdims)),)


def wide_sum(xp: Any, values: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The sum of ``values`` along ``axis``, in float32 where they are float16 (as PyTorch
    accumulates half precision): a row of 100,000 exponentials near 1 summed past float16's
    65,504 to inf, and a softmax over a vocabulary came out all zeros. Callers cast back."""
    if is_half(xp, values.dtype):
        return xp.sum(values, axis=axis, keepdims=keepdims, dtype=xp.float32)
    return xp.sum(values, axis=axis, keepdims=keepdims)


def is_half(xp: Any, dtype: Any) -> bool:
    """Whether ``dtype`` is ``xp``'s float16 (a backend without one has none)."""
    half = getattr(xp, "float16", None)
    return half is not None and dtype == half


def cast_to(xp: Any, a: Any, dtype: Any) -> Any:
    """``a`` in ``dtype``: no copy where it is already (astype copies)."""
    return a if a.dtype == dtype else xp.astype(a, dtype)


def logsumexp(x: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
    """``log(sum(exp(x)))`` over ``axis``, stable for any logits. d/dx = softmax(x). PyTorch: ``torch.logsumexp``."""
    require_float(x, "logsumexp")
    xp = x._backend.xp
    data = x._data
    axes = normalize_axes(axis, data.ndim, "logsumexp")
    if _over_empty(data, axes):
        # The sum of no exponentials is 0, and its log -inf (as PyTorch).
        reduced = tuple(1 if i in axes else n for i, n in enumerate(data.shape))
        out = xp.full(reduced, -math.inf, dtype=data.dtype)
    else:
        peak = xp.max(data, axis=axes, keepdims=True)
        peak = xp.where(xp.isfinite(peak), peak, xp.zeros_like(peak))
        out = cast_to(xp, xp.log(wide_sum(xp, xp.exp(data - peak), axes, True)), data.dtype) + peak
    if not keepdims:
        out = xp.reshape(out, tuple(n for i, n in enumerate(data.shape) if i not in axes))
    return record(out, logsumexp_backward, (x,), (data, out, axes, keepdims), x._backend)


def _broadcast_result(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape ``a`` and ``b`` broadcast to, or None when they do not."""
    out: list[int] = []
    for i in range(1, builtins.max(len(a), len(b)) + 1):
        m = a[-i] if i <= len(a) else 1
        n = b[-i] if i <= len(b) else 1
        if m != n and 1 not in (m, n):
            return None
        out.append(builtins.max(m, n) if 0 not in (m, n) else 0)
    return tuple(reversed(out))


MASKED = -1e9  # what a masked-out score becomes: weight 0, and no NaN when a row is all masked


def masked_score(xp: Any, dtype: Any) -> Any:
    """:data:`MASKED` as a scalar array of ``dtype``, or the dtype's most negative finite
    value where -1e9 would round to -inf (float16): an all-masked row's ``-inf - max`` would
    be NaN, while equal finite scores give the uniform row."""
    return xp.asarray(builtins.max(MASKED, float(xp.finfo(dtype).min)), dtype=dtype)


def empty_backward(xp: Any, g: Any, y: Any) -> tuple[Any, ...]:
    return (xp.zeros_like(y),)


def softmax_backward(xp: Any, g: Any, y: Any, axis: int, scale: float = 1.0, mask: Any = None) -> tuple[Any, ...]:
    gy = g * y
    gz = gy - y * xp.sum(gy, axis=axis, keepdims=True)
    if mask is not None:  # masked scores were replaced: they get no gradient
        gz = xp.where(mask, gz, xp.zeros_like(gz))
    return (gz * scale if scale != 1.0 else gz,)


def softmax(
    x: Tensor[T, *S],
    axis: int = -1,
    *,
    scale: float = 1.0,
    mask: Tensor[Any, *tuple[Any, ...]] | None = None,
    **torch_keywords: Never,
) -> Tensor[T, *S]:
    """``e^z / sum(e^z)`` along ``axis`` for ``z = scale · x``, with the maximum subtracted
    first; where ``mask`` (boolean, broadcast against ``x``) is false, ``z`` is -1e9 (weight 0; in
    float16, its most negative value), so a row masked throughout is uniform.
    ``softmax(scores, scale=1/√d, mask=causal)`` is attention's weights as one op.
    d/dx: ``scale · y · (g - sum(g · y))``, zero where masked.
    PyTorch: ``torch.softmax(torch.where(mask, scale * x, -1e9), axis)``."""
    if torch_keywords:
        refuse_torch_keywords("softmax", torch_keywords)
    require_float(x, "softmax")
    if type(axis) is not int:  # saved for the backward pass and handed to the backend as given
        axis = integer("softmax", "axis", axis)
    xp = x._backend.xp
    data = x._data
    if _over_empty(data, normalize_axes(axis, data.ndim, "softmax")):
        y = xp.zeros_like(data)  # no values to normalise: an empty result, as PyTorch
        # (not softmax_backward, which a backend's fused kernel replaces: NumPy's numba one
        # cannot view an empty gradient as rows of no length)
        return record(y, empty_backward, (x,), (y,), x._backend)
    allowed = None
    if mask is not None:
        same_backend(x, mask)
        require_bool_mask(mask, "softmax mask")
        if _broadcast_result(tuple(mask.shape), data.shape) != data.shape:
            raise shape_clash("softmax mask", x, mask)
        allowed = mask._data
    last = normalize_axes(axis, data.ndim, "softmax") == (data.ndim - 1,)
    kernel = fused_kernel(x._backend, "softmax", data.dtype) if last else None
    y = None if kernel is None else kernel(data, scale, allowed)  # scale, mask, max in one pass
    # The rule reads the mask (masked scores get no gradient): a write into it is seen.
    watched = () if mask is None else (mask,)
    if y is not None:
        return record(y, softmax_backward, (x,), (y, axis, scale, allowed), x._backend, watch=watched)
    z = data * scale if scale != 1.0 else data
    if allowed is not None:
        z = xp.where(allowed, z, masked_score(xp, data.dtype))
    e = xp.exp(z - xp.max(z, axis=axis, keepdims=True))
    y = cast_to(xp, e / wide_sum(xp, e, axis, True), data.dtype)
    return record(y, softmax_backward, (x,), (y, axis, scale, allowed), x._backend, watch=watched)


def log_softmax_backward(xp: Any, g: Any, y: Any, axis: int) -> tuple[Any, ...]:
    return (g - xp.exp(y) * xp.sum(g, axis=axis, keepdims=True),)


def log_softmax(x: Tensor[T, *S], axis: int = -1, **torch_keywords: Never) -> Tensor[T, *S]:
    """``x - logsumexp(x)`` along ``axis``, finite at any logits.
    d/dx: ``g - softmax(x) · sum(g)``. PyTorch: ``torch.log_softmax``."""
    if torch_keywords:
        refuse_torch_keywords("log_softmax", torch_keywords)
    require_float(x, "log_softmax")
    if type(axis) is not int:  # handed to the backend as given
        axis = integer("log_softmax", "axis", axis)
    xp = x._backend.xp
    data = x._data
    if _over_empty(data, normalize_axes(axis, data.ndim, "log_softmax")):
        y = xp.zeros_like(data)  # an empty result, as PyTorch
    else:
        shifted = data - xp.max(data, axis=axis, keepdims=True)
        y = shifted - cast_to(xp, xp.log(wide_sum(xp, xp.exp(shifted), axis, True)), data.dtype)
    return record(y, log_softmax_backward, (x,), (y, axis), x._backend)


def _reverse_cumsum(xp: Any, a: Any, axis: int) -> Any:
    """Σ_{j>=i} a_j along ``axis``: a cumulative sum from the other end."""
    return xp.flip(xp.cumulative_sum(xp.flip(a, axis=axis), axis=axis), axis=axis)


def cumsum_backward(xp: Any, g: Any, axis: int) -> tuple[Any, ...]:
    # out_j = Σ_{i<=j} x_i, so d/dx_i = Σ_{j>=i} g_j: a cumulative sum from the other end.
    return (_reverse_cumsum(xp, g, axis),)


# An axis with no default (PyTorch's ``dim``, required there too): the first overload is the
# op, the second the same with PyTorch's keywords gathered and typed ``Never`` (so pyright
# reports ``dim=``, as for the ops whose axis has a default); the implementation takes None for
# the axis so that ``dim=`` reaches ``refuse_torch_keywords`` (a KeywordError naming ``axis=``)
# instead of Python's missing-argument error.
@overload
def cumsum(x: Tensor[T, *S], axis: int) -> Tensor[T, *S]: ...
@overload
def cumsum(x: Tensor[T, *S], axis: int, **torch_keywords: Never) -> Tensor[T, *S]: ...
def cumsum(x: Tensor[T, *S], axis: int | None = None, **torch_keywords: Never) -> Tensor[T, *S]:
    """Running sums along ``axis``. d/dx_i = Σ_{j>=i} g_j. PyTorch: ``torch.cumsum``."""
    if torch_keywords or axis is None:
        refuse_torch_keywords("cumsum", torch_keywords)
    a = checked_axis(x, axis, "cumsum")
    if x.ndim == 0:  # NumPy's cumulative sum of a rank-0 array has shape (1,); PyTorch's is rank 0
        return _as_vector(cumsum, x, a)
    return record(x._backend.xp.cumulative_sum(x._data, axis=a), cumsum_backward, (x,), (a,), x._backend)


def _as_vector(op: Any, x: Any, axis: int) -> Any:
    """``op`` of a rank-0 ``x`` along ``axis``: run on ``x`` as a vector of one, and the result
    made rank 0 again."""
    from .shape import reshape

    return reshape(op(reshape(x, (1,)), axis), ())


def any(
    x: Tensor[Any, *S], axis: int | None = None, keepdims: bool = False, **torch_keywords: Never
) -> Tensor[NoTape, *tuple[Open, ...]]:
    """Whether any value along ``axis`` is true (non-zero); untraced booleans."""
    if torch_keywords:
        refuse_torch_keywords("any", torch_keywords)
    xp = x._backend.xp
    return wrap(
        xp.any(x._data, axis=None if axis is None else checked_axis(x, axis, "any"), keepdims=keepdims), x._backend
    )


def all(
    x: Tensor[Any, *S], axis: int | None = None, keepdims: bool = False, **torch_keywords: Never
) -> Tensor[NoTape, *tuple[Open, ...]]:
    """Whether every value along ``axis`` is true (non-zero); untraced booleans."""
    if torch_keywords:
        refuse_torch_keywords("all", torch_keywords)
    xp = x._backend.xp
    return wrap(
        xp.all(x._data, axis=None if axis is None else checked_axis(x, axis, "all"), keepdims=keepdims), x._backend
    )


def count_nonzero(
    x: Tensor[Any, *S], axis: int | None = None, **torch_keywords: Never
) -> Tensor[NoTape, *tuple[Open, ...]]:
    """How many values along ``axis`` are non-zero (untraced integers)."""
    if torch_keywords:
        refuse_torch_keywords("count_nonzero", torch_keywords)
    xp = x._backend.xp
    nonzero = xp.astype(xp.astype(x._data, xp.bool), xp.int64)  # true where non-zero, any dtype
    return wrap(xp.sum(nonzero, axis=None if axis is None else checked_axis(x, axis, "count_nonzero")), x._backend)


def std(x: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, correction: float = 0.0) -> Any:
    """Standard deviation: ``sqrt(var(x, axis, correction))`` (``correction=1``: unbiased,
    PyTorch's default). d/dx_i = ``(x_i - mean) / ((n - correction) · std)``, and 0 where
    the std is 0 (a constant slice), as PyTorch. PyTorch: ``torch.std``."""
    require_float(x, "std")
    xp = x._backend.xp
    data = x._data
    axes = normalize_axes(axis, data.ndim, "std")
    count = 1
    for a in axes:
        count *= data.shape[a]
    centred = data - xp.mean(data, axis=axes, keepdims=True)
    squared = xp.mean(centred * centred, axis=axes, keepdims=keepdims)
    # As var (and PyTorch): with no more values than the correction, divided by 0 (inf, or
    # NaN for a constant slice); the gradient is then NaN (g / (0 · inf)), as PyTorch's.
    denominator = count - correction if count > correction else 0.0
    if correction:
        squared = squared * (count / denominator if denominator else math.inf)
    out = xp.sqrt(squared)
    return record(out, std_backward, (x,), (centred, out, axes, keepdims, denominator), x._backend)


def _root_derivative(
    xp: Any, g: Any, root: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool, scale: float
) -> Any:
    """``g / (scale · root)`` back on ``shape``, and 0 where ``root`` is 0: the derivative of
    the square root of a sum of squares that is 0 (there the chain rule's ``inf · 0`` is
    NaN; PyTorch gives 0)."""
    root = _restore(xp, root, shape, axes, keepdims)
    nonzero = root != 0
    safe = xp.where(nonzero, root, xp.ones_like(root))  # on the reduced shape: cheap
    return keep_where(xp, nonzero, _restore(xp, g, shape, axes, keepdims) / (scale * safe))


def std_backward(
    xp: Any, g: Any, centred: Any, out: Any, axes: tuple[int, ...], keepdims: bool, denominator: float
) -> tuple[Any, ...]:
    return (centred * _root_derivative(xp, g, out, tuple(centred.shape), axes, keepdims, denominator),)


def norm2_backward(xp: Any, g: Any, x: Any, out: Any, axes: tuple[int, ...], keepdims: bool) -> tuple[Any, ...]:
    return (x * _root_derivative(xp, g, out, tuple(x.shape), axes, keepdims, 1.0),)


@overload
def norm(x: Tensor[T, *S], ord: float = 2, axis: None = None, keepdims: L[False] = False) -> Tensor[T]: ...
@overload
def norm(x: Tensor[T, *S, N], ord: float, axis: L[-1], keepdims: L[False] = False) -> Tensor[T, *S]: ...  # pyright: ignore[reportOverlappingOverload] -- the typed case first, the open fallback last
@overload
def norm(x: Tensor[T, *S, N], ord: float, axis: L[-1], keepdims: L[True]) -> Tensor[T, *S, L[1]]: ...
@overload
def norm(x: Tensor[T, *S, N], *, axis: L[-1], keepdims: L[False] = False) -> Tensor[T, *S]: ...
@overload
def norm(x: Tensor[T, *S, N], *, axis: L[-1], keepdims: L[True]) -> Tensor[T, *S, L[1]]: ...
@overload
def norm(
    x: Tensor[T, *S], ord: float = 2, axis: int | tuple[int, ...] | None = None, keepdims: bool = False
) -> Tensor[T, *tuple[Open, ...]]: ...
def norm(
    x: Any, ord: float = 2, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, **torch_keywords: Never
) -> Any:
    """The vector norm over ``axis`` (all values when None): ``ord=2`` √Σx², ``ord=1`` Σ|x|,
    ``ord=inf`` max |x|. For ``ord=2`` d/dx = ``x / norm``, and 0 where the norm is 0 (a zero
    vector), as PyTorch. PyTorch: ``torch.linalg.vector_norm``."""
    if torch_keywords:
        refuse_torch_keywords("norm", torch_keywords)
    if ord == 2:
        xp = x._backend.xp
        data = x._data
        axes = normalize_axes(axis, data.ndim, "norm")
        out = xp.sqrt(xp.sum(data * data, axis=axes, keepdims=keepdims))
        return record(out, norm2_backward, (x,), (data, out, axes, keepdims), x._backend)
    if ord == 1:
        return sum(ew.abs(x), axis, keepdims)
    if ord == float("inf"):
        return max(ew.abs(x), axis, keepdims)
    raise ShapeError(f"norm supports ord 1, 2 and inf, found {ord!r}")


# --------------------------------------------------------------------------- product
def prod_backward(
    xp: Any, g: Any, x: Any, axes: tuple[int, ...], keepdims: bool, out_nonzero: Any, zeros: Any
) -> tuple[Any, ...]:
    # d/dx_i Π x = Π_{j≠i} x_j: the product over x_i where no factor is 0; with one zero, the
    # product of the others at that zero and 0 elsewhere; with two or more, 0 (as PyTorch).
    shape = tuple(x.shape)
    kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
    if not keepdims:
        g = xp.reshape(g, kept)
    is_zero = x == 0
    safe = xp.where(is_zero, xp.ones_like(x), x)
    none_zero = g * out_nonzero / safe
    one_zero = xp.where(is_zero, g * out_nonzero, xp.zeros_like(x))
    return (xp.where(zeros == 0, none_zero, xp.where(zeros == 1, one_zero, xp.zeros_like(x))),)


def prod(
    x: Tensor[T, *S], axis: int | tuple[int, ...] | None = None, keepdims: bool = False, **torch_keywords: Never
) -> Tensor[T, *tuple[Open, ...]]:
    """The product over ``axis`` (all values when None), with exact gradients where values are
    0. d/dx_i = Π_{j≠i} x_j. PyTorch: ``torch.prod``."""
    if torch_keywords:
        refuse_torch_keywords("prod", torch_keywords)
    xp = x._backend.xp
    data = x._data
    axes = normalize_axes(axis, data.ndim, "prod")
    out = xp.prod(data, axis=axes, keepdims=keepdims)
    is_zero = data == 0
    out_nonzero = xp.prod(xp.where(is_zero, xp.ones_like(data), data), axis=axes, keepdims=True)
    zeros = xp.sum(xp.astype(is_zero, xp.int64), axis=axes, keepdims=True)
    return record(out, prod_backward, (x,), (data, axes, keepdims, out_nonzero, zeros), x._backend)


def cumprod_backward(xp: Any, g: Any, x: Any, out: Any, axis: int) -> tuple[Any, ...]:
    # d out_j / d x_i = Π_{k<=j, k≠i} x_k. Before the first zero of a slice this is
    # out_j / x_i; at the first zero it is the running product with that zero taken as 1;
    # after it, 0 (every such product holds the first zero). Exact with zeros, as PyTorch.
    is_zero = x == 0
    zeros_so_far = xp.cumulative_sum(xp.astype(is_zero, xp.int64), axis=axis)
    first_zero = is_zero & (zeros_so_far == 1)
    before = zeros_so_far == 0
    safe = xp.where(is_zero, xp.ones_like(x), x)
    simple = _reverse_cumsum(xp, g * out, axis) / safe
    without_first_zero = xp.cumulative_prod(xp.where(first_zero, xp.ones_like(x), x), axis=axis)
    at_zero = _reverse_cumsum(xp, g * xp.where(before, xp.zeros_like(x), without_first_zero), axis)
    return (xp.where(before, simple, xp.where(first_zero, at_zero, xp.zeros_like(x))),)


@overload
def cumprod(x: Tensor[T, *S], axis: int) -> Tensor[T, *S]: ...
@overload
def cumprod(x: Tensor[T, *S], axis: int, **torch_keywords: Never) -> Tensor[T, *S]: ...
def cumprod(x: Tensor[T, *S], axis: int | None = None, **torch_keywords: Never) -> Tensor[T, *S]:
    """Running products along ``axis``, with exact gradients where values are 0.
    PyTorch: ``torch.cumprod`` (the axis required, as cumsum's)."""
    if torch_keywords or axis is None:
        refuse_torch_keywords("cumprod", torch_keywords)
    a = checked_axis(x, axis, "cumprod")
    if x.ndim == 0:
        return _as_vector(cumprod, x, a)
    out = x._backend.xp.cumulative_prod(x._data, axis=a)
    return record(out, cumprod_backward, (x,), (x._data, out, a), x._backend)
