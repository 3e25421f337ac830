"""Anomaly detection: raise at the first op whose forward or backward yields NaN or Inf.

Off by default; ``SHAPEGRAD_DETECT_ANOMALY=1`` turns it on for the process and
``with sg.detect_anomaly():`` for a block. When off, ops pay one attribute lookup.
"""

from __future__ import annotations

import contextlib
import os
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
                    f"during {phase} (output shape {node.shape}), created at {node.where or '<recorded before detection was on>'}"
                )


@contextlib.contextmanager
def detect_anomaly(enabled: bool = True) -> Generator[None, None, None]:
    """Within the block, raise ``NumericalAnomalyError`` at the first op (forward or
    backward) producing NaN or Inf, naming the op, its input shapes and the user line
    that created it.

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
    previous = _hooks.anomaly
    _hooks.anomaly = _Detector() if enabled else None
    try:
        yield
    finally:
        _hooks.anomaly = previous


if os.environ.get("SHAPEGRAD_DETECT_ANOMALY", "0").strip() not in ("", "0"):
    _hooks.anomaly = _Detector()
