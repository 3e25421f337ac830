"""Reductions and the softmax family."""

from __future__ import annotations

import builtins
import math
from typing import Any

from .._autodiff import NoTape as NoTape
from .._backend import fused_kernel, same_backend
from .._tensor import AnyTensor, Tensor, record
from .._typevars import S, T
from .elementwise import require_float, shape_clash

__all__ = ["log_softmax", "logsumexp", "max", "mean", "min", "softmax", "sum", "var"]


def normalize_axes(axis: int | tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    """``axis`` as a sorted tuple of non-negative axes (every axis when None)."""
    from .._errors import ShapeError

    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    result: list[int] = []
    for a in axes:
        if not -ndim <= a < builtins.max(ndim, 1):
            raise ShapeError(f"axis {a} is out of range for a tensor of rank {ndim}")
        result.append(a % ndim if ndim else 0)
    return tuple(sorted(set(result)))


def _over_empty(data: Any, axes: tuple[int, ...]) -> bool:
    """Whether a reduction over ``axes`` reduces an axis of size 0 (no values at all)."""
    return any(data.shape[a] == 0 for a in axes)


def _restore(xp: Any, g: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> Any:
    """A reduced gradient given back its reduced axes (size 1), ready to broadcast."""
    if not keepdims and axes:
        kept = list(shape)
        for a in axes:
            kept[a] = 1
        g = xp.reshape(g, tuple(kept))
    return g


def sum_backward(xp: Any, g: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[Any, ...]:
    return (xp.broadcast_to(_restore(xp, g, shape, axes, keepdims), shape),)


def sum(x: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
    """Sum over ``axis`` (all axes when None). d/dx = 1. PyTorch: ``torch.sum``."""
    data = x._data
    axes = normalize_axes(axis, data.ndim)
    out = x._backend.xp.sum(data, axis=axes, keepdims=keepdims)
    return record(out, sum_backward, (x,), (tuple(data.shape), axes, keepdims), x._backend)


def mean_backward(
    xp: Any, g: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool, count: int
) -> tuple[Any, ...]:
    return (xp.broadcast_to(_restore(xp, g, shape, axes, keepdims) / count, shape),)


def mean(x: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
    """Mean over ``axis``. d/dx = 1/n. PyTorch: ``torch.mean``."""
    require_float(x, "mean")
    data = x._data
    axes = normalize_axes(axis, data.ndim)
    count = 1
    for a in axes:
        count *= data.shape[a]
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
    return (xp.where(hit, _restore(xp, g, shape, axes, keepdims) / count, zero),)


def _extremum(x: AnyTensor, axis: int | tuple[int, ...] | None, keepdims: bool, name: str) -> Any:
    from .._errors import ShapeError

    data = x._data
    axes = normalize_axes(axis, data.ndim)
    if any(data.shape[a] == 0 for a in axes):
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
    axes = normalize_axes(axis, x.ndim)
    count = 1
    for a in axes:
        count *= x.shape[a]
    centred = x - mean(x, axes, True)
    squared = mean(centred * centred, axes, keepdims)
    if correction:
        # As PyTorch: NaN when there are no more values than the correction.
        squared = squared * (count / (count - correction) if count > correction else float("nan"))
    return squared


def logsumexp_backward(xp: Any, g: Any, x: Any, out: Any, axes: tuple[int, ...], keepdims: bool) -> tuple[Any, ...]:
    shape = tuple(x.shape)
    return (_restore(xp, g, shape, axes, keepdims) * xp.exp(x - _restore(xp, out, shape, axes, keepdims)),)


def logsumexp(x: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
    """``log(sum(exp(x)))`` over ``axis``, stable for any logits. d/dx = softmax(x). PyTorch: ``torch.logsumexp``."""
    require_float(x, "logsumexp")
    xp = x._backend.xp
    data = x._data
    axes = normalize_axes(axis, data.ndim)
    if _over_empty(data, axes):
        # The sum of no exponentials is 0, and its log -inf (as PyTorch).
        reduced = tuple(1 if i in axes else n for i, n in enumerate(data.shape))
        out = xp.full(reduced, -math.inf, dtype=data.dtype)
    else:
        peak = xp.max(data, axis=axes, keepdims=True)
        peak = xp.where(xp.isfinite(peak), peak, xp.zeros_like(peak))
        out = xp.log(xp.sum(xp.exp(data - peak), axis=axes, keepdims=True)) + peak
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


def softmax_backward(xp: Any, g: Any, y: Any, axis: int, scale: float = 1.0, mask: Any = None) -> tuple[Any, ...]:
    gy = g * y
    gz = gy - y * xp.sum(gy, axis=axis, keepdims=True)
    if mask is not None:  # masked scores were replaced: they get no gradient
        gz = xp.where(mask, gz, xp.zeros_like(gz))
    return (gz * scale if scale != 1.0 else gz,)


def softmax(
    x: Tensor[T, *S], axis: int = -1, *, scale: float = 1.0, mask: Tensor[Any, *tuple[Any, ...]] | None = None
) -> Tensor[T, *S]:
    """``e^z / sum(e^z)`` along ``axis`` for ``z = scale · x``, with the maximum subtracted
    first; where ``mask`` (broadcast against ``x``) is false, ``z`` is -1e9 (weight 0; in
    float16, its most negative value), so a row masked throughout is uniform.
    ``softmax(scores, scale=1/√d, mask=causal)`` is attention's weights as one op.
    d/dx: ``scale · y · (g - sum(g · y))``, zero where masked.
    PyTorch: ``torch.softmax(torch.where(mask, scale * x, -1e9), axis)``."""
    require_float(x, "softmax")
    xp = x._backend.xp
    data = x._data
    if _over_empty(data, normalize_axes(axis, data.ndim)):
        y = xp.zeros_like(data)  # no values to normalise: an empty result, as PyTorch
        return record(y, softmax_backward, (x,), (y, axis), x._backend)
    allowed = None
    if mask is not None:
        same_backend(x, mask)
        if _broadcast_result(tuple(mask.shape), data.shape) != data.shape:
            raise shape_clash("softmax mask", x, mask)
        allowed = mask._data
    last = normalize_axes(axis, data.ndim) == (data.ndim - 1,)
    kernel = fused_kernel(x._backend, "softmax", data.dtype) if last else None
    y = None if kernel is None else kernel(data, scale, allowed)  # scale, mask, max in one pass
    if y is not None:
        return record(y, softmax_backward, (x,), (y, axis, scale, allowed), x._backend)
    z = data * scale if scale != 1.0 else data
    if allowed is not None:
        z = xp.where(allowed, z, masked_score(xp, data.dtype))
    e = xp.exp(z - xp.max(z, axis=axis, keepdims=True))
    y = e / xp.sum(e, axis=axis, keepdims=True)
    return record(y, softmax_backward, (x,), (y, axis, scale, allowed), x._backend)


def log_softmax_backward(xp: Any, g: Any, y: Any, axis: int) -> tuple[Any, ...]:
    return (g - xp.exp(y) * xp.sum(g, axis=axis, keepdims=True),)


def log_softmax(x: Tensor[T, *S], axis: int = -1) -> Tensor[T, *S]:
    """``x - logsumexp(x)`` along ``axis``, finite at any logits.
    d/dx: ``g - softmax(x) · sum(g)``. PyTorch: ``torch.log_softmax``."""
    require_float(x, "log_softmax")
    xp = x._backend.xp
    data = x._data
    if _over_empty(data, normalize_axes(axis, data.ndim)):
        y = xp.zeros_like(data)  # an empty result, as PyTorch
    else:
        shifted = data - xp.max(data, axis=axis, keepdims=True)
        y = shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))
    return record(y, log_softmax_backward, (x,), (y, axis), x._backend)
