"""Ops that move values without changing them: reshape, axis order, joins."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .._errors import ShapeError
from .._tensor import Tensor, record
from .._typevars import N, S, T

__all__ = ["broadcast_to", "concat", "expand_dims", "flatten", "permute", "reshape", "squeeze", "stack", "swapaxes"]


def reshape_backward(xp: Any, g: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    return (xp.reshape(g, shape),)


def reshape(x: Tensor[T, *S], shape: Sequence[int]) -> Tensor[T, *tuple[Any, ...]]:
    """The same values in ``shape`` (one entry may be -1). Open dims: annotate the result.
    PyTorch: ``torch.reshape``."""
    if len(shape) == 1 and not isinstance(shape[0], int):  # pyright: ignore[reportUnnecessaryIsInstance] -- reshape((2, 3)) as well as reshape(2, 3)
        shape = tuple(shape[0])
    data = x._data
    target = tuple(int(n) for n in shape)
    known = math.prod(n for n in target if n != -1)
    if (
        target.count(-1) > 1
        or (-1 not in target and known != x.size)
        or (-1 in target and (known == 0 or x.size % known))
    ):
        raise ShapeError(f"reshape: cannot view shape {x.shape} ({x.size} elements) as {target}")
    out = x._backend.xp.reshape(data, target)
    return record(out, reshape_backward, (x,), (tuple(data.shape),), x._backend)


def flatten(x: Tensor[T, N, *S]) -> Tensor[T, N, Any]:
    """Every axis after the first merged into one. PyTorch: ``torch.flatten(x, 1)``."""
    if x.ndim < 1:
        raise ShapeError("flatten expects a tensor of rank >= 1, found rank 0")
    return reshape(x, (x.shape[0], -1 if x.shape[0] else math.prod(x.shape[1:])))


def permute_backward(xp: Any, g: Any, axes: tuple[int, ...]) -> tuple[Any, ...]:
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return (xp.permute_dims(g, tuple(inverse)),)


def permute(x: Tensor[T, *S], axes: Sequence[int] | None) -> Tensor[T, *tuple[Any, ...]]:
    """Axes in the order ``axes`` gives (reversed when None). PyTorch: ``Tensor.permute``."""
    ndim = x.ndim
    order = tuple(reversed(range(ndim))) if not axes else tuple(a % ndim if ndim else a for a in axes)
    if sorted(order) != list(range(ndim)):
        raise ShapeError(f"permute: {tuple(axes or ())} is not an ordering of the {ndim} axes of shape {x.shape}")
    out = x._backend.xp.permute_dims(x._data, order)
    return record(out, permute_backward, (x,), (order,), x._backend)


def swapaxes(x: Tensor[T, *S], axis1: int, axis2: int) -> Tensor[T, *tuple[Any, ...]]:
    """Two axes exchanged. PyTorch: ``torch.swapaxes``."""
    order = list(range(x.ndim))
    try:
        order[axis1], order[axis2] = order[axis2], order[axis1]
    except IndexError:
        raise ShapeError(f"swapaxes: axes {axis1}, {axis2} out of range for shape {x.shape}") from None
    return permute(x, order)


def swap_last(x: Tensor[T, *S, N, Any]) -> Any:
    """The last two axes swapped."""
    if x.ndim < 2:
        raise ShapeError(f"mT expects a tensor of rank >= 2, found shape {x.shape}")
    return swapaxes(x, -1, -2)


def expand_dims(x: Tensor[T, *S], axis: int) -> Tensor[T, *tuple[Any, ...]]:
    """A new size-1 axis at ``axis``. PyTorch: ``torch.unsqueeze``."""
    shape = list(x.shape)
    position = axis if axis >= 0 else len(shape) + 1 + axis
    if not 0 <= position <= len(shape):
        raise ShapeError(f"expand_dims: axis {axis} out of range for shape {x.shape}")
    shape.insert(position, 1)
    return reshape(x, shape)


def squeeze(x: Tensor[T, *S], axis: int | None = None) -> Tensor[T, *tuple[Any, ...]]:
    """Size-1 axes removed (only ``axis`` when given). PyTorch: ``torch.squeeze``."""
    shape = x.shape
    if axis is None:
        return reshape(x, [n for n in shape if n != 1])
    if not -len(shape) <= axis < len(shape) or shape[axis] != 1:
        raise ShapeError(f"squeeze: axis {axis} of shape {shape} is expected to have size 1")
    kept = list(shape)
    del kept[axis]
    return reshape(x, kept)


def broadcast_backward(xp: Any, g: Any) -> tuple[Any, ...]:
    return (g,)  # the engine sums the broadcast axes back


def broadcast_to(x: Tensor[T, *S], shape: Sequence[int]) -> Tensor[T, *tuple[Any, ...]]:
    """The values repeated along new or size-1 axes. PyTorch: ``Tensor.expand``."""
    if len(shape) == 1 and not isinstance(shape[0], int):  # pyright: ignore[reportUnnecessaryIsInstance] -- broadcast_to((2, 3)) from untyped callers
        shape = tuple(shape[0])
    try:
        out = x._backend.xp.broadcast_to(x._data, tuple(shape))
    except ValueError:
        raise ShapeError(f"broadcast_to: shape {x.shape} cannot broadcast to {tuple(shape)}") from None
    return record(out, broadcast_backward, (x,), (), x._backend)


def concat_backward(xp: Any, g: Any, axis: int, bounds: tuple[int, ...]) -> tuple[Any, ...]:
    parts: list[Any] = []
    index: list[Any] = [slice(None)] * g.ndim
    for start, stop in zip(bounds[:-1], bounds[1:], strict=False):
        index[axis] = slice(start, stop)
        parts.append(g[tuple(index)])
    return tuple(parts)


def concat(tensors: Sequence[Tensor[T, *tuple[Any, ...]]], axis: int = 0) -> Tensor[T, *tuple[Any, ...]]:
    """Tensors joined along an existing ``axis``; the joined size is open (annotate it).
    PyTorch: ``torch.cat``."""
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
    out = backend.xp.concat([t._data for t in tensors], axis=axis)
    return record(out, concat_backward, tuple(tensors), (axis, tuple(bounds)), backend)


def stack(tensors: Sequence[Tensor[T, *S]], axis: int = 0) -> Tensor[T, *tuple[Any, ...]]:
    """Tensors of one shape joined along a new ``axis``. PyTorch: ``torch.stack``."""
    if not tensors:
        raise ShapeError("stack expects at least one tensor, found none")
    shape = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != shape:
            raise ShapeError(f"stack: tensor {i} has shape {t.shape}, expected {shape} like tensor 0")
    return concat([expand_dims(t, axis) for t in tensors], axis=axis)
