"""The NumPy backend: the default, CPU only."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._base import NumpyLikeBackend


class _NumpyRandom:
    def __init__(self, seed: int | None) -> None:
        self._gen = np.random.default_rng(seed)

    def normal(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray[Any, Any]:
        return self._gen.standard_normal(shape, dtype=np.float64).astype(dtype, copy=False)

    def uniform(self, shape: tuple[int, ...], low: float, high: float, dtype: Any) -> np.ndarray[Any, Any]:
        return self._gen.uniform(low, high, shape).astype(dtype, copy=False)

    def permutation(self, n: int) -> np.ndarray[Any, Any]:
        return self._gen.permutation(n)


class NumpyBackend(NumpyLikeBackend):
    """Runs every op through NumPy on the CPU."""

    name = "numpy"
    xp = np

    def is_available(self) -> str | None:
        return None

    def asarray(self, data: Any, dtype: str | None) -> Any:
        return np.asarray(data, dtype=dtype)

    def to_numpy(self, array: Any) -> Any:
        return array

    def random(self, seed: int | None) -> _NumpyRandom:
        return _NumpyRandom(seed)
