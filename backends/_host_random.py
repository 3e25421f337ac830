"""Random draws in host memory from NumPy's default generator (PCG64).

The NumPy backend's generator, and the one the strict backend wraps into its arrays: one
source of draws for both, so that the same seed gives the same values on either.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class HostRandom:
    """Seeded draws as NumPy arrays; ``dtype`` is a NumPy dtype (or its name)."""

    def __init__(self, seed: int | None) -> None:
        self._gen = np.random.default_rng(seed)

    def normal(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray[Any, Any]:
        """Standard normal draws of ``shape`` in ``dtype``."""
        return self._gen.standard_normal(shape, dtype=np.float64).astype(dtype, copy=False)

    def uniform(self, shape: tuple[int, ...], low: float, high: float, dtype: Any) -> np.ndarray[Any, Any]:
        """Uniform draws in ``[low, high)`` of ``shape``, drawn in ``dtype`` itself when it
        is float32 (no float64 temporary: dropout masks are drawn every step)."""
        if np.dtype(dtype) == np.float32:
            draws = self._gen.random(shape, dtype=np.float32)
            if low != 0.0 or high != 1.0:
                draws *= np.float32(high - low)
                draws += np.float32(low)
            return draws
        return self._gen.uniform(low, high, shape).astype(dtype, copy=False)

    def permutation(self, n: int) -> np.ndarray[Any, Any]:
        """A random ordering of ``range(n)``."""
        return self._gen.permutation(n)
