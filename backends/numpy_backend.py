"""The NumPy backend: the default, CPU only."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from . import numba_kernels
from ._allocator import tune_malloc
from ._base import NumpyLikeBackend
from ._host_random import HostRandom


# float32 erf as numba_kernels' rational approximation (XLA's and Eigen's), in a dozen
# in-place NumPy passes where SciPy's evaluates in double precision element by element.
def _polynomial(x2: np.ndarray[Any, Any], coefficients: tuple[float, ...]) -> np.ndarray[Any, Any]:
    out = np.full_like(x2, coefficients[0])
    for c in coefficients[1:]:
        out *= x2
        out += np.float32(c)
    return out


def erf_float32(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """erf of a float32 array: ``x·P(x²)/Q(x²)`` on ``x`` clipped to [-4, 4]."""
    u = np.clip(x, -4.0, 4.0)
    u2 = u * u
    p = _polynomial(u2, numba_kernels.ERF_P)
    p *= u
    p /= _polynomial(u2, numba_kernels.ERF_Q)
    return p


class NumpyBackend(NumpyLikeBackend):
    """Runs every op through NumPy on the CPU."""

    name = "numpy"
    xp = np

    def __init__(self) -> None:
        # One scratch buffer per shape and dtype for the in-place Adam update.
        self._scratch: dict[tuple[tuple[int, ...], Any], np.ndarray[Any, Any]] = {}
        # Freed activations are reused instead of page-faulted in again every step.
        self.malloc = tune_malloc()

    def fused_kernel(self, name: str, dtype: Any) -> Any:
        """``"adam"``: the Adam update in place, with no temporary arrays (NumPy's ``xp``
        math would allocate one per operation); ``"erf"``: for float32 a rational
        approximation in a dozen NumPy passes (:func:`erf_float32`), for other dtypes SciPy's
        where SciPy is installed (one pass instead of the reference math's ~60);
        where numba is installed (``backends/numba_kernels.py``): ``"adam"`` as one
        compiled pass, ``"sgd_momentum"``/``"sgd_nesterov"``, ``"max_pool2d"`` and its
        backward, a convolution's ``"im2col"``/``"im2col_planes"``/``"col2im"``, and for float32 ``"gelu_exact"``/``"gelu_exact_backward"``,
        ``"relu"``, ``"relu_backward"`` and ``"sigmoid"``; no other kernel."""
        if name == "adam":
            return self._adam_kernel(dtype)
        compiled = numba_kernels.kernel(name, dtype)
        if compiled is not None:
            return compiled
        if name == "erf" and np.dtype(dtype) == np.float32:
            return erf_float32
        if name == "erf":
            try:  # optional: the reference math runs without it
                special: Any = importlib.import_module("scipy.special")
            except ImportError:
                return None
            return special.erf
        return None

    def compile_loop(self, source: str, name: str) -> Any:
        """The function ``name`` of generated ``source`` compiled with numba (``sg.compile``'s
        fused element-wise chains), or None without numba."""
        return numba_kernels.loop(source, name)

    def scatter_add(self, target: Any, indices: Any, values: Any) -> None:
        """In place: ``target[indices] += values``, repeated indices accumulating; rows at a
        time (numba) for a 1-D index into the first axis, else ``np.add.at``."""
        rows = numba_kernels.kernel("scatter_add_rows", target.dtype)
        if rows is None or not rows(target, indices, values):
            np.add.at(target, indices, values)

    def _adam_kernel(self, dtype: Any) -> Any:
        compiled = numba_kernels.kernel("adam", dtype)
        if compiled is None:
            return self._adam

        def adam(*args: Any) -> None:
            if not compiled(*args):  # strided or mixed-dtype arrays: NumPy passes
                self._adam(*args)

        return adam

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

    def random(self, seed: int | None) -> HostRandom:
        """A generator seeded with ``seed``."""
        return HostRandom(seed)
