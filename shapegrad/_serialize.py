"""Checkpoints in safetensors format: model tensors and, optionally, optimizer state.

Saving writes a temporary file beside the target and renames it over the target, so an
interrupted save leaves the old checkpoint intact. Loading validates every name, shape and
dtype before it copies anything, so a checkpoint that does not fit leaves the model as it
was.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ._errors import CheckpointError

__all__ = ["load", "save"]

_MODEL = "model."
_OPTIM = "optim."


def _model_arrays(model: Any) -> dict[str, Any]:
    return {path: tensor for path, tensor in model.named_tensors()}


def save(model: Any, path: str | os.PathLike[str], optimizer: Any = None) -> None:
    """Write ``model``'s parameters and buffers (and ``optimizer``'s state) to ``path``.

    Example:
        >>> import os, tempfile
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> model = sg.nn.Linear[L[2], L[1]]()
        >>> target = os.path.join(tempfile.mkdtemp(), "model.safetensors")
        >>> sg.save(model, target)
        >>> sg.load(model, target)
    """
    import safetensors.numpy

    save_file: Any = getattr(safetensors.numpy, "save_file")  # looked up per call: tests interrupt it
    tensors: dict[str, np.ndarray[Any, Any]] = {}
    for name, tensor in _model_arrays(model).items():
        tensors[_MODEL + name] = np.ascontiguousarray(tensor.numpy())
    metadata = {"format": "shapegrad", "version": "1", "model": type(model).__name__}
    if optimizer is not None:
        for name, array in optimizer.state_arrays().items():
            tensors[_OPTIM + name] = np.ascontiguousarray(np.asarray(optimizer._slots[0].backend.to_numpy(array)))
        metadata["optimizer"] = type(optimizer).__name__
        metadata["step_count"] = str(optimizer.step_count)
    target = Path(path)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    os.close(fd)
    try:
        save_file(tensors, temporary, metadata=metadata)
        with open(temporary, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


def _read(path: str | os.PathLike[str]) -> tuple[dict[str, np.ndarray[Any, Any]], dict[str, str]]:
    from safetensors import SafetensorError, safe_open

    if not os.path.exists(path):
        raise CheckpointError(f"no checkpoint at {os.fspath(path)!r}")
    try:
        arrays: dict[str, np.ndarray[Any, Any]] = {}
        opened: Any = safe_open(os.fspath(path), framework="numpy")
        with opened as handle:
            metadata: dict[str, str] = dict(handle.metadata() or {})
            for key in handle.keys():
                arrays[str(key)] = handle.get_tensor(key)
    except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
        raise CheckpointError(
            f"{os.fspath(path)!r} is not a readable safetensors checkpoint (truncated or corrupted?): {exc}"
        ) from None
    if metadata.get("format") != "shapegrad":
        raise CheckpointError(
            f"{os.fspath(path)!r} is a safetensors file but not a shapegrad checkpoint (no 'format: shapegrad' metadata)"
        )
    return arrays, metadata


def _validate(expected: dict[str, Any], found: dict[str, np.ndarray[Any, Any]], what: str) -> None:
    missing = [name for name in expected if name not in found]
    extra = [name for name in found if name not in expected]
    if missing:
        raise CheckpointError(
            f"{what}: checkpoint lacks {missing[0]!r}" + (f" and {len(missing) - 1} more" if len(missing) > 1 else "")
        )
    if extra:
        raise CheckpointError(
            f"{what}: checkpoint has {extra[0]!r}, which the model does not"
            + (f" (and {len(extra) - 1} more)" if len(extra) > 1 else "")
        )
    for name, target in expected.items():
        array = found[name]
        shape = tuple(target.shape)
        dtype = target.backend_dtype_name() if hasattr(target, "backend_dtype_name") else str(np.asarray(target).dtype)
        if tuple(array.shape) != shape:
            raise CheckpointError(
                f"{what}: {name!r} has shape {tuple(array.shape)} in the checkpoint, expected {shape}"
            )
        if str(array.dtype) != dtype:
            raise CheckpointError(f"{what}: {name!r} has dtype {array.dtype} in the checkpoint, expected {dtype}")


def load(model: Any, path: str | os.PathLike[str], optimizer: Any = None) -> None:
    """Copy a checkpoint written by :func:`save` into ``model`` (and ``optimizer``), in place.

    Raises ``CheckpointError`` naming the first missing, extra, mis-shaped or mis-typed
    tensor, or saying the file is truncated or corrupted; the model and optimizer are then
    unchanged.
    """
    arrays, metadata = _read(path)
    model_found = {k[len(_MODEL) :]: v for k, v in arrays.items() if k.startswith(_MODEL)}
    optim_found = {k[len(_OPTIM) :]: v for k, v in arrays.items() if k.startswith(_OPTIM)}
    targets = _model_arrays(model)
    _validate(targets, model_found, "model")
    if optimizer is not None:
        if "optimizer" not in metadata:
            raise CheckpointError(
                "optimizer state was asked for, but the checkpoint has none (saved without optimizer=)"
            )
        if metadata["optimizer"] != type(optimizer).__name__:
            raise CheckpointError(
                f"checkpoint holds {metadata['optimizer']} state, expected {type(optimizer).__name__}"
            )
        state = optimizer.state_arrays()
        _validate(
            {k: np.asarray(optimizer._slots[0].backend.to_numpy(v)) for k, v in state.items()}, optim_found, "optimizer"
        )
    for name, tensor in targets.items():
        backend = tensor._backend
        backend.copy_into(tensor._data, backend.asarray(model_found[name], None))
    if optimizer is not None:
        backend = optimizer._slots[0].backend if optimizer._slots else None
        converted = {k: backend.asarray(v, None) for k, v in optim_found.items()} if backend else {}
        optimizer.load_state_arrays(converted, int(metadata.get("step_count", "0")))
