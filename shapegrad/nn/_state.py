"""A model's state as a dict of NumPy arrays: ``state_dict`` and ``load_state_dict``.

The checks are ``sg.load``'s (``shapegrad._serialize``): every name, shape and dtype is
validated and every array converted before the first tensor is written, so a refused load
changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from .._errors import CheckpointError
from .._serialize import convert_for, validate_arrays, validate_names, write_all
from .._tensor import Tensor

__all__ = ["IncompatibleKeys", "load_state_dict", "state_dict"]


class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict(..., strict=False)`` left out, as PyTorch's return value:
    the model's names the dict lacked, and the dict's names the model does not have."""

    missing_keys: list[str]
    unexpected_keys: list[str]


def state_dict(model: Any) -> dict[str, np.ndarray[Any, Any]]:
    """``{dotted path: NumPy copy}`` of ``model``'s parameters and buffers."""
    return {path: np.array(tensor.numpy(), copy=True) for path, tensor in model.named_tensors()}


def host_array(name: str, value: Any, what: str) -> np.ndarray[Any, Any]:
    """``value`` (a NumPy array, a shapegrad tensor, or anything NumPy reads) as a NumPy array."""
    if isinstance(value, Tensor):
        return value.numpy()
    try:
        return np.asarray(value)
    except (TypeError, ValueError, RuntimeError) as exc:
        kind = f"{type(value).__module__}.{type(value).__name__}"
        raise CheckpointError(f"{what}: {name!r} is a {kind}, expected an array NumPy can read ({exc})") from None


def load_state_dict(model: Any, found: Mapping[str, Any], strict: bool, what: str) -> IncompatibleKeys:
    """Copy ``found`` into ``model``'s tensors, in place, after checking all of it."""
    arrays = {str(name): host_array(str(name), value, what) for name, value in found.items()}
    targets = {path: tensor for path, tensor in model.named_tensors()}
    if strict:
        validate_names(targets, arrays, what)
    validate_arrays(targets, arrays, what)
    write_all(convert_for(targets, arrays))
    return IncompatibleKeys(
        missing_keys=[name for name in targets if name not in arrays],
        unexpected_keys=[name for name in arrays if name not in targets],
    )
