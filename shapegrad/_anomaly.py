"""Anomaly detection: raise at the first op whose forward or backward yields NaN or Inf.

Off by default; ``SHAPEGRAD_DETECT_ANOMALY=1`` turns it on in every thread and
``with sg.detect_anomaly():`` for a block in the thread that enters it. The switch is
per thread: ``_hooks.anomaly`` (what every op reads) stays None while no thread has
detection on, so then ops pay one attribute lookup; while some thread has it on, it is a
dispatcher that looks up the calling thread's detector.
"""

from __future__ import annotations

import contextlib
import os
import threading
import traceback
from collections.abc import Generator, Sequence
from typing import Any

from . import _hooks
from ._errors import NumericalAnomalyError

__all__ = ["detect_anomaly"]

_LIBRARY_DIR = os.path.dirname(os.path.abspath(__file__))


def _op_name(rule: Any) -> str:
    name: str = getattr(rule, "__name__", "op")
    for suffix in ("_left_backward", "_right_backward", "_scalar_backward", "_backward"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _user_frame() -> str:
    for frame in reversed(traceback.extract_stack()):
        if not os.path.abspath(frame.filename).startswith(_LIBRARY_DIR):
            return f"{frame.filename}:{frame.lineno} in {frame.name}"
    return "<unknown>"


def _bad(xp: Any, array: Any) -> bool:
    try:
        return not bool(xp.all(xp.isfinite(array)))
    except TypeError:
        return False  # integer or boolean data cannot hold NaN or Inf


class _Detector:
    def forward(self, rule: Any, inputs: Sequence[Any], data: Any, node: Any = None) -> None:
        """Check an op's result; remember where in user code a recorded op was created."""
        where = _user_frame()
        if node is not None:
            node.where = where
        backend = next((t._backend for t in inputs if t._backend is not None), None)  # a number operand has none
        if backend is None or not _bad(backend.xp, data):
            return
        shapes = ", ".join(str(t.shape) for t in inputs)
        raise NumericalAnomalyError(
            f"op '{_op_name(rule)}' produced NaN or Inf in its forward result "
            f"(input shapes: {shapes}), created at {where}"
        )

    def backward(self, node: Any, grads: Sequence[Any], phase: str) -> None:
        """Check the input gradients one backward rule produced."""
        for i, grad in enumerate(grads):
            if grad is not None and _bad(node.xp, grad):
                raise NumericalAnomalyError(
                    f"op '{_op_name(node.rule)}' produced NaN or Inf in the gradient of input {i} "
                    f"during {phase} (output shape {node.shape}), created at {getattr(node, 'where', None) or '<recorded before detection was on>'}"
                )


class _ThreadState(threading.local):
    # The class attribute is every thread's starting value: the environment's choice.
    detector: _Detector | None = None


class _Dispatch:
    """``_hooks.anomaly`` while any thread may have detection on: forwards to the calling
    thread's detector, if it has one."""

    def forward(self, rule: Any, inputs: Sequence[Any], data: Any, node: Any = None) -> None:
        detector = _state.detector
        if detector is not None:
            detector.forward(rule, inputs, data, node)

    def backward(self, node: Any, grads: Sequence[Any], phase: str) -> None:
        detector = _state.detector
        if detector is not None:
            detector.backward(node, grads, phase)


_state = _ThreadState()
_dispatch = _Dispatch()
_lock = threading.Lock()
_blocks_on = 0  # ``detect_anomaly()`` blocks open in all threads together, under _lock


def _install() -> None:
    _hooks.set_hook("anomaly", _dispatch if _blocks_on or _ThreadState.detector is not None else None)


@contextlib.contextmanager
def detect_anomaly(enabled: bool = True) -> Generator[None, None, None]:
    """Within the block, raise ``NumericalAnomalyError`` at the first op (forward or
    backward) producing NaN or Inf, naming the op, its input shapes and the user line
    that created it.

    The switch is per thread, like a ``with`` block's reach: other threads keep their own
    setting (off, unless ``SHAPEGRAD_DETECT_ANOMALY=1`` turned it on in every thread), and
    blocks in two threads may overlap. ``detect_anomaly(False)`` turns it off in a block.

    Args:
        enabled: ``False`` turns detection off within the block instead.

    Examples:
        >>> import numpy as np
        >>> import shapegrad as sg
        >>> with sg.detect_anomaly(), np.errstate(invalid="ignore"):  # NumPy's own warning aside
        ...     try:
        ...         sg.log(sg.tensor([-1.0]))
        ...     except sg.NumericalAnomalyError as e:
        ...         print("caught", str(e).split(" produced")[0])
        caught op 'log'
    """
    global _blocks_on
    previous = _state.detector
    with _lock:
        _blocks_on += enabled
        _install()
    _state.detector = _Detector() if enabled else None
    try:
        yield
    finally:
        _state.detector = previous
        with _lock:
            _blocks_on -= enabled
            _install()


if os.environ.get("SHAPEGRAD_DETECT_ANOMALY", "0").strip() not in ("", "0"):
    _ThreadState.detector = _Detector()
    _install()
