"""Range checks on index arrays, without a device-to-host wait per op.

Checking that every index lies in range needs the indices' minimum and maximum on the host.
On NumPy that is free, and the check raises at once. On a device (CuPy), reading them back
stalls the GPU until every queued kernel has run, so each check is queued instead, as a
flag computed on the device, and all queued flags are read in one transfer at the next
point where the host needs device results anyway: a backward pass, an optimizer update, a
checkpoint, or reading values (``.item()``, ``.numpy()``, ...). A device op on wrong
indices therefore fails there, before any gradient or weight is computed from its result.
"""

from __future__ import annotations

import threading
from typing import Any

from . import _hooks
from ._errors import ShapeError

__all__ = ["flush", "pending", "require_in_range"]

_local = threading.local()


def pending() -> list[tuple[Any, Any, str]]:
    """This thread's queued checks: ``(backend, device flag, message)``."""
    queue: list[tuple[Any, Any, str]] | None = getattr(_local, "queue", None)
    if queue is None:
        queue = _local.queue = []
    return queue


def require_in_range(
    backend: Any, indices: Any, low: float, high: float, message: str, *, closed: bool = False
) -> None:
    """Raise ``ShapeError(message)`` unless ``low <= indices < high`` everywhere (``<= high``
    when ``closed``: probabilities in [0, 1]); on a backend that declares ``lazy_checks`` the
    check is queued until the next :func:`flush`."""
    if indices.size == 0:
        return
    xp = backend.xp
    recorder = _hooks.recorder
    if recorder is not None:  # sg.compile: checked now and at every replay, as a recorded flag
        outside = xp.any((indices < low) | ((indices > high) if closed else (indices >= high)))
        recorder.check(outside, message)
        return
    if closed or getattr(backend, "lazy_checks", False):
        outside = xp.any((indices < low) | ((indices > high) if closed else (indices >= high)))
        if getattr(backend, "lazy_checks", False):
            pending().append((backend, outside, message))
        elif bool(outside):
            raise ShapeError(message)
        return
    if int(xp.min(indices)) < low or int(xp.max(indices)) >= high:
        raise ShapeError(message)


def flush() -> None:
    """Read every queued check back (one transfer per backend) and raise the first failure."""
    queue = pending()
    if not queue:
        return
    checks = queue[:]
    queue.clear()
    by_backend: dict[int, list[tuple[Any, Any, str]]] = {}
    for check in checks:
        by_backend.setdefault(id(check[0]), []).append(check)
    for group in by_backend.values():
        backend = group[0][0]
        flags = backend.to_numpy(backend.xp.stack([flag for _, flag, _ in group]))
        for (_, _, message), bad in zip(group, flags.tolist(), strict=True):
            if bad:
                raise ShapeError(f"{message} (found by a range check queued on the {backend.name!r} device)")
