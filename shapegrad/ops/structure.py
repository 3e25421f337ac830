"""Structure and order: triangles, flips and rolls, cumulative sums, sorting, index-valued
reductions, one-hot encoding, and the norms and deviations made of other ops.

``flip``, ``roll``, ``tril``/``triu``, ``cumsum``, ``std`` and the 2-norm are primitives
(forward and rule side by side: the last two have rules of their own, 0 at a zero
deviation or norm, where the chain rule of their composition gives NaN); ``sort``, ``topk``
and ``masked_fill`` are composite (made of differentiable ops, no rule of their own). ``argmax``, ``argmin``, ``argsort``, ``one_hot``,
``any``/``all``/``count_nonzero`` give untraced tensors, as index and boolean results do in
PyTorch.
"""

from __future__ import annotations

from typing import Any

from .._autodiff import NoTape
from .._backend import same_backend
from .._dims import Open
from .._errors import DTypeError, ShapeError
from .._tensor import AnyTensor, Tensor, record, wrap
from .._typevars import N, S, T
from . import elementwise as ew, reductions as red, shape as shp
from .indexing import getitem, take_along_axis

__all__ = [
    "cumprod",
    "prod",
    "chunk",
    "diag",
    "diagonal",
    "einsum",
    "narrow",
    "pad",
    "split",
    "tile",
    "unflatten",
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


def tril(x: Tensor[T, *S], k: int = 0) -> Tensor[T, *S]:
    """The lower triangle of the last two axes (``j - i <= k``), zeros above: a causal mask
    is ``tril(ones(S, S))``. d/dx: the gradient's lower triangle. PyTorch: ``torch.tril``."""
    return _triangle(x, k, lower=True)


def triu(x: Tensor[T, *S], k: int = 0) -> Tensor[T, *S]:
    """The upper triangle of the last two axes (``j - i >= k``), zeros below.
    PyTorch: ``torch.triu``."""
    return _triangle(x, k, lower=False)


def _reverse_cumsum(xp: Any, a: Any, axis: int) -> Any:
    """Σ_{j>=i} a_j along ``axis``: a cumulative sum from the other end."""
    return xp.flip(xp.cumulative_sum(xp.flip(a, axis=axis), axis=axis), axis=axis)


def cumsum_backward(xp: Any, g: Any, axis: int) -> tuple[Any, ...]:
    # out_j = Σ_{i<=j} x_i, so d/dx_i = Σ_{j>=i} g_j: a cumulative sum from the other end.
    return (_reverse_cumsum(xp, g, axis),)


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


def argmax(x: Tensor[Any, *S], axis: int | None = None, keepdims: bool = False) -> Tensor[NoTape, *tuple[Open, ...]]:
    """Where the largest value is along ``axis`` (over all values, flattened, when None):
    an untraced integer tensor. PyTorch: ``torch.argmax``."""
    return _index_result(x, "argmax", axis, keepdims)


def argmin(x: Tensor[Any, *S], axis: int | None = None, keepdims: bool = False) -> Tensor[NoTape, *tuple[Open, ...]]:
    """Where the smallest value is along ``axis`` (untraced integers). PyTorch: ``torch.argmin``."""
    return _index_result(x, "argmin", axis, keepdims)


def argsort(x: Tensor[Any, *S], axis: int = -1, descending: bool = False) -> Tensor[NoTape, *S]:
    """The indices that sort ``x`` along ``axis`` (stable: equal values keep their order;
    descending, NaN first; untraced). PyTorch: ``torch.argsort(x, axis, descending, stable=True)``."""
    xp = x._backend.xp
    a = _axis(x, axis)
    data = x._data
    if data.dtype == xp.bool:  # the array API sorts numbers only
        data = xp.astype(data, xp.uint8)
    if not descending:
        return wrap(xp.argsort(data, axis=a, stable=True), x._backend)
    # The ascending order of the reversed axis, reversed: descending, with equal values in
    # their first order. Not an ascending sort of -x, which is wrong for unsigned 0 (and
    # int64's minimum, its own negation), refused for booleans, and puts NaN last.
    backwards = xp.argsort(xp.flip(data, axis=a), axis=a, stable=True)
    return wrap((data.shape[a] - 1) - xp.flip(backwards, axis=a), x._backend)


def _to_last(x: AnyTensor, axis: int) -> tuple[Any, int]:
    """``x`` with ``axis`` moved last (a differentiable swap), and that axis's index."""
    a = _axis(x, axis)
    last = x.ndim - 1
    return (x if a == last else shp.swapaxes(x, a, last)), a


def _from_last(y: Any, a: int) -> Any:
    last = y.ndim - 1
    return y if a == last else shp.swapaxes(y, a, last)


def sort(x: Tensor[T, *S], axis: int = -1, descending: bool = False) -> Tensor[T, *S]:
    """The values sorted along ``axis``; differentiable (each value's gradient goes back to
    where it came from). PyTorch: ``torch.sort(x, axis).values``."""
    moved, a = _to_last(x, axis)
    return _from_last(take_along_axis(moved, argsort(moved, -1, descending)), a)


def topk(
    x: Tensor[T, *S], k: int, axis: int = -1
) -> tuple[Tensor[T, *tuple[Any, ...]], Tensor[NoTape, *tuple[Any, ...]]]:
    """The ``k`` largest values along ``axis``, largest first, and their indices; the
    values are differentiable. PyTorch: ``torch.topk(x, k, axis)``."""
    moved, a = _to_last(x, axis)
    if not 0 <= k <= moved.shape[-1]:
        raise ShapeError(f"topk: k={k} is out of range for an axis of size {moved.shape[-1]}")
    indices: Any = argsort(moved, -1, descending=True)[..., :k]
    return _from_last(take_along_axis(moved, indices), a), _from_last(indices, a)


def one_hot(labels: Tensor[Any, *S], num_classes: int, dtype: str = "float32") -> Tensor[NoTape, *S, Open]:
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


def any(x: Tensor[Any, *S], axis: int | None = None, keepdims: bool = False) -> Tensor[NoTape, *tuple[Open, ...]]:
    """Whether any value along ``axis`` is true (non-zero); untraced booleans."""
    xp = x._backend.xp
    return wrap(xp.any(x._data, axis=None if axis is None else _axis(x, axis), keepdims=keepdims), x._backend)


def all(x: Tensor[Any, *S], axis: int | None = None, keepdims: bool = False) -> Tensor[NoTape, *tuple[Open, ...]]:
    """Whether every value along ``axis`` is true (non-zero); untraced booleans."""
    xp = x._backend.xp
    return wrap(xp.all(x._data, axis=None if axis is None else _axis(x, axis), keepdims=keepdims), x._backend)


def count_nonzero(x: Tensor[Any, *S], axis: int | None = None) -> Tensor[NoTape, *tuple[Open, ...]]:
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


def std(x: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, correction: float = 0.0) -> Any:
    """Standard deviation: ``sqrt(var(x, axis, correction))`` (``correction=1``: unbiased,
    PyTorch's default). d/dx_i = ``(x_i - mean) / ((n - correction) · std)``, and 0 where
    the std is 0 (a constant slice), as PyTorch. PyTorch: ``torch.std``."""
    ew.require_float(x, "std")
    xp = x._backend.xp
    data = x._data
    axes = red.normalize_axes(axis, data.ndim)
    count = 1
    for a in axes:
        count *= data.shape[a]
    centred = data - xp.mean(data, axis=axes, keepdims=True)
    squared = xp.mean(centred * centred, axis=axes, keepdims=keepdims)
    # As var (and PyTorch): NaN when there are no more values than the correction.
    denominator = count - correction if count > correction else float("nan")
    if correction:
        squared = squared * (count / denominator)
    out = xp.sqrt(squared)
    return record(out, std_backward, (x,), (centred, out, axes, keepdims, denominator), x._backend)


def _root_derivative(
    xp: Any, g: Any, root: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool, scale: float
) -> Any:
    """``g / (scale · root)`` back on ``shape``, and 0 where ``root`` is 0: the derivative of
    the square root of a sum of squares that is 0 (there the chain rule's ``inf · 0`` is
    NaN; PyTorch gives 0)."""
    root = red._restore(xp, root, shape, axes, keepdims)
    nonzero = root != 0
    safe = xp.where(nonzero, root, xp.ones_like(root))  # on the reduced shape: cheap
    return ew.keep_where(xp, nonzero, red._restore(xp, g, shape, axes, keepdims) / (scale * safe))


def std_backward(
    xp: Any, g: Any, centred: Any, out: Any, axes: tuple[int, ...], keepdims: bool, denominator: float
) -> tuple[Any, ...]:
    return (centred * _root_derivative(xp, g, out, tuple(centred.shape), axes, keepdims, denominator),)


def norm2_backward(xp: Any, g: Any, x: Any, out: Any, axes: tuple[int, ...], keepdims: bool) -> tuple[Any, ...]:
    return (x * _root_derivative(xp, g, out, tuple(x.shape), axes, keepdims, 1.0),)


def norm(
    x: Tensor[T, *S], ord: float = 2, axis: int | tuple[int, ...] | None = None, keepdims: bool = False
) -> Tensor[T, *tuple[Open, ...]]:
    """The vector norm over ``axis`` (all values when None): ``ord=2`` √Σx², ``ord=1`` Σ|x|,
    ``ord=inf`` max |x|. For ``ord=2`` d/dx = ``x / norm``, and 0 where the norm is 0 (a zero
    vector), as PyTorch. PyTorch: ``torch.linalg.vector_norm``."""
    if ord == 2:
        xp = x._backend.xp
        data = x._data
        axes = red.normalize_axes(axis, data.ndim)
        out = xp.sqrt(xp.sum(data * data, axis=axes, keepdims=keepdims))
        return record(out, norm2_backward, (x,), (data, out, axes, keepdims), x._backend)
    if ord == 1:
        return red.sum(ew.abs(x), axis, keepdims)
    if ord == float("inf"):
        return red.max(ew.abs(x), axis, keepdims)
    raise ShapeError(f"norm supports ord 1, 2 and inf, found {ord!r}")


# --------------------------------------------------------------------------- pieces (composite)
def _slice_along(x: AnyTensor, axis: int, start: int, stop: int, step: int = 1) -> Any:
    index: tuple[Any, ...] = (slice(None),) * axis + (slice(start, stop, step),)
    return getitem(x, index)


def narrow(x: Tensor[T, *S], axis: int, start: int, length: int) -> Tensor[T, *tuple[Open, ...]]:
    """``length`` values from ``start`` along ``axis``. PyTorch: ``torch.narrow``."""
    a = _axis(x, axis)
    if start < 0 or length < 0 or start + length > x.shape[a]:
        raise ShapeError(f"narrow: [{start}, {start + length}) does not fit axis {a} of size {x.shape[a]}")
    return _slice_along(x, a, start, start + length)


def split(x: Tensor[T, *S], size_or_sizes: int | list[int], axis: int = 0) -> tuple[Tensor[T, *tuple[Any, ...]], ...]:
    """Pieces along ``axis``: of ``size`` each (the last may be smaller), or of the given
    sizes (which must add up to the axis). Each piece is differentiable. PyTorch: ``torch.split``."""
    a = _axis(x, axis)
    n = x.shape[a]
    if isinstance(size_or_sizes, int):
        if size_or_sizes < 1:
            raise ShapeError(f"split expects a piece size of at least 1, found {size_or_sizes}")
        sizes = [min(size_or_sizes, n - start) for start in range(0, n, size_or_sizes)]
    else:
        sizes = list(size_or_sizes)
        if sum(sizes) != n:
            raise ShapeError(f"split: sizes {sizes} add up to {sum(sizes)}, expected axis {a}'s size {n}")
    pieces: list[Any] = []
    start = 0
    for size in sizes:
        pieces.append(_slice_along(x, a, start, start + size))
        start += size
    return tuple(pieces)


def chunk(x: Tensor[T, *S], chunks: int, axis: int = 0) -> tuple[Tensor[T, *tuple[Any, ...]], ...]:
    """``chunks`` pieces along ``axis`` of ``ceil(n / chunks)`` values (fewer pieces when the
    axis is short). PyTorch: ``torch.chunk``."""
    if not isinstance(chunks, int) or chunks < 1:  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
        raise ShapeError(f"chunk expects a number of chunks >= 1, found {chunks!r}")
    n = x.shape[_axis(x, axis)]
    return split(x, max(1, -(-n // chunks)), axis)


def unflatten(x: Tensor[T, *S], axis: int, sizes: tuple[int, ...]) -> Tensor[T, *tuple[Open, ...]]:
    """Axis ``axis`` split into ``sizes`` (one may be -1). PyTorch: ``torch.unflatten``."""
    a = _axis(x, axis)
    shape = x.shape
    return shp.reshape(x, (*shape[:a], *sizes, *shape[a + 1 :]))


def tile(x: Tensor[T, *S], reps: tuple[int, ...]) -> Tensor[T, *tuple[Open, ...]]:
    """``x`` repeated ``reps[i]`` times along each axis (NumPy's ``tile``: fewer ``reps``
    than axes repeat the last axes, ``sg.repeat`` refuses that as PyTorch does); the
    gradient sums the copies."""
    return shp.repeat(x, (1,) * (x.ndim - len(reps)) + tuple(reps))


def diagonal(x: Tensor[T, *S], offset: int = 0) -> Tensor[T, *tuple[Open, ...]]:
    """The diagonal ``x[..., i, i + offset]`` of the last two axes. PyTorch:
    ``torch.diagonal(x, offset, -2, -1)``."""
    if x.ndim < 2:
        raise ShapeError(f"diagonal expects a tensor of rank >= 2, found shape {x.shape}")
    rows, cols = x.shape[-2], x.shape[-1]
    length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    # Picked, not summed from x times an identity mask (an infinite value off the diagonal,
    # a causal mask's -inf, would make that sum NaN): in the flattened matrix the diagonal
    # is every (cols + 1)-th value from x[0, offset] or x[-offset, 0].
    start = offset if offset >= 0 else -offset * cols
    flat = shp.reshape(x, (*x.shape[:-2], rows * cols))
    return _slice_along(flat, flat.ndim - 1, start, start + (length - 1) * (cols + 1) + 1, cols + 1)


def diag(v: Tensor[T, N]) -> Tensor[T, N, N]:
    """The square matrix with ``v`` on its diagonal. PyTorch: ``torch.diag`` of a vector."""
    if v.ndim != 1:
        raise ShapeError(f"diag expects a vector, found shape {v.shape}")
    n = v.shape[0]
    xp = v._backend.xp
    on_diagonal = wrap(_triangle_mask(xp, n, n, 0, True) & _triangle_mask(xp, n, n, 0, False), v._backend)
    column: AnyTensor = shp.expand_dims(v, -1)
    select: Any = ew.where  # the (N, N) condition broadcasts the (N, 1) column
    return select(on_diagonal, column, 0.0)  # selected, not column · eye: inf · 0 would be NaN


def pad(x: Tensor[T, *S], widths: Any, mode: str = "constant", value: float = 0.0) -> Tensor[T, *tuple[Open, ...]]:
    """``x`` padded by ``widths`` (NumPy's: one ``(before, after)`` pair per axis, or one pair
    for every axis): with ``value`` (``"constant"``), the edge value (``"replicate"``) or the
    values mirrored at the edge (``"reflect"``). Differentiable. PyTorch: ``F.pad``."""
    pairs = [tuple(w) for w in widths] if isinstance(widths[0], (tuple, list)) else [tuple(widths)] * x.ndim
    if len(pairs) != x.ndim:
        raise ShapeError(f"pad expects one (before, after) pair per axis ({x.ndim}), found {len(pairs)}")
    if mode not in ("constant", "replicate", "reflect"):
        raise ShapeError(f"pad mode must be 'constant', 'replicate' or 'reflect', found {mode!r}")
    out: Any = x
    for axis, (before, after) in enumerate(pairs):
        if before == 0 and after == 0:
            continue
        n = out.shape[axis]
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
                edge = _slice_along(out, axis, 0, 1) if at_start else _slice_along(out, axis, n - 1, n)
                shape = list(out.shape)
                shape[axis] = width
                parts.append(shp.broadcast_to(edge, tuple(shape)))
            else:
                mirror = (
                    _slice_along(out, axis, 1, width + 1) if at_start else _slice_along(out, axis, n - 1 - width, n - 1)
                )
                parts.append(flip(mirror, axis))
        pieces = [p for p in (parts[0], out, parts[1]) if p is not None]
        out = shp.concat(pieces, any_axis=axis)
    return out


# --------------------------------------------------------------------------- einsum
def _parse_einsum(spec: str, count: int) -> tuple[list[str], str]:
    if "." in spec:
        raise ShapeError(f"einsum: ellipsis ('...') is not supported, found {spec!r}; name every axis")
    inputs, arrow, output = spec.replace(" ", "").partition("->")
    terms = inputs.split(",")
    if len(terms) != count:
        raise ShapeError(f"einsum: {spec!r} names {len(terms)} operands, found {count}")
    if not arrow:  # NumPy's implicit output: letters used once, in order
        output = "".join(sorted(c for c in set(inputs) if c.isalpha() and inputs.count(c) == 1))
    for letter in output:
        if letter not in inputs:
            raise ShapeError(f"einsum {spec!r}: output letter {letter!r} names no axis of the operands ({inputs!r})")
        if output.count(letter) > 1:
            raise ShapeError(f"einsum {spec!r}: output letter {letter!r} appears {output.count(letter)} times")
    for letter in inputs.replace(",", ""):
        if not letter.isalpha():
            raise ShapeError(f"einsum {spec!r}: subscripts are letters, found {letter!r}")
    return terms, output


def _distinct(term: str) -> str:
    """The letters of ``term`` in order, each once: ``"iji"`` is ``"ij"``."""
    return "".join(dict.fromkeys(term))


def _undiagonal(backend: Any, grad: Any, term: str, shape: tuple[int, ...], used: str) -> Any:
    """The gradient of an operand whose subscripts repeat a letter (``"ii"``), from the
    gradient of its diagonal (over ``_distinct(term)``): placed on the diagonal, 0 off it.
    Each repeat gets a fresh letter tied to the first by an identity matrix, so the
    placement is one contraction (``"i,ij->ij"`` with ``eye``)."""
    xp = backend.xp
    fresh = (c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in used)
    full: list[str] = []
    ties: list[str] = []
    eyes: list[Any] = []
    for axis, letter in enumerate(term):
        if letter in term[:axis]:
            other = next(fresh)
            full.append(other)
            ties.append(letter + other)
            eyes.append(xp.eye(shape[axis], dtype=grad.dtype))
        else:
            full.append(letter)
    return _contract(backend, ",".join([_distinct(term), *ties]) + "->" + "".join(full), [grad, *eyes])


def einsum_backward(
    xp: Any, g: Any, terms: list[str], output: str, arrays: tuple[Any, ...], backend: Any
) -> tuple[Any, ...]:
    grads: list[Any] = []
    used = "".join(terms) + output
    for k, term in enumerate(terms):
        others = [(t, a) for i, (t, a) in enumerate(zip(terms, arrays, strict=True)) if i != k]
        available = set(output).union(*[set(t) for t, _ in others])
        distinct = _distinct(term)
        kept = "".join(c for c in distinct if c in available)
        spec = ",".join([output, *[t for t, _ in others]]) + "->" + kept
        grad = _contract(backend, spec, [g, *[a for _, a in others]])
        shape = tuple(arrays[k].shape[term.index(c)] for c in distinct)
        if kept != distinct:  # letters only this operand had were summed away: their gradient is constant along them
            grad = xp.broadcast_to(
                xp.reshape(grad, tuple(n if c in kept else 1 for c, n in zip(distinct, shape, strict=True))), shape
            )
        if distinct != term:  # a repeated letter took a diagonal: its gradient lies on it
            grad = _undiagonal(backend, grad, term, tuple(arrays[k].shape), used)
        grads.append(grad)
    return tuple(grads)


def _contract(backend: Any, spec: str, arrays: list[Any]) -> Any:
    xp = backend.xp
    einsum_fn = getattr(xp, "einsum", None)
    if einsum_fn is not None:
        # NumPy's and CuPy's einsum choose the contraction order with opt_einsum's greedy path.
        return einsum_fn(spec, *arrays, optimize="greedy")
    import numpy as np  # a strict Array-API library has no einsum: contract on the host

    host = np.einsum(spec, *[np.asarray(backend.to_numpy(a)) for a in arrays], optimize="greedy")
    return backend.asarray(host, None)


def einsum(spec: str, *operands: Tensor[Any, *tuple[Any, ...]]) -> Tensor[Any, *tuple[Open, ...]]:
    """Einstein summation, ``einsum("bij,bjk->bik", a, b)``, differentiable in every operand.
    Each letter must bind one size (else ``ShapeError`` naming the letter); the contraction
    order is chosen by NumPy's/CuPy's optimizer (opt_einsum's greedy path). A letter repeated
    within one operand takes its diagonal (``"ii->"`` is the trace, ``"ii->i"`` the
    diagonal); the output names each letter at most once. No ``...``. PyTorch:
    ``torch.einsum``.

    Examples:
        >>> import shapegrad as sg
        >>> sg.einsum("ij,jk->ik", sg.ones(2, 3), sg.ones(3, 4)).shape
        (2, 4)
    """
    if not operands:
        raise ShapeError("einsum expects at least one operand")
    terms, output = _parse_einsum(spec, len(operands))
    backend = operands[0]._backend
    sizes: dict[str, tuple[int, int]] = {}
    for i, (term, operand) in enumerate(zip(terms, operands, strict=True)):
        same_backend(operands[0], operand)
        if len(term) != operand.ndim:
            raise ShapeError(f"einsum: operand {i} has shape {operand.shape} but subscripts {term!r}")
        for letter, size in zip(term, operand.shape, strict=True):
            seen = sizes.setdefault(letter, (size, i))
            if seen[0] != size:
                raise ShapeError(
                    f"einsum {spec!r}: letter {letter!r} is {seen[0]} in operand {seen[1]} but {size} in operand {i}"
                )
    arrays = tuple(o._data for o in operands)
    out = _contract(backend, f"{','.join(terms)}->{output}", list(arrays))
    return record(out, einsum_backward, operands, (terms, output, arrays, backend), backend)


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
    x: Tensor[T, *S], axis: int | tuple[int, ...] | None = None, keepdims: bool = False
) -> Tensor[T, *tuple[Open, ...]]:
    """The product over ``axis`` (all values when None), with exact gradients where values are
    0. d/dx_i = Π_{j≠i} x_j. PyTorch: ``torch.prod``."""
    xp = x._backend.xp
    data = x._data
    axes = red.normalize_axes(axis, data.ndim)
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


def cumprod(x: Tensor[T, *S], axis: int) -> Tensor[T, *S]:
    """Running products along ``axis``, with exact gradients where values are 0.
    PyTorch: ``torch.cumprod``."""
    a = _axis(x, axis)
    out = x._backend.xp.cumulative_prod(x._data, axis=a)
    return record(out, cumprod_backward, (x,), (x._data, out, a), x._backend)
