"""``from_torch``: a PyTorch ``state_dict()`` into a shapegrad model whose dotted paths match.

Generic over paths: each tensor's owning module converts PyTorch's layout into its own
(``Module.torch_layout``; ``Linear`` transposes its weight), so a new layer type brings its
own conversion instead of a list here growing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .. import _hooks
from .._errors import CheckpointError
from .._serialize import note_file_read
from .._tensor import Tensor
from ._module import Module
from ._state import IncompatibleKeys, host_array, load_state_dict

__all__ = ["from_torch"]

_WHAT = "from_torch"

# PyTorch's batch norm counts its training steps in every module; shapegrad's counts them
# only where momentum=None (a cumulative average, which reads the count). A batch norm with
# a number for momentum has no count, so PyTorch's has nowhere to go there and is skipped;
# one with momentum=None owns the buffer, and the count is loaded into it.
_COUNT = "num_batches_tracked"


def _owners(model: Module) -> dict[str, tuple[Module, str]]:
    """Each tensor's dotted path -> (the deepest module holding it, its name there)."""
    modules = dict(model.named_modules())
    owners: dict[str, tuple[Module, str]] = {}
    for path, _ in model.named_tensors():
        parts = path.split(".")
        for cut in range(len(parts) - 1, -1, -1):
            owner = modules.get(".".join(parts[:cut]))
            if owner is not None:
                owners[path] = (owner, ".".join(parts[cut:]))
                break
    return owners


def _from_torch_tensor(name: str, value: Any) -> np.ndarray[Any, Any]:
    detach = getattr(value, "detach", None)
    if detach is None or isinstance(value, Tensor):
        return host_array(name, value, _WHAT)
    recorder = _hooks.recorder
    if recorder is not None:
        # sg.compile: PyTorch's memory is no array the recording sees (its optimizer writes it
        # between calls), and the layout's transposes copy it: a value read, run eagerly
        recorder.value_read(f"the values of a PyTorch tensor ({name!r}, sg.nn.from_torch)")
    try:
        return np.asarray(detach().cpu().numpy())
    except (TypeError, RuntimeError) as exc:  # bfloat16 has no NumPy dtype
        raise CheckpointError(
            f"{_WHAT}: {name!r} is a torch tensor NumPy cannot hold ({exc}); expected float16/32/64 or "
            "integer values: convert it first (tensor.float())"
        ) from None


def _read_file(path: str | os.PathLike[str]) -> dict[str, np.ndarray[Any, Any]]:
    import safetensors.numpy
    from safetensors import SafetensorError

    # Its stub leaves os.PathLike unparameterised; a str is all it is given here.
    load_file: Callable[[str], dict[str, np.ndarray[Any, Any]]] = getattr(safetensors.numpy, "load_file")
    name = os.fspath(path)
    note_file_read(name)
    if not os.path.exists(name):
        raise CheckpointError(f"{_WHAT}: no file at {name!r}")
    try:
        return dict(load_file(name))
    except (SafetensorError, OSError, ValueError, TypeError) as exc:
        raise CheckpointError(
            f"{_WHAT}: {name!r} is not a safetensors file NumPy can read (truncated, corrupted, or a dtype such "
            f"as bfloat16 that NumPy lacks): {exc}"
        ) from None


def from_torch(
    model: Module, state_dict: Mapping[str, Any] | str | os.PathLike[str], *, strict: bool = True
) -> IncompatibleKeys:
    """Load a PyTorch ``state_dict()`` into ``model``, whose dotted paths match PyTorch's.

    ``state_dict`` holds torch tensors (``torch_model.state_dict()``) or NumPy arrays, or it
    is the path of a safetensors file PyTorch wrote (``safetensors.torch.save_file``).
    Parameters and buffers (batch-norm running statistics) are copied; PyTorch's
    ``num_batches_tracked`` is copied into a batch norm built with ``momentum=None`` (the
    only kind that counts its batches) and skipped for any other. Each tensor is converted
    from PyTorch's layout to its layer's (``Linear.weight`` is transposed: ours is
    ``(in, out)``) and then checked and copied as ``load_state_dict`` does: every name,
    shape (in shapegrad's layout) and dtype before the first copy, a ``CheckpointError``
    naming the first that does not fit, the model unchanged on refusal. Build the model in
    PyTorch's dtype (``model.to(dtype="float64")`` for a ``.double()`` model).

    Examples:
        >>> import numpy as np
        >>> import shapegrad as sg
        >>> layer = sg.nn.Linear(3, 2)
        >>> torch_weight = np.arange(6, dtype=np.float32).reshape(2, 3)  # PyTorch's (out, in)
        >>> _ = sg.nn.from_torch(layer, {"weight": torch_weight, "bias": np.zeros(2, np.float32)})
        >>> layer.weight.shape
        (3, 2)
    """
    if isinstance(state_dict, (str, os.PathLike)):
        state_dict = _read_file(state_dict)
    owners = _owners(model)
    arrays: dict[str, np.ndarray[Any, Any]] = {}
    for key, value in state_dict.items():
        name = str(key)
        owner = owners.get(name)
        if owner is None and name.rsplit(".", 1)[-1] == _COUNT:
            continue  # a batch norm with a number for momentum: no count to take it
        array = _from_torch_tensor(name, value)
        arrays[name] = owner[0].torch_layout(owner[1], array) if owner is not None else array
    return load_state_dict(model, arrays, strict, _WHAT)
