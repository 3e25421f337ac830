"""``Gradients[M]``: where a backward pass leaves its results, tied to one model."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence, Set as AbstractSet
from typing import TYPE_CHECKING, Any, Generic, overload

from . import _hooks
from ._autodiff import LeafNode, Tape
from ._errors import TapeError
from ._tensor import AnyTensor, Tensor, wrap
from ._typevars import M, S

if TYPE_CHECKING:
    from ._backend import Backend

__all__ = ["Gradients"]


class Gradients(Generic[M]):
    """The gradients one tape delivers, for the model ``M`` they were recorded for.

    ``sg.Gradients()`` makes a free-standing one for plain tensors; ``model.alloc_grads()``
    makes one with a preallocated buffer per trainable parameter, reused every step. Trace
    inputs with ``x.trace(grads)``; after ``backward``, ``grads[x]`` is the gradient of a
    traced leaf or a parameter.

    Examples:
        >>> import shapegrad as sg
        >>> grads = sg.Gradients()
        >>> a = sg.tensor([1.0, 2.0]).trace(grads)
        >>> b = sg.tensor([3.0, 4.0]).trace(grads)
        >>> _ = (a * b).sum().backward()
        >>> grads[a].tolist(), grads[b].tolist()
        ([3.0, 4.0], [1.0, 2.0])
    """

    __slots__ = (
        "_tape",
        "_slots",
        "_touched",
        "_owner",
        "_paths",
        "_backends",
        "_layout",
        "_on_ready",
        "_consumed",
        "_leaves",
    )

    @overload
    def __init__(self: Gradients[None]) -> None: ...
    @overload
    def __init__(self, *, model: M, parameters: Sequence[tuple[str, AnyTensor]]) -> None: ...
    def __init__(self, *, model: Any = None, parameters: Sequence[tuple[str, AnyTensor]] = ()) -> None:
        self._tape = Tape(self)
        # key -> (buffer, backend); buffers are filled lazily: "touched" says which hold a
        # gradient from this step, so zero() costs nothing per parameter.
        self._slots: dict[int, Any] = {}
        self._backends: dict[int, Backend] = {}
        self._paths: dict[int, str] = {}
        self._touched: set[int] = set()
        self._owner: weakref.ref[Any] | None = None if model is None else weakref.ref(model)
        layout: list[tuple[str, int, tuple[int, ...]]] = []
        self._leaves: list[LeafNode] = []  # the parameters' leaves: zero() clears their "lost" mark
        for path, param in parameters:
            info = param._param
            if info is None:
                raise TapeError(f"{path!r} is not a parameter")
            backend = param._backend
            self._slots[info.key] = backend.xp.zeros_like(param._data)
            self._leaves.append(info.leaf)
            self._backends[info.key] = backend
            self._paths[info.key] = path
            layout.append((path, info.key, param.shape))
        self._layout = tuple(layout)
        # Called with a parameter's key once its gradient for this backward pass is in its
        # buffer (a backward pass reaches each leaf once): distributed overlap starts
        # reducing a bucket as soon as all of its gradients are final.
        self._on_ready: Any = None
        # Set by an optimizer update that used these gradients; cleared by zero(). A
        # backward pass in between would add the next step's gradients to the used ones.
        self._consumed: str | None = None

    # -- the engine's side ---------------------------------------------------------------
    def _recording_tape(self) -> Tape:
        tape = self._tape.root()
        if tape.ended is not None:
            self._tape = tape = Tape(self)
        return tape

    def _accept(self, key: int, grad: Any) -> bool:
        if _hooks.recorder is not None:
            _hooks.recorder.touch(self)
        buffer = self._slots.get(key)
        if buffer is None:
            return False
        backend = self._backends[key]
        if key in self._touched:
            backend.add_into(buffer, grad)
        else:
            backend.copy_into(buffer, grad)
            self._touched.add(key)
        if self._on_ready is not None:
            self._on_ready(key)
        return True

    def _path_of(self, key: int) -> str | None:
        return self._paths.get(key)

    def _check_not_consumed(self) -> None:
        if _hooks.recorder is not None:
            _hooks.recorder.touch(self)
        if self._consumed is not None:
            raise TapeError(
                f"backward into gradients that {self._consumed} already used for its update, before "
                "grads.zero(): the new gradients would be added to the old ones and the next update "
                "would apply both. Expected grads.zero() after each update (to accumulate several "
                "batches, run their backward passes before one update)."
            )

    # -- the user's side -----------------------------------------------------------------
    def _lookup(self, tensor: AnyTensor) -> Any:
        if _hooks.recorder is not None:
            _hooks.recorder.touch(self)
        param = tensor._param
        node = tensor._node
        key = node.key if node is not None and node.rule is None else (param.key if param is not None else None)
        if key is None:
            if node is not None:
                raise TapeError(
                    "grads[...] expects a traced leaf (the result of x.trace(grads)) or a parameter, "
                    f"found the result of an op {tensor!r}"
                )
            raise TapeError(f"grads[...] expects a traced leaf or a parameter, found an untraced tensor {tensor!r}")
        if key in self._slots:
            return self._slots[key] if key in self._touched else None
        return self._tape.root().leaf_grads.get(key)

    def __getitem__(self, tensor: Tensor[Any, *S]) -> Tensor[Any, *S]:
        """The gradient of a traced leaf or parameter, shaped like it.

        Raises ``TapeError`` when no backward pass reached it.
        """
        grad = self._lookup(tensor)
        node = tensor._node
        if grad is None and node is not None and not tensor._backend.dtype_name(node.dtype).startswith("float"):
            raise TapeError(
                f"{tensor!r} holds integers: traced integer tensors (token ids, labels) carry the tape "
                "but never receive a gradient; trace a floating-point tensor to get one"
            )
        if grad is None and node is not None and not node.wants:
            raise TapeError(
                f"{tensor!r} only carries the tape: inputs traced with a model's Gradients "
                "get no gradient unless traced with x.trace(grads, keep_grad=True)"
            )
        if grad is None:
            raise TapeError(
                f"no gradient reached {tensor!r}: it took no part in the outputs that were "
                "backpropagated, or backward has not run since the last zero()"
            )
        return wrap(grad, tensor._backend)

    def get(self, tensor: Tensor[Any, *S], default: Any = None) -> Tensor[Any, *S] | Any:
        """``grads[tensor]``, or ``default`` when no gradient reached it."""
        grad = self._lookup(tensor)
        return default if grad is None else wrap(grad, tensor._backend)

    def __contains__(self, tensor: AnyTensor) -> bool:
        return self._lookup(tensor) is not None

    def zero(self) -> None:
        """Start a new step: forget every gradient and end the current tape.

        Parameter buffers are kept (no allocation); tensors traced before ``zero()`` belong
        to an ended tape, and using them in a backward pass raises ``TapeError``.
        """
        if _hooks.recorder is not None:
            _hooks.recorder.zeroed(self)  # sg.compile: the step does not depend on what came before
        self._touched.clear()
        self._consumed = None
        for leaf in self._leaves:
            leaf.lost = False
        end_tape(self)

    def parameter_paths(self) -> list[str]:
        """Dotted paths of the parameters this object holds buffers for."""
        return [path for path, _, _ in self._layout]

    def received(self) -> list[str]:
        """Dotted paths of the parameters that received a gradient since the last zero()."""
        if _hooks.recorder is not None:
            _hooks.recorder.touch(self)
        return [path for path, key, _ in self._layout if key in self._touched]

    def items(self) -> Iterator[tuple[str, AnyTensor]]:
        """``(path, gradient)`` for every parameter that received one."""
        if _hooks.recorder is not None:
            _hooks.recorder.touch(self)
        for path, key, _ in self._layout:
            if key in self._touched:
                yield path, wrap(self._slots[key], self._backends[key])

    @property
    def model(self) -> Any:
        """The model these gradients were allocated for (None when free-standing or gone)."""
        return None if self._owner is None else self._owner()

    def __repr__(self) -> str:
        owner = self.model
        name = type(owner).__name__ if owner is not None else "free-standing"
        return f"Gradients({name}, {len(self._touched)}/{len(self._slots)} parameters received)"


# -- the library's side of Gradients -------------------------------------------------------
# What the optimizers, checkpoints and `distributed` read and change of a Gradients: its
# layout, its buffers, which received a gradient, the consumed mark and the readiness hook.
# Those modules go through these (reportPrivateUsage is on there); the engine goes through
# the GradientSink protocol (_accept, _path_of, _recording_tape, _check_not_consumed).


def layout(grads: Gradients[Any]) -> tuple[tuple[str, int, tuple[int, ...]], ...]:
    """``(path, key, shape)`` of every parameter buffer, in the model's order."""
    return grads._layout


def buffers(grads: Gradients[Any]) -> Mapping[int, Any]:
    """Each parameter key's gradient buffer (a backend array, written in place); a buffer
    holds this step's gradient only where :func:`received_keys` has its key."""
    return grads._slots


def buffer_backend(grads: Gradients[Any], key: int) -> Backend:
    """The backend of the buffer under ``key``."""
    return grads._backends[key]


def received_keys(grads: Gradients[Any]) -> AbstractSet[int]:
    """The keys whose buffers received a gradient since the last ``zero()`` (a live view)."""
    if _hooks.recorder is not None:
        _hooks.recorder.touch(grads)
    return grads._touched


def backward_passes(grads: Gradients[Any]) -> list[int]:
    """When each backward pass ``grads`` adds up since ``zero()`` ran (the engine's counter;
    merged tapes' passes appended, so not in order), or since :func:`forget_passes`; a live list."""
    return grads._recording_tape().passes


def forget_passes(grads: Gradients[Any]) -> None:
    """Count the passes ``grads`` holds as one (sg.distributed: they were averaged over the ranks)."""
    grads._recording_tape().passes.clear()


def mark_received(grads: Gradients[Any], key: int) -> None:
    """Count the buffer under ``key`` as holding this step's gradient (an allreduce filled it)."""
    grads._touched.add(key)


def bookkeeping(grads: Gradients[Any]) -> tuple[frozenset[int], str | None]:
    """Which buffers hold this step's gradient and which update used them (a snapshot)."""
    return frozenset(grads._touched), grads._consumed


def set_bookkeeping(grads: Gradients[Any], state: tuple[frozenset[int], str | None]) -> None:
    """Put back a :func:`bookkeeping` snapshot (sg.compile: where a replay ends, and in a
    replay's host call, where the Python state is still the previous call's)."""
    touched, consumed = state
    grads._touched.clear()
    grads._touched.update(touched)
    grads._consumed = consumed


def end_tape(grads: Gradients[Any]) -> None:
    """End the tape behind ``grads`` (backward through what it recorded raises ``TapeError``)
    and start a new one: ``zero()``'s effect on the tape (sg.compile: a replay of a step that
    zeroes ``grads``)."""
    grads._tape.root().end("its Gradients was zeroed with grads.zero()")
    grads._tape = Tape(grads)


def tape_of(grads: Gradients[Any]) -> Tape:
    """The tape ``grads`` records on now (its root where merged with another's)."""
    return grads._tape.root()


def leaves_of(grads: Gradients[Any]) -> list[Any]:
    """The leaf nodes of the parameters ``grads`` holds buffers for."""
    return grads._leaves


def mark_consumed(grads: Gradients[Any], by: str) -> None:
    """An optimizer update (``by``) used these gradients: no backward into them before ``zero()``."""
    grads._consumed = by


def on_ready(grads: Gradients[Any], callback: Callable[[int], None] | None) -> None:
    """Call ``callback(key)`` each time a parameter's gradient for the running backward pass
    is final in its buffer (None: stop)."""
    grads._on_ready = callback
