"""Process-wide switches read on the hot path: kept as plain module attributes so that a
disabled feature costs one attribute lookup and nothing else."""

from __future__ import annotations

import os
import threading
from typing import Any

get_ident = threading.get_ident

# SHAPEGRAD_CHECKS=0 (read once, at import) turns run-time shape checking off: then nothing
# imports jaxtyping or beartype, and Tensor[...] is a plain generic alias.
checks_enabled: bool = os.environ.get("SHAPEGRAD_CHECKS", "1").strip().lower() not in ("0", "false", "off", "no")

# None while no thread has anomaly detection on; otherwise the dispatcher to the calling
# thread's detector (see ``_anomaly``): the per-thread lookup is paid only then.
anomaly: Any = None

# None unless sg.compile is recording a step on this process (see ``_compile``): then the
# recorder that fused kernels, random draws, optimizer updates and Gradients report to.
recorder: Any = None

# None while no thread is inside ``sg.no_grad()``; otherwise the thread-local whose ``depth``
# counts the calling thread's open blocks (see ``_no_grad``): recorded ops then give untraced
# results in that thread.
untraced: Any = None

# Whether any of the three above is set: the ops' common path (a traced op, no hook) reads
# this one flag instead of three. Set through :func:`set_hook` alone.
active: bool = False
_lock = threading.Lock()


def set_hook(name: str, value: Any) -> None:
    """Set ``anomaly``, ``recorder`` or ``untraced`` and :data:`active` with it, under one
    lock: two threads setting different hooks leave ``active`` as the three hooks say."""
    global active
    with _lock:
        globals()[name] = value
        active = anomaly is not None or recorder is not None or untraced is not None
