"""Shared behaviour of backends whose arrays follow NumPy's conventions."""

from __future__ import annotations

from typing import Any

_names: dict[Any, str] = {}  # dtype -> name: str(np.dtype) costs microseconds on the hot path


class NumpyLikeBackend:
    """Base for NumPy and CuPy: one array module, NumPy dtypes, in-place operators."""

    name: str = ""
    xp: Any = None

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

    def add_into(self, target: Any, values: Any) -> None:
        """In place: ``target += values``."""
        target += values

    def copy_into(self, target: Any, values: Any) -> None:
        """In place: ``target[...] = values``."""
        target[...] = values

    def scatter_add(self, target: Any, indices: Any, values: Any) -> None:
        """In place: ``target[indices] += values``, repeated indices accumulating."""
        self.xp.add.at(target, indices, values)

    def adam_step(
        self,
        param: Any,
        grad: Any,
        m: Any,
        v: Any,
        scratch: Any,
        step_size: float,
        beta1: float,
        beta2: float,
        eps: float,
        bias2_sqrt: float,
    ) -> None:
        """One Adam update in place, through ``scratch`` so that no temporary is allocated:
        ``m ← β₁m + (1-β₁)g``, ``v ← β₂v + (1-β₂)g²``, ``p ← p - step · m / (√v/√b₂ + ε)``."""
        xp = self.xp
        m *= beta1
        xp.multiply(grad, 1 - beta1, out=scratch)
        m += scratch
        v *= beta2
        xp.multiply(grad, grad, out=scratch)
        scratch *= 1 - beta2
        v += scratch
        xp.sqrt(v, out=scratch)
        scratch *= 1 / bias2_sqrt
        scratch += eps
        xp.divide(m, scratch, out=scratch)
        scratch *= step_size
        param -= scratch

    def __repr__(self) -> str:
        return f"<shapegrad backend {self.name!r}>"
