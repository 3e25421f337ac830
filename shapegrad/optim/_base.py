"""The optimizer base: checks that gradients belong to the model, then applies a rule."""

from __future__ import annotations

import math
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, Literal, TypeVar

from .._errors import GradientsMismatchError, ShapegradError, UnusedParameterError
from .._gradients import Gradients
from ..nn._module import Module

M = TypeVar("M", bound=Module)

__all__ = ["LearningRate", "Optimizer", "UnusedPolicy", "clip_grad_norm"]

UnusedPolicy = Literal["error", "warn", "ignore"]
LearningRate = float | Callable[[int], float]


class _Slot:
    """One trainable parameter as the optimizer sees it: its array, backend and state."""

    __slots__ = ("path", "key", "param", "backend", "state")

    def __init__(self, path: str, key: int, param: Any, backend: Any, state: dict[str, Any]) -> None:
        self.path, self.key, self.param, self.backend, self.state = path, key, param, backend, state


def _key(tensor: Any) -> int:
    info = tensor._param
    return -1 if info is None else info.key


def clip_grad_norm(grads: Gradients[Any], max_norm: float) -> float:
    """Scale every parameter gradient in ``grads`` in place so that their global L2 norm
    is at most ``max_norm``; returns the norm before clipping. PyTorch:
    ``nn.utils.clip_grad_norm_``."""
    total = 0.0
    buffers: list[tuple[Any, Any]] = []
    for _, grad in grads.items():
        xp = grad._backend.xp
        data = grad._data
        total += float(xp.sum(data * data))
        buffers.append((grad._backend, data))
    norm = math.sqrt(total)
    if norm > max_norm > 0:
        scale = max_norm / (norm + 1e-6)
        for backend, data in buffers:
            backend.copy_into(data, data * scale)
    return norm


class Optimizer(ABC, Generic[M]):
    """Updates the parameters of one model from ``Gradients[M]`` of that model.

    ``update(model, grads)`` refuses, changing nothing: gradients of another model or of
    a copy (``GradientsMismatchError``, and a pyright error where the types differ), a
    model whose parameters changed since ``alloc_grads``, and trainable parameters that
    received no gradient (``UnusedParameterError`` naming each by dotted path, unless
    ``unused="warn"`` or ``"ignore"``, in which case only parameters with a gradient move).

    Subclasses define ``_init_state`` and ``_apply``; state is preallocated and updated in
    place.
    """

    def __init__(
        self, model: M, *, lr: LearningRate, unused: UnusedPolicy = "error", clip_norm: float | None = None
    ) -> None:
        if unused not in ("error", "warn", "ignore"):
            raise ShapegradError(f"unused must be 'error', 'warn' or 'ignore', found {unused!r}")
        self._model_id = id(model)
        self.lr: LearningRate = lr
        self.unused: UnusedPolicy = unused
        self.clip_norm = clip_norm
        self.step_count = 0
        self._slots: list[_Slot] = []
        for path, param in model.named_parameters(trainable_only=True):
            info = param._param
            assert info is not None
            backend = param._backend
            self._slots.append(_Slot(path, info.key, param, backend, self._init_state(backend.xp, param._data)))

    # -- what subclasses provide ------------------------------------------------------------
    def _init_state(self, xp: Any, param: Any) -> dict[str, Any]:
        return {}

    @abstractmethod
    def _apply(self, backend: Any, param: Any, grad: Any, state: dict[str, Any], lr: float, step: int) -> None:
        """Update ``param`` (an array of ``backend``) in place from ``grad`` and ``state``."""

    # -- the contract -----------------------------------------------------------------------
    def current_lr(self) -> float:
        """The learning rate the next ``update`` uses (schedules are called with the step)."""
        return self.lr(self.step_count) if callable(self.lr) else self.lr

    def _check(self, model: M, grads: Gradients[M]) -> list[_Slot]:
        if id(model) != self._model_id:
            raise GradientsMismatchError(
                f"this optimizer was built for another model; expected the same "
                f"{type(model).__name__} instance it was created with"
            )
        owner = grads.model
        if owner is not model:
            found = (
                "free-standing Gradients"
                if owner is None
                else f"Gradients of another {type(owner).__name__} instance (id {id(owner):#x})"
            )
            raise GradientsMismatchError(
                f"update expects Gradients allocated by this model (model.alloc_grads()), found {found}"
            )
        current = [(p, _key(t), t.shape) for p, t in model.named_parameters(trainable_only=True)]
        expected = [(s.path, s.key, tuple(s.param.shape)) for s in self._slots]
        if current != expected or list(grads._layout) != expected:
            raise GradientsMismatchError(
                "the model's trainable parameters changed since these Gradients or this optimizer "
                "were made (a parameter replaced, frozen, unfrozen or reshaped); expected "
                f"{[p for p, _, _ in expected]}, found {[p for p, _, _ in current]}. "
                "Call model.alloc_grads() and build the optimizer again."
            )
        touched = grads._touched
        missing = [s.path for s in self._slots if s.key not in touched]
        if missing:
            if self.unused == "error":
                raise UnusedParameterError(missing)
            if self.unused == "warn":
                warnings.warn(str(UnusedParameterError(missing)), RuntimeWarning, stacklevel=3)
        return [s for s in self._slots if s.key in touched]

    def update(self, model: M, grads: Gradients[M]) -> None:
        """Apply one step to ``model``'s parameters from ``grads``, in place.

        Raises:
            GradientsMismatchError: ``grads`` was not allocated by ``model``, or the model's
                parameters changed since. Nothing is changed.
            UnusedParameterError: trainable parameters received no gradient (with
                ``unused="error"``). Nothing is changed.
        """
        active = self._check(model, grads)
        if self.clip_norm is not None:
            clip_grad_norm(grads, self.clip_norm)
        self.step_count += 1
        lr = self.lr(self.step_count - 1) if callable(self.lr) else self.lr
        slots = grads._slots
        for slot in active:
            self._apply(slot.backend, slot.param._data, slots[slot.key], slot.state, lr, self.step_count)

    # -- checkpoints --------------------------------------------------------------------------
    def state_arrays(self) -> dict[str, Any]:
        """Every state array by name (``"<param path>.<state>"``) plus the step count."""
        arrays: dict[str, Any] = {}
        for slot in self._slots:
            for name, value in slot.state.items():
                arrays[f"{slot.path}.{name}"] = value
        return arrays

    def load_state_arrays(self, arrays: dict[str, Any], step_count: int) -> None:
        """Copy state saved by ``state_arrays`` back in place (shapes were validated)."""
        for slot in self._slots:
            for name, value in slot.state.items():
                slot.backend.copy_into(value, arrays[f"{slot.path}.{name}"])
        self.step_count = step_count
