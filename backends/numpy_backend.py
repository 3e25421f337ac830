"""The NumPy backend: the default, CPU only."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from ._base import NumpyLikeBackend


class _NumpyRandom:
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


class NumpyBackend(NumpyLikeBackend):
    """Runs every op through NumPy on the CPU."""

    name = "numpy"
    xp = np

    def __init__(self) -> None:
        # One scratch buffer per shape and dtype for the in-place Adam update.
        self._scratch: dict[tuple[tuple[int, ...], Any], np.ndarray[Any, Any]] = {}

    def fused_kernel(self, name: str, dtype: Any) -> Any:
        """``"adam"``: the Adam update in place, with no temporary arrays (NumPy's ``xp``
        math would allocate one per operation); ``"erf"``: SciPy's, where SciPy is installed
        (one pass instead of the reference math's ~60); no other kernel."""
        if name == "adam":
            return self._adam
        if name == "erf":
            try:  # optional: the reference math runs without it
                special: Any = importlib.import_module("scipy.special")
            except ImportError:
                return None
            return special.erf
        return None

    def _adam(
        self, g: Any, step_size: Any, beta1: Any, beta2: Any, eps: Any, inv_bias2_sqrt: Any, p: Any, m: Any, v: Any
    ) -> None:
        # The same update as the "adam" CuPy kernel and as Adam's xp math:
        # m ← β₁m + (1-β₁)g, v ← β₂v + (1-β₂)g², p ← p - step · m / (√v·(1/√b₂) + ε).
        key = (p.shape, p.dtype)
        scratch = self._scratch.get(key)
        if scratch is None:
            scratch = self._scratch[key] = np.empty_like(p)
        m *= beta1
        np.multiply(g, 1 - beta1, out=scratch)
        m += scratch
        v *= beta2
        np.multiply(g, g, out=scratch)
        scratch *= 1 - beta2
        v += scratch
        np.sqrt(v, out=scratch)
        scratch *= inv_bias2_sqrt
        scratch += eps
        np.divide(m, scratch, out=scratch)
        scratch *= step_size
        p -= scratch

    def is_available(self) -> str | None:
        """``None``: NumPy runs everywhere."""
        return None

    def asarray(self, data: Any, dtype: str | None) -> Any:
        """``data`` as a NumPy array (no copy when it already is one)."""
        return np.asarray(data, dtype=dtype)

    def to_numpy(self, array: Any) -> Any:
        """The array itself."""
        return array

    def random(self, seed: int | None) -> _NumpyRandom:
        """A generator seeded with ``seed``."""
        return _NumpyRandom(seed)
