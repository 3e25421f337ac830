"""``from_torch``: a PyTorch ``state_dict()`` into a shapegrad model whose dotted paths match.

Generic over paths: each tensor's owning module converts PyTorch's layout into its own
(``Module.torch_layout``; ``Linear`` transposes its weight), so a new layer type brings its
own conversion instead of a list here growing. A PyTorch tensor that holds several of ours
(``MultiheadAttention``'s packed ``in_proj_weight``) is split by the deepest module on its
path (``Module.torch_unpack``), and the pieces then converted by their own layers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, cast

import numpy as np
from typing_extensions import TypeIs

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


def _is_torch_tensor(value: object) -> bool:
    """A PyTorch tensor (or parameter), told without importing torch."""
    return type(value).__module__.partition(".")[0] == "torch" and callable(getattr(value, "detach", None))


def refuse_torch_layouts(model: Module, state: Mapping[str, Any]) -> None:
    """``CheckpointError`` if ``state``, given to ``load_state_dict``, holds a torch tensor
    that ``from_torch`` would convert (``Linear.weight``, PyTorch's ``(out, in)``, is ``(in,
    out)`` here; a packed ``in_proj_weight``): copied as it is, a square one loads transposed
    with no error. Torch tensors whose layout is ours (convolutions, norms, embeddings,
    biases) load as they are."""
    torch_keys = [str(key) for key, value in state.items() if _is_torch_tensor(value)]
    if not torch_keys:
        return
    owners = _owners(model)
    modules = dict(model.named_modules())
    for name in torch_keys:
        array = _from_torch_tensor(name, state[name])
        owner = owners.get(name)
        if owner is None:
            if _unpack(modules, name, array) is None:
                continue  # not ours: strict names it, as any unknown key
            ours = "holds several of this model's tensors"
        else:
            converted = owner[0].torch_layout(owner[1], array)
            if converted is array or (converted.shape == array.shape and np.array_equal(converted, array)):
                continue
            kind = type(owner[0]).__name__.split("[")[0]
            stored = "in another layout of that shape" if converted.shape == array.shape else f"as {converted.shape}"
            ours = f"{kind} stores {stored}"
        raise CheckpointError(
            f"load_state_dict: {name!r} is a torch tensor of shape {tuple(array.shape)} in PyTorch's layout, "
            f"which {ours}: load a PyTorch state dict with sg.nn.from_torch(model, state_dict), which "
            "converts each tensor to its layer's layout (copied as it is, a square Linear weight would load "
            "transposed)"
        )


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
    model: Module, state_dict: Mapping[str, Any] | str | os.PathLike[str] | Any, *, strict: bool = True
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

    ``state_dict`` may also be the PyTorch model itself: its ``state_dict()`` is loaded, and
    first each of our modules checks the configuration of the PyTorch module at its path,
    which a state dict does not record (``Module.torch_check``): a module of another kind
    (a ``GRU`` for our ``LSTM``), or one whose settings would compute other numbers (a
    convolution's stride, padding, dilation, groups or ``padding_mode``; a norm's ``eps``,
    ``momentum``, ``affine``, ``num_groups``; an RNN's ``nonlinearity`` or
    ``batch_first``; an embedding's ``padding_idx``, ``max_norm``; a dropout's ``p``;
    a ``MultiheadAttention`` with ``add_zero_attn=True`` or another head count) is refused,
    naming the path, the setting, PyTorch's value and ours, before anything is written.

    ``nn.MultiheadAttention``: its packed ``in_proj_weight`` ``(3·E, E)`` and
    ``in_proj_bias`` ``(3·E,)`` are split into our ``q_proj``/``k_proj``/``v_proj``
    (``MultiHeadAttention.torch_unpack``); ``bias_k``/``bias_v`` (``add_bias_kv=True``) and
    keys or values of another width (``kdim``/``vdim``) are refused, naming the key. The
    loaded layer is called ``attn(query, key, value, mask)`` with ``batch_first=True``
    layout ``(B, L, E)`` and returns the output alone, where PyTorch's returns
    ``(output, weights)``; our boolean ``mask`` is ``True`` where attention is allowed,
    PyTorch's boolean ``attn_mask`` ``True`` where it is not (pass ``~attn_mask``).

    Examples:
        >>> import numpy as np
        >>> import shapegrad as sg
        >>> layer = sg.nn.Linear(3, 2)
        >>> torch_weight = np.arange(6, dtype=np.float32).reshape(2, 3)  # PyTorch's (out, in)
        >>> _ = sg.nn.from_torch(layer, {"weight": torch_weight, "bias": np.zeros(2, np.float32)})
        >>> layer.weight.shape
        (3, 2)
    """
    if _is_torch_model(state_dict):
        _check_torch_model(model, state_dict)
        state_dict = cast(Mapping[str, Any], state_dict.state_dict())
    if isinstance(state_dict, (str, os.PathLike)):
        state_dict = _read_file(cast("str | os.PathLike[str]", state_dict))
    owners = _owners(model)
    modules = dict(model.named_modules())
    given = {str(key) for key in state_dict}
    arrays: dict[str, np.ndarray[Any, Any]] = {}
    sources: dict[str, str] = {}  # a name unpacked from a PyTorch tensor -> that tensor's key
    for key, value in state_dict.items():
        name = str(key)
        owner = owners.get(name)
        if owner is None and name.rsplit(".", 1)[-1] == _COUNT:
            continue  # a batch norm with a number for momentum: no count to take it
        array = _from_torch_tensor(name, value)
        pieces = _unpack(modules, name, array) if owner is None else None
        if pieces is None:
            arrays[name] = owner[0].torch_layout(owner[1], array) if owner is not None else array
            continue
        for part, piece in pieces.items():
            if part in given or part in sources:
                raise CheckpointError(
                    f"{_WHAT}: {name!r} holds {part!r}, which the state dict also gives "
                    f"({part if part in given else sources[part]!r})"
                )
            if part not in owners and strict:
                raise CheckpointError(f"{_WHAT}: {name!r} holds {part!r}, which the model does not have")
            part_owner = owners.get(part)
            arrays[part] = part_owner[0].torch_layout(part_owner[1], piece) if part_owner is not None else piece
            sources[part] = name
    try:
        missing, unexpected = load_state_dict(model, arrays, strict, _WHAT)
    except CheckpointError as exc:
        source = next((src for part, src in sources.items() if repr(part) in str(exc)), None)
        if source is None:
            raise
        raise CheckpointError(f"{exc} (split from PyTorch's {source!r})") from None
    # A piece the model lacks is reported as the PyTorch key it came from, once.
    return IncompatibleKeys(missing, list(dict.fromkeys(sources.get(name, name) for name in unexpected)))


def _unpack(
    modules: dict[str, Module], key: str, array: np.ndarray[Any, Any]
) -> dict[str, np.ndarray[Any, Any]] | None:
    """The tensors PyTorch's ``key`` holds, by the model's dotted names, as split by the
    deepest module on its path that knows the name (``Module.torch_unpack``); ``None`` if none does."""
    parts = key.split(".")
    for cut in range(len(parts) - 1, -1, -1):
        prefix = ".".join(parts[:cut])
        module = modules.get(prefix)
        if module is None:
            continue
        pieces = module.torch_unpack(".".join(parts[cut:]), array, key)
        if pieces is not None:
            return {f"{prefix}.{name}" if prefix else name: piece for name, piece in pieces.items()}
    return None


def _is_torch_model(value: object) -> TypeIs[Any]:
    """A PyTorch module (not a mapping, not a path, not one of ours): it has ``state_dict()``
    and ``named_modules()``."""
    return (
        not isinstance(value, (Mapping, str, os.PathLike, Module))
        and callable(getattr(value, "state_dict", None))
        and callable(getattr(value, "named_modules", None))
    )


def _check_torch_model(model: Module, torch_model: Any) -> None:
    """Each of our modules checks its PyTorch twin's configuration (``Module.torch_check``)."""
    ours = dict(model.named_modules())
    for path, torch_module in torch_model.named_modules():
        module = ours.get(str(path))
        if module is not None:
            module.torch_check(torch_module, str(path))
