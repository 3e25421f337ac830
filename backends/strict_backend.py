"""A CPU backend that behaves like a strict Array-API library (``array-api-strict``).

It exists so that CPU-only CI catches op code that would work only on NumPy and break on
CuPy or any other Array-API library; it is registered through the same entry-point group as
a third-party backend would be. Operations the standard lacks (scatter-add, random numbers)
go through NumPy on the host, which is correct and slow: this backend is for testing.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ._base import BackendBase
from ._host_random import HostRandom


class _StrictRandom:
    """The NumPy backend's draws (:class:`HostRandom`), the same for the same seed, as
    strict arrays."""

    def __init__(self, backend: StrictBackend, seed: int | None) -> None:
        self._backend = backend
        self._host = HostRandom(seed)

    def normal(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return self._backend.xp.asarray(self._host.normal(shape, self._backend.dtype_name(dtype)))

    def uniform(self, shape: tuple[int, ...], low: float, high: float, dtype: Any) -> Any:
        return self._backend.xp.asarray(self._host.uniform(shape, low, high, self._backend.dtype_name(dtype)))

    def permutation(self, n: int) -> Any:
        return self._backend.xp.asarray(self._host.permutation(n))


class StrictBackend(BackendBase):
    """Every op through ``array_api_strict``; anything non-standard fails loudly (no fused
    kernels: it runs the reference math)."""

    name = "strict"

    def __init__(self) -> None:
        try:
            import array_api_strict as xp
            from array_api_strict._array_object import Array
        except ImportError as exc:
            self.xp: Any = None
            self._reason: str | None = f"array-api-strict is not installed ({exc}); pip install shapegrad[strict]"
            return
        self.xp = xp
        self._array_type: Any = Array
        self._reason = None
        self._dtypes = {
            name: getattr(xp, name)
            for name in ("float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")
        }

    def is_available(self) -> str | None:
        return self._reason

    def asarray(self, data: Any, dtype: str | None) -> Any:
        if isinstance(data, np.ndarray):
            host = cast(np.ndarray[Any, Any], data)
            if host.dtype == np.float16:
                data = host.astype(np.float32)
        return self.xp.asarray(data, dtype=None if dtype is None else self._dtypes[dtype])

    def is_array(self, obj: Any) -> bool:
        return isinstance(obj, self._array_type)

    def dtype(self, name: str) -> Any:
        return self._dtypes[name]

    def dtype_name(self, dtype: Any) -> str:
        for name, candidate in self._dtypes.items():
            if candidate == dtype:
                return name
        return str(dtype)

    def to_numpy(self, array: Any) -> Any:
        return np.asarray(array)  # array-api-strict arrays support the buffer protocol

    def scatter_add(self, target: Any, indices: Any, values: Any) -> None:
        host = np.asarray(target).copy()
        np.add.at(host, _to_numpy_index(indices), np.asarray(values))
        target[...] = self.xp.asarray(host)

    def random(self, seed: int | None) -> _StrictRandom:
        return _StrictRandom(self, seed)


def _to_numpy_index(index: Any) -> Any:
    if isinstance(index, tuple):
        return tuple(_to_numpy_index(i) for i in cast(tuple[Any, ...], index))
    if isinstance(index, (int, slice)) or index is None or index is Ellipsis:
        return cast(Any, index)
    return np.asarray(index)
