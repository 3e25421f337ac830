# pyright: reportPrivateUsage=true
"""The optimizer base: checks that gradients belong to the model, then applies a rule."""

from __future__ import annotations

import functools
import inspect
import math
import warnings
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

from .. import _hooks
from .._autodiff import note_written
from .._device_checks import flush as flush_device_checks
from .._errors import GradientsMismatchError, HyperparameterError, ShapegradError, UnusedParameterError
from .._gradients import Gradients, buffers, layout, mark_consumed, received_keys
from .._tensor import array_of, backend_of, parameter_info
from ..nn._module import Module, tensor_paths
from ..ops.reductions import is_half
from ._groups import Group, assign_groups

if TYPE_CHECKING:
    from .._backend import Backend

M = TypeVar("M", bound=Module)

__all__ = ["LearningRate", "Optimizer", "UnusedPolicy", "clip_grad_norm", "require"]

UnusedPolicy = Literal["error", "warn", "ignore"]
LearningRate = float | Callable[[int], float]


def require(condition: bool, what: str, found: Any) -> None:
    """Raise ``HyperparameterError`` (a ``ValueError``) naming the setting unless ``condition``."""
    if not condition:
        raise HyperparameterError(f"invalid optimizer setting: expected {what}, found {found!r}")


def _require_lr(lr: LearningRate) -> None:
    if not callable(lr):
        require(lr >= 0, "lr >= 0", lr)


def _located_warning(message: str, category: type[Warning], up: int) -> Callable[[], None]:
    """A call issuing ``warnings.warn(message, category)`` as seen from the frame ``up`` frames
    above its caller's: that file, line and module's registry (as ``stacklevel`` finds them),
    however often and from wherever it is called (a replay of a compiled step: ``"default"``
    filters show it once per line, as in eager)."""
    frame: Any = inspect.currentframe()
    for _ in range(up + 1):
        frame = frame.f_back
    module_globals: dict[str, Any] = frame.f_globals
    return functools.partial(
        warnings.warn_explicit,
        message,
        category,
        frame.f_code.co_filename,
        frame.f_lineno,
        module_globals.get("__name__", "<string>"),
        module_globals.setdefault("__warningregistry__", {}),
        module_globals,
    )


def _rate(lr: LearningRate, step: int) -> float:
    return lr(step) if callable(lr) else lr


class _Slot:
    """One trainable parameter as the optimizer sees it: its array, backend, state and how
    many updates it received (its own step count: Adam's bias correction for a parameter
    that first gets a gradient at step 4 is that of its first step, as in PyTorch)."""

    __slots__ = ("path", "key", "param", "backend", "state", "steps", "wide_dtype", "hp")

    def __init__(
        self, path: str, key: int, param: Any, backend: Any, state: dict[str, Any], wide_dtype: Any, hp: Any
    ) -> None:
        self.path, self.key, self.param, self.backend, self.state = path, key, param, backend, state
        self.steps = 0
        # float32 for a float16 parameter: the update runs in it, then is rounded back.
        self.wide_dtype = wide_dtype
        # The settings this parameter's rule reads: the optimizer itself, or its group's.
        self.hp = hp


def _key(tensor: Any) -> int:
    info = parameter_info(tensor)
    return -1 if info is None else info.key


def _lost(param: Any) -> bool:
    """The parameter's gradient was computed but went to no Gradients of its model."""
    info = parameter_info(param)
    return info is not None and bool(getattr(info.leaf, "lost", False))  # set on parameter leaves only


def clip_grad_norm(grads: Gradients[Any], max_norm: float) -> float:
    """Scale every parameter gradient in ``grads`` in place so that their global L2 norm
    is at most ``max_norm``; returns the norm before clipping. PyTorch:
    ``nn.utils.clip_grad_norm_``.

    The norm is summed on the device and read back once per backend (one synchronisation
    per call on a GPU, not one per parameter).

    Inside a step under ``sg.compile`` the norm it returns is a Python value, which a replay
    cannot give: the step runs eagerly (with the warning). The optimizer's ``clip_norm=``
    (``sg.optim.Adam(model, clip_norm=1.0)``) clips the same way inside its update, which
    a compiled step replays.
    """
    recorder = _hooks.recorder
    if recorder is not None:
        recorder.value_read(
            "the norm sg.optim.clip_grad_norm returns (a Python float; the optimizer's clip_norm= "
            "clips inside its update, which a compiled step replays)"
        )
    return _clip_on_host(*_squared_norms(grads), max_norm)


def _clip_on_host(buffers: list[tuple[Any, Any]], partial: dict[int, tuple[Any, Any]], max_norm: float) -> float:
    norm = math.sqrt(sum(float(total) for _, total in partial.values()))
    if norm > max_norm > 0:
        scale = max_norm / (norm + 1e-6)
        for backend, data in buffers:
            backend.copy_into(data, data * scale)
    return norm


def _squared_norms(grads: Gradients[Any]) -> tuple[list[tuple[Any, Any]], dict[int, tuple[Any, Any]]]:
    """Every gradient buffer, and each backend's sum of squares (a device scalar)."""
    buffers: list[tuple[Any, Any]] = []
    partial: dict[int, tuple[Any, Any]] = {}
    for _, grad in grads.items():
        backend = backend_of(grad)
        data = array_of(grad)
        square = _sum_of_squares(backend.xp, data)
        seen = partial.get(id(backend))
        partial[id(backend)] = (backend, square if seen is None else seen[1] + square)
        buffers.append((backend, data))
    return buffers, partial


def _sum_of_squares(xp: Any, data: Any) -> Any:
    # In float32 for float16 gradients: their squares summed in float16 overflow past 65504
    # (a norm of 256 already), and a norm of inf scaled every gradient to 0, silently.
    if is_half(xp, data.dtype):
        data = xp.astype(data, xp.float32)
    # One dot product (BLAS on NumPy): 4× faster than summing data * data, no temporary.
    vecdot = getattr(xp, "vecdot", None)
    if vecdot is None or data.ndim == 0:
        return xp.sum(data * data)
    flat = xp.reshape(data, (-1,))
    return vecdot(flat, flat)


def _clip_in_place(grads: Gradients[Any], max_norm: float) -> None:
    """``clip_grad_norm`` for ``Optimizer.update``, which needs no norm back: on a device the
    scale ``min(1, max_norm / (norm + 1e-6))`` is computed and applied there, as PyTorch's
    ``clip_grad_norm_`` does, so clipping costs the step no wait for the GPU."""
    buffers, partial = _squared_norms(grads)
    if len(partial) != 1 or getattr(next(iter(partial.values()))[0], "on_host", True):
        _clip_on_host(buffers, partial, max_norm)  # on the host the norm is free to read
        return
    backend, total = next(iter(partial.values()))
    xp = backend.xp
    scale = xp.minimum(max_norm / (xp.sqrt(total) + 1e-6), 1.0)
    for _, data in buffers:
        backend.copy_into(data, data * xp.astype(scale, data.dtype))


def _state_dtype(xp: Any, param: Any) -> Any:
    """Optimizer state of a float16 parameter is kept in float32, as mixed precision does:
    in float16, ``eps`` rounds to 0 and ``g²`` underflows, and Adam gives inf/NaN."""
    half = getattr(xp, "float16", None)
    return xp.float32 if half is not None and param.dtype == half else param.dtype


class Optimizer(ABC, Generic[M]):
    """Updates the parameters of one model from ``Gradients[M]`` of that model.

    ``update(model, grads)`` refuses, changing nothing: gradients of another model or of
    a copy (``GradientsMismatchError``, and a pyright error where the types differ), a
    model whose parameters changed since ``alloc_grads``, and trainable parameters that
    received no gradient (``UnusedParameterError`` naming each by dotted path, unless
    ``unused="warn"`` or ``"ignore"``, in which case only parameters with a gradient move).
    An update in which no parameter at all received a gradient is always refused: it means
    ``backward()`` has not run since ``grads.zero()``.

    ``groups`` (``sg.optim.Group``) give the parameters they select settings of their own
    (``lr``, ``weight_decay``, ``maximize``, ...), as PyTorch's param groups do.

    ``maximize=True`` (every optimizer, as PyTorch's ``maximize``): gradient ascent, the
    gradient negated before anything else reads it (weight decay included, so decay still
    pulls towards 0), the gradients themselves left as they are.

    Subclasses pass their settings to ``__init__`` and define ``_configure`` (validate and
    set them), ``_init_state`` and ``_apply``; state is preallocated and updated in place.
    Settings are validated at construction (``HyperparameterError``, a ``ValueError``).
    """

    maximize: bool
    """Gradient ascent (the optimizer's own setting; a group's is on its namespace)."""

    def __init__(
        self,
        model: M,
        *,
        lr: LearningRate,
        unused: UnusedPolicy = "error",
        clip_norm: float | None = None,
        groups: Sequence[Group] = (),
        settings: dict[str, Any] | None = None,
        maximize: bool = False,
    ) -> None:
        if not hasattr(model, "named_parameters"):  # PyTorch's Adam(model.parameters(), lr=...)
            raise TypeError(
                f"{type(self).__name__} takes the model (a sg.nn.Module), found {type(model).__name__}: "
                f"PyTorch's {type(self).__name__}(model.parameters(), lr=...) is {type(self).__name__}(model, lr=...) "
                "here (the optimizer's Gradients are tied to that model); sg.optim.Group selects parameters by path"
            )
        if unused not in ("error", "warn", "ignore"):
            raise ShapegradError(f"unused must be 'error', 'warn' or 'ignore', found {unused!r}")
        _require_lr(lr)
        if clip_norm is not None:
            require(clip_norm > 0, "clip_norm > 0", clip_norm)
        defaults = {**(settings or {}), "maximize": maximize}
        self._configure_all(self, defaults)
        params = list(model.named_parameters(trainable_only=True))
        name = type(self).__name__
        every = tensor_paths(model)  # a tied parameter is selected by any of its paths
        chosen = assign_groups(name, groups, [(every[id(p)], p) for _, p in params], ["lr", *defaults])
        group_hp: list[Any] = []
        for group in groups:
            overrides = dict(group.settings)
            hp = SimpleNamespace(lr=overrides.pop("lr", None))
            if hp.lr is not None:
                _require_lr(hp.lr)
            self._configure_all(hp, {**defaults, **overrides})
            group_hp.append(hp)
        self._groups = tuple(groups)
        self._group_hp = group_hp
        self._model_id = id(model)
        self.lr: LearningRate = lr
        self.unused: UnusedPolicy = unused
        self.clip_norm = clip_norm
        self.step_count = 0
        self._slots: list[_Slot] = []
        for (path, param), index in zip(params, chosen, strict=True):
            info = parameter_info(param)
            assert info is not None
            backend = backend_of(param)
            data = array_of(param)
            state_dtype = _state_dtype(backend.xp, data)
            wide = None if state_dtype == data.dtype else state_dtype
            hp = None if index is None else group_hp[index]  # None: the optimizer's own (no cycle through self)
            state = self._init_state(backend.xp, data if wide is None else backend.xp.astype(data, wide), hp or self)
            self._slots.append(_Slot(path, info.key, param, backend, state, wide, hp))
        optimizers = cast("weakref.WeakSet[Any] | None", model.__dict__.get("_optimizers"))
        if optimizers is None:
            optimizers = weakref.WeakSet[Any]()
            model.__dict__["_optimizers"] = optimizers
        optimizers.add(self)  # Module.to refuses to move a model whose optimizer still exists
        if not self._slots:
            raise HyperparameterError(
                f"optimizer got an empty parameter list: {type(model).__name__} has no trainable parameter "
                "(all frozen, or none assigned as attributes)"
            )

    def _configure_all(self, target: Any, settings: dict[str, Any]) -> None:
        """The settings every optimizer has (``maximize``), then the subclass's own."""
        own = dict(settings)
        maximize = own.pop("maximize")
        require(isinstance(maximize, bool), "maximize a bool", maximize)
        target.maximize = maximize
        self._configure(target, own)

    # -- what subclasses provide ------------------------------------------------------------
    def _configure(self, target: Any, settings: dict[str, Any]) -> None:
        """Validate ``settings`` (``require``) and set them on ``target``: the optimizer for
        its own settings, a namespace for a group's (``_apply`` reads either as ``hp``)."""

    def _init_state(self, xp: Any, param: Any, hp: Any) -> dict[str, Any]:
        return {}

    @abstractmethod
    def _apply(
        self, backend: Any, param: Any, grad: Any, state: dict[str, Any], lr: float, step: int, hp: Any = None
    ) -> None:
        """Update ``param`` (an array of ``backend``) in place from ``grad`` and ``state``;
        ``step`` counts this parameter's updates, this one included; ``hp`` holds the
        settings (the optimizer's own where None)."""

    # -- the contract -----------------------------------------------------------------------
    def current_lr(self) -> float:
        """The learning rate the next ``update`` uses (schedules are called with the step)."""
        return _rate(self.lr, self.step_count)

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
        if current != expected or list(layout(grads)) != expected:
            raise GradientsMismatchError(
                "the model's trainable parameters changed since these Gradients or this optimizer "
                "were made (a parameter replaced, frozen, unfrozen or reshaped); expected "
                f"{[p for p, _, _ in expected]}, found {[p for p, _, _ in current]}. "
                "Call model.alloc_grads() and build the optimizer again."
            )
        touched = received_keys(grads)
        missing = [s for s in self._slots if s.key not in touched]
        if not missing:
            return self._slots
        paths = [s.path for s in missing]
        lost = [s.path for s in missing if _lost(s.param)]
        if lost:
            raise UnusedParameterError(
                paths,
                f"the gradients of {', '.join(repr(p) for p in lost)} were computed by a backward pass but "
                f"went to no Gradients of this {type(model).__name__}: the tape belonged only to another "
                "model's Gradients (a model chained after another). Trace the input with every model's "
                "Gradients, x.trace(grads_a, grads_b), so that each receives its own. No parameter was changed.",
            )
        if len(missing) == len(self._slots):
            raise UnusedParameterError(
                paths,
                f"no parameter of this {type(model).__name__} received a gradient: backward() has probably "
                "not run since grads.zero() (or the loss does not depend on the model). Expected "
                "loss.backward() before opt.update(model, grads). No parameter was changed.",
            )
        recorder = _hooks.recorder
        if recorder is not None:
            # sg.compile: which parameters go unused is fixed by the recording, the policy read
            # here is not: a replay needs it unchanged (changed, the step records again)
            recorder.setting_read(self, "unused")
        if self.unused == "error":
            raise UnusedParameterError(paths)
        if self.unused == "warn":
            # seen from update's caller, as stacklevel=3 (_check, update, the caller)
            issue = _located_warning(str(UnusedParameterError(paths)), RuntimeWarning, 2)
            if recorder is not None:
                # sg.compile: the same parameters go unused at every replay (which parameters get
                # a gradient is fixed by the recording), so a replay warns as the eager step does
                recorder.host_call(issue, list)
            else:
                issue()
        return [s for s in self._slots if s.key in touched]

    def update(self, model: M, grads: Gradients[M]) -> None:
        """Apply one step to ``model``'s parameters from ``grads``, in place.

        Every check (the gradients' model, unused parameters, the learning-rate schedule)
        runs before the first write, so a refused update changes nothing: not the
        parameters, not the state, not ``step_count``, not the gradients (clipping).

        Raises:
            GradientsMismatchError: ``grads`` was not allocated by ``model``, or the model's
                parameters changed since. Nothing is changed.
            UnusedParameterError: trainable parameters received no gradient (with
                ``unused="error"``), or none did at all. Nothing is changed.
        """
        flush_device_checks()
        active = self._check(model, grads)
        recorder = _hooks.recorder
        if recorder is not None:
            # sg.compile: the update is Python over the step count and the schedule (and, on
            # the host, clipping branches on the norm): it runs again at every replay.
            recorder.host_call(
                functools.partial(self._step, active, grads), functools.partial(self._written, active, grads)
            )
            return
        self._step(active, grads)

    def _written(self, active: list[_Slot], grads: Gradients[M]) -> list[Any]:
        """Every array an update of ``active`` writes in place: the parameters, their state
        and the gradient buffers (clipping scales them)."""
        arrays = [array_of(slot.param) for slot in active]
        arrays += [value for slot in active for value in slot.state.values()]
        return arrays + list(buffers(grads).values())

    def _step(self, active: list[_Slot], grads: Gradients[M]) -> None:
        """The update itself, after the checks: rates, clipping, each parameter's rule."""
        lr = _rate(self.lr, self.step_count)
        # Each group's rate is found (a schedule called) before the first write as well.
        rates = {id(hp): _rate(hp.lr, self.step_count) for hp in self._group_hp if hp.lr is not None}
        if self.clip_norm is not None:
            _clip_in_place(grads, self.clip_norm)
        slots = buffers(grads)
        for slot in active:
            slot.steps += 1
            param, grad, backend, hp = array_of(slot.param), slots[slot.key], slot.backend, slot.hp
            rate = rates.get(id(hp), lr)
            xp = backend.xp
            wide = None if slot.wide_dtype is None else xp.astype(param, slot.wide_dtype)
            if wide is not None:
                grad = xp.astype(grad, slot.wide_dtype)
            if (self if hp is None else hp).maximize:
                grad = -grad  # gradient ascent, PyTorch's maximize: before weight decay and the rule
            if wide is None:
                self._apply(backend, param, grad, slot.state, rate, slot.steps, hp)
            else:
                self._apply(backend, wide, grad, slot.state, rate, slot.steps, hp)
                backend.copy_into(param, xp.astype(wide, param.dtype))
            note_written(slot.param)
        self.step_count += 1
        mark_consumed(grads, f"{type(self).__name__}.update")

    # -- checkpoints --------------------------------------------------------------------------
    def state_backend(self) -> Backend:
        """The backend this optimizer's state arrays live on (its parameters')."""
        backend: Backend = self._slots[0].backend
        return backend

    def state_arrays(self) -> dict[str, Any]:
        """Every state array by name (``"<param path>.<state>"``)."""
        arrays: dict[str, Any] = {}
        for slot in self._slots:
            for name, value in slot.state.items():
                arrays[f"{slot.path}.{name}"] = value
        return arrays

    def slot_steps(self) -> dict[str, int]:
        """How many updates each parameter received, by dotted path."""
        return {slot.path: slot.steps for slot in self._slots}

    def load_state_arrays(
        self, arrays: dict[str, Any], step_count: int, slot_steps: dict[str, int] | None = None
    ) -> None:
        """Copy state saved by ``state_arrays`` back in place (shapes were validated)."""
        for slot in self._slots:
            for name, value in slot.state.items():
                slot.backend.copy_into(value, arrays[f"{slot.path}.{name}"])
            slot.steps = step_count if slot_steps is None else slot_steps[slot.path]
        self.step_count = step_count
