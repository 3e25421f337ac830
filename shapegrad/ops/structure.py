"""Structure and order: triangles, flips and rolls, cumulative sums, sorting, index-valued
reductions, one-hot encoding, and the norms and deviations made of other ops.

``flip``, ``roll``, ``tril``/``triu`` and ``cumsum`` are primitives (forward and rule side by
side); ``sort``, ``topk``, ``std``, ``norm`` and ``masked_fill`` are composite (made of
differentiable ops, no rule of their own). ``argmax``, ``argmin``, ``argsort``, ``one_hot``,
``any``/``all``/``count_nonzero`` give untraced tensors, as index and boolean results do in
PyTorch.
"""

from __future__ import annotations

from typing import Any

from .._autodiff import NoTape
from .._errors import DTypeError, ShapeError
from .._tensor import AnyTensor, Tensor, record, wrap
from .._typevars import N, S, T
from . import elementwise as ew, reductions as red
from .indexing import take_along_axis

__all__ = [
    "all",
    "any",
    "argmax",
    "argmin",
    "argsort",
    "count_nonzero",
    "cumsum",
    "flip",
    "masked_fill",
    "norm",
    "one_hot",
    "roll",
    "sort",
    "std",
    "topk",
    "tril",
    "triu",
]


def _axis(x: AnyTensor, axis: int) -> int:
    if not -x.ndim <= axis < max(x.ndim, 1):
        raise ShapeError(f"axis {axis} is out of range for a tensor of shape {x.shape}")
    return axis % x.ndim if x.ndim else 0


# --------------------------------------------------------------------------- primitives
def flip_backward(xp: Any, g: Any, axis: int) -> tuple[Any, ...]:
    return (xp.flip(g, axis=axis),)


def flip(x: Tensor[T, *S], axis: int) -> Tensor[T, *S]:
    """The values in reverse order along ``axis``. d/dx: the gradient flipped back.
    PyTorch: ``torch.flip(x, (axis,))``."""
    a = _axis(x, axis)
    return record(x._backend.xp.flip(x._data, axis=a), flip_backward, (x,), (a,), x._backend)


def roll_backward(xp: Any, g: Any, shift: int, axis: int) -> tuple[Any, ...]:
    return (xp.roll(g, -shift, axis=axis),)


def roll(x: Tensor[T, *S], shift: int, axis: int) -> Tensor[T, *S]:
    """The values shifted by ``shift`` along ``axis``, wrapping around. d/dx: rolled back.
    PyTorch: ``torch.roll``."""
    a = _axis(x, axis)
    return record(x._backend.xp.roll(x._data, shift, axis=a), roll_backward, (x,), (shift, a), x._backend)


def _triangle_mask(xp: Any, rows: int, cols: int, k: int, lower: bool) -> Any:
    i = xp.reshape(xp.arange(rows), (rows, 1))
    j = xp.reshape(xp.arange(cols), (1, cols))
    return (j - i <= k) if lower else (j - i >= k)


def triangle_backward(xp: Any, g: Any, mask: Any) -> tuple[Any, ...]:
    return (ew.keep_where(xp, mask, g),)


def _triangle(x: AnyTensor, k: int, lower: bool) -> Any:
    if x.ndim < 2:
        raise ShapeError(f"{'tril' if lower else 'triu'} expects a tensor of rank >= 2, found shape {x.shape}")
    xp = x._backend.xp
    mask = _triangle_mask(xp, x.shape[-2], x.shape[-1], k, lower)
    return record(ew.keep_where(xp, mask, x._data), triangle_backward, (x,), (mask,), x._backend)


def tril(x: Tensor[T, *S, N, Any], k: int = 0) -> Tensor[T, *S, N, Any]:
    """The lower triangle of the last two axes (``j - i <= k``), zeros above: a causal mask
    is ``tril(ones(S, S))``. d/dx: the gradient's lower triangle. PyTorch: ``torch.tril``."""
    return _triangle(x, k, lower=True)


def triu(x: Tensor[T, *S, N, Any], k: int = 0) -> Tensor[T, *S, N, Any]:
    """The upper triangle of the last two axes (``j - i >= k``), zeros below.
    PyTorch: ``torch.triu``."""
    return _triangle(x, k, lower=False)


def cumsum_backward(xp: Any, g: Any, axis: int) -> tuple[Any, ...]:
    # out_j = Σ_{i<=j} x_i, so d/dx_i = Σ_{j>=i} g_j: a cumulative sum from the other end.
    return (xp.flip(xp.cumulative_sum(xp.flip(g, axis=axis), axis=axis), axis=axis),)


def cumsum(x: Tensor[T, *S], axis: int) -> Tensor[T, *S]:
    """Running sums along ``axis``. d/dx_i = Σ_{j>=i} g_j. PyTorch: ``torch.cumsum``."""
    a = _axis(x, axis)
    return record(x._backend.xp.cumulative_sum(x._data, axis=a), cumsum_backward, (x,), (a,), x._backend)


# --------------------------------------------------------------------------- index-valued
def _index_result(x: AnyTensor, name: str, axis: int | None, keepdims: bool) -> Any:
    xp = x._backend.xp
    data = x._data
    if axis is None:
        out = getattr(xp, name)(xp.reshape(data, (-1,)))
        return wrap(xp.reshape(out, (1,) * x.ndim) if keepdims else out, x._backend)
    return wrap(getattr(xp, name)(data, axis=_axis(x, axis), keepdims=keepdims), x._backend)


def argmax(x: Tensor[Any, *S], axis: int | None = None, keepdims: bool = False) -> Tensor[NoTape, *tuple[Any, ...]]:
    """Where the largest value is along ``axis`` (over all values, flattened, when None):
    an untraced integer tensor. PyTorch: ``torch.argmax``."""
    return _index_result(x, "argmax", axis, keepdims)


def argmin(x: Tensor[Any, *S], axis: int | None = None, keepdims: bool = False) -> Tensor[NoTape, *tuple[Any, ...]]:
    """Where the smallest value is along ``axis`` (untraced integers). PyTorch: ``torch.argmin``."""
    return _index_result(x, "argmin", axis, keepdims)


def argsort(x: Tensor[Any, *S], axis: int = -1, descending: bool = False) -> Tensor[NoTape, *S]:
    """The indices that sort ``x`` along ``axis`` (stable; untraced). PyTorch: ``torch.argsort``."""
    xp = x._backend.xp
    data = -x._data if descending else x._data
    return wrap(xp.argsort(data, axis=_axis(x, axis), stable=True), x._backend)


def _along_last(x: AnyTensor, axis: int) -> int:
    if _axis(x, axis) != x.ndim - 1:
        raise ShapeError(
            f"sort/topk work along the last axis here, found axis {axis} of shape {x.shape}; permute first"
        )
    return -1


def sort(x: Tensor[T, *S, N], axis: int = -1, descending: bool = False) -> Tensor[T, *S, N]:
    """The values sorted along the last axis; differentiable (each value's gradient goes
    back to where it came from). PyTorch: ``torch.sort(x).values``."""
    _along_last(x, axis)
    return take_along_axis(x, argsort(x, -1, descending))


def topk(
    x: Tensor[T, *S, N], k: int, axis: int = -1
) -> tuple[Tensor[T, *tuple[Any, ...]], Tensor[NoTape, *tuple[Any, ...]]]:
    """The ``k`` largest values along the last axis, largest first, and their indices;
    the values are differentiable. PyTorch: ``torch.topk``."""
    _along_last(x, axis)
    if not 0 <= k <= x.shape[-1]:
        raise ShapeError(f"topk: k={k} is out of range for an axis of size {x.shape[-1]}")
    indices: Any = argsort(x, -1, descending=True)[..., :k]
    return take_along_axis(x, indices), indices


def one_hot(labels: Tensor[Any, *S], num_classes: int, dtype: str = "float32") -> Tensor[NoTape, *S, Any]:
    """``labels (..)`` as ``(.., num_classes)`` rows of zeros with a 1 at each label
    (untraced). PyTorch: ``F.one_hot`` (which gives integers)."""
    name = labels.backend_dtype_name()
    if not name.startswith(("int", "uint")):
        raise DTypeError(f"one_hot expects integer labels, found dtype {name}")
    from .._device_checks import require_in_range

    backend = labels._backend
    xp = backend.xp
    require_in_range(backend, labels._data, 0, num_classes, f"one_hot: labels must lie in [0, {num_classes})")
    hot = xp.expand_dims(labels._data, axis=-1) == xp.arange(num_classes)
    return wrap(xp.astype(hot, backend.dtype(dtype)), backend)


def any(x: Tensor[Any, *S], axis: int | None = None, keepdims: bool = False) -> Tensor[NoTape, *tuple[Any, ...]]:
    """Whether any value along ``axis`` is true (non-zero); untraced booleans."""
    xp = x._backend.xp
    return wrap(xp.any(x._data, axis=None if axis is None else _axis(x, axis), keepdims=keepdims), x._backend)


def all(x: Tensor[Any, *S], axis: int | None = None, keepdims: bool = False) -> Tensor[NoTape, *tuple[Any, ...]]:
    """Whether every value along ``axis`` is true (non-zero); untraced booleans."""
    xp = x._backend.xp
    return wrap(xp.all(x._data, axis=None if axis is None else _axis(x, axis), keepdims=keepdims), x._backend)


def count_nonzero(x: Tensor[Any, *S], axis: int | None = None) -> Tensor[NoTape, *tuple[Any, ...]]:
    """How many values along ``axis`` are non-zero (untraced integers)."""
    xp = x._backend.xp
    nonzero = xp.astype(xp.astype(x._data, xp.bool), xp.int64)  # true where non-zero, any dtype
    return wrap(xp.sum(nonzero, axis=None if axis is None else _axis(x, axis)), x._backend)


# --------------------------------------------------------------------------- composites
def masked_fill(x: Tensor[T, *S], mask: Tensor[Any, *tuple[Any, ...]], value: float) -> Tensor[T, *S]:
    """``value`` where ``mask`` is true (broadcast against ``x``), ``x`` elsewhere; the
    gradient flows to ``x`` where it is kept. PyTorch: ``Tensor.masked_fill``."""
    select: Any = ew.where  # the mask broadcasts against x, which where's typed stack does not say yet
    return select(mask, value, x)


def std(
    x: Tensor[T, *S], axis: int | tuple[int, ...] | None = None, keepdims: bool = False, correction: float = 0.0
) -> Tensor[T, *tuple[Any, ...]]:
    """Standard deviation: ``sqrt(var(x, axis, correction))`` (``correction=1``: unbiased,
    PyTorch's default). PyTorch: ``torch.std``."""
    return ew.sqrt(red.var_impl(x, axis, keepdims, correction))


def norm(
    x: Tensor[T, *S], ord: float = 2, axis: int | tuple[int, ...] | None = None, keepdims: bool = False
) -> Tensor[T, *tuple[Any, ...]]:
    """The vector norm over ``axis`` (all values when None): ``ord=2`` √Σx², ``ord=1`` Σ|x|,
    ``ord=inf`` max |x|. PyTorch: ``torch.linalg.vector_norm``."""
    if ord == 2:
        return ew.sqrt(red.sum_impl(ew.mul_impl(x, x), axis, keepdims))
    if ord == 1:
        return red.sum_impl(ew.abs(x), axis, keepdims)
    if ord == float("inf"):
        return red.max_impl(ew.abs(x), axis, keepdims)
    raise ShapeError(f"norm supports ord 1, 2 and inf, found {ord!r}")
