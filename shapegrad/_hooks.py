"""Process-wide switches read on the hot path: kept as plain module attributes so that a
disabled feature costs one attribute lookup and nothing else."""

from __future__ import annotations

import threading
from typing import Any

get_ident = threading.get_ident

# The active anomaly detector (see ``_anomaly``), or None when detection is off.
anomaly: Any = None
