# pyright: reportPrivateUsage=true
"""Checkpoints in safetensors format: model tensors and, optionally, optimizer state.

Saving writes a temporary file beside the target and renames it over the target, so an
interrupted save leaves the old checkpoint intact. Loading validates every name, shape and
dtype before it copies anything, so a checkpoint that does not fit leaves the model as it
was.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, cast

import numpy as np

from . import _hooks
from ._autodiff import note_written
from ._errors import CheckpointError
from ._tensor import AnyTensor, Tensor, array_of, backend_of

__all__ = ["load", "save"]

_MODEL = "model."
_OPTIM = "optim."


def _model_arrays(model: Any) -> dict[str, Any]:
    return {path: tensor for path, tensor in model.named_tensors()}


def save(model: Any, path: str | os.PathLike[str], optimizer: Any = None) -> None:
    """Write ``model``'s parameters and buffers (and ``optimizer``'s state) to ``path``.

    Examples:
        >>> import os, tempfile
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> model = sg.nn.Linear[L[2], L[1]]()
        >>> target = os.path.join(tempfile.mkdtemp(), "model.safetensors")
        >>> sg.save(model, target)
        >>> sg.load(model, target)
    """
    import safetensors.numpy

    from ._device_checks import flush

    flush()
    save_file: Any = getattr(safetensors.numpy, "save_file")  # looked up per call: tests interrupt it
    tensors: dict[str, np.ndarray[Any, Any]] = {}
    for name, tensor in _model_arrays(model).items():
        # asarray(order="C"), not ascontiguousarray, which gives a 0-d array (batch norm's
        # num_batches_tracked) shape (1,), and the load then refuses it
        tensors[_MODEL + name] = np.asarray(tensor.numpy(), order="C")
    metadata = {"format": "shapegrad", "version": "1", "model": type(model).__name__}
    if optimizer is not None:
        for name, array in optimizer.state_arrays().items():
            tensors[_OPTIM + name] = np.ascontiguousarray(np.asarray(optimizer.state_backend().to_numpy(array)))
        metadata["optimizer"] = type(optimizer).__name__
        metadata["step_count"] = str(optimizer.step_count)
        metadata["slot_steps"] = json.dumps(optimizer.slot_steps())
    target = Path(path)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    os.close(fd)
    try:
        # mkstemp makes the file 0600; a checkpoint gets the mode any new file would (the
        # umask's), or keeps the mode of the checkpoint it replaces.
        save_file(tensors, temporary, metadata=metadata)
        os.chmod(temporary, _mode_for(target))
        with open(temporary, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


def _mode_for(target: Path) -> int:
    try:
        return target.stat().st_mode & 0o777
    except FileNotFoundError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


# The dtypes a shapegrad checkpoint holds (safetensors' names); NumPy reads no others.
_READABLE = {"F16", "F32", "F64", "I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64", "BOOL"}


def note_file_read(name: str) -> None:
    """A checkpoint file is about to be read: inside a step ``sg.compile`` records, its
    contents are state the recording cannot see (the weights a learner rewrites between an
    actor's calls), so the step runs eagerly, with the warning (a replay would copy the
    recorded file's values)."""
    recorder = _hooks.recorder
    if recorder is not None:
        recorder.value_read(f"a checkpoint file ({name!r}), which a replay would not read again")


def _read(path: str | os.PathLike[str]) -> tuple[dict[str, np.ndarray[Any, Any]], dict[str, str]]:
    from safetensors import SafetensorError, safe_open

    name = os.fspath(path)
    note_file_read(name)
    if not os.path.exists(path):
        raise CheckpointError(f"no checkpoint at {name!r}")
    if os.path.isdir(path):  # safetensors would say "No such device (os error 19)"
        raise CheckpointError(f"{name!r} is a directory; expected a checkpoint file written by sg.save")
    try:
        arrays: dict[str, np.ndarray[Any, Any]] = {}
        opened: Any = safe_open(name, framework="numpy")
        with opened as handle:
            metadata: dict[str, str] = dict(handle.metadata() or {})
            if metadata.get("format") != "shapegrad":
                raise CheckpointError(
                    f"{name!r} is a safetensors file but not a shapegrad checkpoint (no 'format: shapegrad' "
                    "metadata); a PyTorch state_dict saved as safetensors loads with sg.nn.from_torch(model, path)"
                )
            for key in handle.keys():
                dtype = str(handle.get_slice(key).get_dtype())
                if dtype not in _READABLE:
                    raise CheckpointError(
                        f"{name!r}: tensor {key!r} has dtype {dtype}, which a shapegrad checkpoint does not hold "
                        f"(expected one of {', '.join(sorted(_READABLE))})"
                    )
                arrays[str(key)] = handle.get_tensor(key)
    except (SafetensorError, OSError, ValueError, RuntimeError, TypeError, AttributeError) as exc:
        if isinstance(exc, CheckpointError):
            raise
        raise CheckpointError(
            f"{name!r} is not a readable safetensors checkpoint (truncated or corrupted?): {exc}"
        ) from None
    return arrays, metadata


def _count(metadata: dict[str, str], key: str, default: str) -> int:
    text = metadata.get(key, default)
    try:
        value = int(text)
    except ValueError:
        raise CheckpointError(f"checkpoint metadata {key!r} is {text!r}, expected a non-negative integer") from None
    if value < 0:
        raise CheckpointError(f"checkpoint metadata {key!r} is {value}, expected a non-negative integer")
    return value


def _slot_steps(metadata: dict[str, str], paths: list[str], step_count: int) -> dict[str, int] | None:
    text = metadata.get("slot_steps")
    if text is None:
        return None  # written before per-parameter step counts: every parameter took each step
    try:
        raw: Any = json.loads(text)
    except ValueError:
        raw = None
    if not isinstance(raw, dict) or sorted(cast(dict[str, Any], raw)) != sorted(paths):
        raise CheckpointError(
            f"checkpoint metadata 'slot_steps' is {text!r}, expected a step count for each of {paths}"
        )
    steps = cast(dict[str, Any], raw)
    for path, value in steps.items():
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= step_count:
            raise CheckpointError(
                f"checkpoint metadata 'slot_steps' gives {path!r} {value!r} steps, expected an integer in [0, {step_count}]"
            )
    return cast(dict[str, int], steps)


def validate_names(expected: dict[str, Any], found: dict[str, Any], what: str) -> None:
    """Raise ``CheckpointError`` naming the first tensor ``found`` lacks, or has beyond ``expected``."""
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


def validate_arrays(expected: dict[str, Any], found: dict[str, np.ndarray[Any, Any]], what: str) -> None:
    """Raise ``CheckpointError`` naming the first array of ``found`` whose shape or dtype
    differs from its target in ``expected``, or whose target tensor is read-only (names
    ``found`` lacks are not looked at)."""
    for name, target in expected.items():
        if name not in found:
            continue
        array = found[name]
        shape = tuple(target.shape)
        dtype = target.backend_dtype_name() if hasattr(target, "backend_dtype_name") else str(np.asarray(target).dtype)
        if tuple(array.shape) != shape:
            raise CheckpointError(
                f"{what}: {name!r} has shape {tuple(array.shape)} in the checkpoint, expected {shape}"
            )
        if str(array.dtype) != dtype:
            raise CheckpointError(f"{what}: {name!r} has dtype {array.dtype} in the checkpoint, expected {dtype}")
        if isinstance(target, Tensor) and not _writable(array_of(cast(AnyTensor, target))):
            # Checked with the rest, before the first write: found by the copy itself, it left
            # every tensor copied before it changed, with NumPy's bare ValueError.
            raise CheckpointError(
                f"{what}: {name!r} is backed by a read-only array (sg.asarray of a read-only or "
                "memory-mapped NumPy array), and loading copies into it in place: give the model a "
                "writable copy first (sg.tensor(array) copies; np.load without mmap_mode='r')"
            )


def _writable(data: Any) -> bool:
    """Whether a tensor's backend array takes writes (NumPy's ``flags.writeable``; a backend
    whose arrays have no such flag is taken as writable)."""
    return bool(getattr(getattr(data, "flags", None), "writeable", True))


def _validate(expected: dict[str, Any], found: dict[str, np.ndarray[Any, Any]], what: str) -> None:
    validate_names(expected, found, what)
    validate_arrays(expected, found, what)


def convert_for(targets: dict[str, Any], found: dict[str, np.ndarray[Any, Any]]) -> list[tuple[Any, Any]]:
    """``(tensor, array of its backend)`` for each target that ``found`` holds: every copy is
    made here, before :func:`write_all` changes the first tensor."""
    return [
        (tensor, backend_of(tensor).asarray(found[name], None)) for name, tensor in targets.items() if name in found
    ]


def write_all(pairs: list[tuple[Any, Any]]) -> None:
    """Copy each converted array into its tensor, in place."""
    for tensor, data in pairs:
        backend_of(tensor).copy_into(array_of(tensor), data)
        note_written(tensor)  # a backward pass through the old values would now be wrong


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
    step_count = 0
    slot_steps: dict[str, int] | None = None
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
            {k: np.asarray(optimizer.state_backend().to_numpy(v)) for k, v in state.items()}, optim_found, "optimizer"
        )
        step_count = _count(metadata, "step_count", "0")
        slot_steps = _slot_steps(metadata, list(optimizer.slot_steps()), step_count)
    # Everything is checked and converted before the first write: a refused load changes nothing.
    converted_model = convert_for(targets, model_found)
    converted_optim: dict[str, Any] = {}
    if optimizer is not None:
        backend = optimizer.state_backend()
        converted_optim = {k: backend.asarray(v, None) for k, v in optim_found.items()}
    write_all(converted_model)
    if optimizer is not None:
        optimizer.load_state_arrays(converted_optim, step_count, slot_steps)
