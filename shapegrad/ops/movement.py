"""Moving tensors between backends, gradients included."""

from __future__ import annotations

from typing import Any

from .._backend import Backend, resolve_backend
from .._tensor import Tensor, record
from .._typevars import S, T

__all__ = ["to_backend"]


def to_backend_backward(xp: Any, g: Any, source: Backend, target: Backend) -> tuple[Any, ...]:
    return (source.asarray(target.to_numpy(g), None),)


def to_backend(x: Tensor[T, *S], backend: str | Backend) -> Tensor[T, *S]:
    """The values on ``backend``; the gradient travels back to the source backend."""
    target = resolve_backend(backend, "x.to(backend)")
    source = x._backend
    if target is source:
        return x
    data = target.asarray(source.to_numpy(x._data), None)
    return record(data, to_backend_backward, (x,), (source, target), target)
