"""What ``Module.torch_check`` implementations share: comparing a PyTorch module's settings
with ours, by attribute, and refusing with a ``CheckpointError`` that names the path, the
setting, PyTorch's value and ours.

Settings a state dict does not record (a convolution's stride, a norm's eps, an RNN's
nonlinearity) would otherwise load silently and compute other numbers. PyTorch is never
imported here: the module is read by its attributes, and its kind by the names of its
classes, so a subclass of ``nn.Linear`` counts as one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn, cast

from .._errors import CheckpointError

__all__ = [
    "TorchTwin",
    "expect_kind",
    "refuse",
    "same",
    "same_padding",
    "same_pair",
    "supported",
    "torch_padding",
    "torch_pair",
]

_ABSENT = object()


def _where(path: str) -> str:
    return repr(path) if path else "the model"


def refuse(path: str, reason: str) -> NoReturn:
    """Raise ``from_torch``'s ``CheckpointError`` about the PyTorch module at ``path``."""
    raise CheckpointError(f"from_torch: {_where(path)} {reason}")


def expect_kind(torch_module: Any, path: str, ours: object, *kinds: str) -> None:
    """Refuse a PyTorch module that is none of ``kinds`` (class names, matched anywhere in
    its class hierarchy): a ``GRU`` at the path of our ``LSTM`` whose tensors happen to fit."""
    names = {cls.__name__ for cls in type(torch_module).__mro__}
    if names.isdisjoint(kinds):
        wanted = " or ".join(f"nn.{kind}" for kind in kinds)
        refuse(
            path, f"is PyTorch's {type(torch_module).__name__}, expected {wanted} for shapegrad's {type(ours).__name__}"
        )


def same(torch_module: Any, path: str, setting: str, ours: Any) -> None:
    """Refuse if PyTorch's ``setting`` differs from ``ours`` (sequences compared as tuples).
    A PyTorch module without the attribute (another version) is not refused."""
    theirs = getattr(torch_module, setting, _ABSENT)
    if theirs is _ABSENT:
        return
    if isinstance(theirs, Sequence) and not isinstance(theirs, str):
        theirs = tuple(cast(Sequence[Any], theirs))  # PyTorch keeps some as lists
    if theirs != ours:
        refuse(path, f"has {setting}={theirs!r} in PyTorch, {ours!r} here")


def supported(torch_module: Any, path: str, setting: str, default: Any, why: str) -> None:
    """Refuse a PyTorch ``setting`` other than ``default``, one shapegrad's layer does not
    have (``why`` says what it does in PyTorch, and what to do instead)."""
    theirs = getattr(torch_module, setting, default)
    if theirs != default:
        refuse(path, f"has {setting}={theirs!r} in PyTorch, which shapegrad's layer does not have: {why}")


def torch_padding(torch_module: Any, path: str) -> tuple[int, ...]:
    """A PyTorch convolution's padding as numbers per axis: ``"valid"`` is zeros, ``"same"``
    half of ``dilation·(kernel - 1)`` on each side, refused where that is odd (PyTorch then
    pads one more on the right, which a symmetric padding cannot say)."""
    padding = torch_module.padding
    if not isinstance(padding, str):
        return tuple(int(p) for p in padding)
    if padding == "valid":
        return tuple(0 for _ in torch_module.kernel_size)
    half = same_padding(torch_module.kernel_size, torch_module.dilation)
    if half is None:
        refuse(
            path,
            f"has padding='same' in PyTorch with kernel_size={tuple(torch_module.kernel_size)}, "
            f"dilation={tuple(torch_module.dilation)}: one more on the right than on the left, which "
            "shapegrad's symmetric padding does not have (use an odd kernel)",
        )
    return half


def same_padding(kernel: Sequence[int], dilation: Sequence[int]) -> tuple[int, ...] | None:
    """PyTorch's ``padding="same"`` per axis: half of ``dilation·(kernel - 1)`` on each side;
    None where that is odd (PyTorch pads one more at the end, which a symmetric padding
    cannot say)."""
    totals = [int(d) * (int(k) - 1) for d, k in zip(dilation, kernel, strict=True)]
    return None if any(total % 2 for total in totals) else tuple(total // 2 for total in totals)


def torch_pair(value: Any) -> tuple[Any, Any]:
    """A PyTorch setting kept as a number or a pair (a pooling's ``kernel_size``, an
    up-sampling's ``scale_factor``) as a pair."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        first, second = cast(Sequence[Any], value)
        return first, second
    return value, value


def same_pair(torch_module: Any, path: str, setting: str, ours: tuple[int, int]) -> None:
    """``same`` for a setting PyTorch keeps as an int or a pair (a pooling's ``kernel_size``)."""
    theirs = getattr(torch_module, setting, _ABSENT)
    if theirs is _ABSENT:
        return
    if torch_pair(theirs) != ours:
        refuse(path, f"has {setting}={theirs!r} in PyTorch, {ours!r} here")


class TorchTwin:
    """``torch_check`` for a layer without parameters whose PyTorch twin has its class's name
    (``ReLU``, ``nn.ReLU``): the kind, then each of ``_torch_settings`` compared by attribute.
    An activation or a pooling of another kind at the path (``Tanh`` where ours is ``ReLU``,
    ``LeakyReLU(0.2)`` where ours has 0.01) holds no tensor, so a state dict cannot show it."""

    _torch_settings: tuple[str, ...] = ()

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch module of another kind, or with another of ``_torch_settings``."""
        expect_kind(torch_module, path, self, type(self).__name__.split("[")[0])
        for setting in self._torch_settings:
            same(torch_module, path, setting, getattr(self, setting))
