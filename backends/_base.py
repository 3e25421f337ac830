"""Shared behaviour of the built-in backends."""

from __future__ import annotations

from typing import Any

_names: dict[Any, str] = {}  # dtype -> name: str(np.dtype) costs microseconds on the hot path


class BackendBase:
    """What every built-in backend shares: in-place helpers, no fused kernels by default."""

    name: str = ""
    xp: Any = None
    # Whether arrays live in host memory (NumPy can read them without a transfer).
    on_host: bool = True

    def add_into(self, target: Any, values: Any) -> None:
        """In place: ``target += values``."""
        target += values

    def copy_into(self, target: Any, values: Any) -> None:
        """In place: ``target[...] = values``."""
        target[...] = values

    def fused_kernel(self, name: str, dtype: Any) -> Any:
        """No fused kernels: every op runs its ``xp`` math (subclasses add theirs by name)."""
        return None

    def __repr__(self) -> str:
        return f"<shapegrad backend {self.name!r}>"


class NumpyLikeBackend(BackendBase):
    """Base for NumPy and CuPy: one array module, NumPy dtypes, in-place operators."""

    def dtype(self, name: str) -> Any:
        """The backend's dtype for a name such as ``"float32"``."""
        import numpy as np

        return np.dtype(name)

    def dtype_name(self, dtype: Any) -> str:
        """The canonical name of a dtype (``"float32"``), cached."""
        name = _names.get(dtype)
        if name is None:
            import numpy as np

            name = _names[dtype] = str(np.dtype(dtype))
        return name

    def is_array(self, obj: Any) -> bool:
        """Whether ``obj`` is an array of this backend."""
        return isinstance(obj, self.xp.ndarray)

    def scatter_add(self, target: Any, indices: Any, values: Any) -> None:
        """In place: ``target[indices] += values``, repeated indices accumulating."""
        self.xp.add.at(target, indices, values)
