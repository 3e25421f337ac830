"""Fused float32 kernels for the NumPy backend, compiled with numba when it is installed
(the ``fast`` extra). Each replaces a chain of NumPy passes, every one allocating its
result, with one vectorised numba ufunc; the ``xp`` math in ``shapegrad.ops`` stays the
reference, which ``tests/test_numba_kernels.py`` compares these kernels with.

- ``gelu_exact(x) -> (out, cdf, density)``: ``x·Φ(x)``, with ``Φ`` from a rational
  approximation of erf (the one XLA and Eigen use for float32, absolute error < 5e-7) and
  ``density = exp(-x²/2)`` saved for the backward pass (NumPy's vectorised ``exp``).
- ``gelu_exact_backward(g, x, cdf, density) -> g·(Φ(x) + x·φ(x))``.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["available", "kernel"]

_P = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03, -1.42647390514189e-02)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
# float32 constants, as numba reads module globals: the loops stay in single precision.
P0, P1, P2, P3, P4, P5, P6 = (np.float32(c) for c in _P)
Q0, Q1, Q2, Q3, Q4 = (np.float32(c) for c in _Q)
HALF, ROOT_HALF, LIMIT = np.float32(0.5), np.float32(1.0 / math.sqrt(2.0)), np.float32(4.0)
INV_SQRT_2PI = np.float32(_INV_SQRT_2PI)

_numba: Any = None
_built: dict[str, Callable[..., Any]] = {}


def available() -> bool:
    """Whether numba imports (checked once)."""
    global _numba
    if _numba is None:
        try:
            _numba = importlib.import_module("numba")
        except ImportError:
            _numba = False
    return _numba is not False


def _ufunc(signature: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    # A numba ufunc: its element loop is vectorised (an explicit loop over several arrays is
    # not: numba cannot rule out aliasing); fastmath lets LLVM reorder float operations, so
    # the kernels are tested against the reference to a tolerance, not bit for bit; cache
    # keeps the machine code between processes.
    return _numba.vectorize([signature], fastmath=True, cache=True)(fn)


def _gelu_cdf(v: Any) -> Any:
    u = min(max(v * ROOT_HALF, -LIMIT), LIMIT)
    u2 = u * u
    p = ((((((P0 * u2 + P1) * u2 + P2) * u2 + P3) * u2 + P4) * u2 + P5) * u2 + P6) * u
    q = (((Q0 * u2 + Q1) * u2 + Q2) * u2 + Q3) * u2 + Q4
    return HALF + HALF * (p / q)


def _gelu_grad(g: Any, x: Any, cdf: Any, density: Any) -> Any:
    return g * (cdf + x * density * INV_SQRT_2PI)


def _gelu_exact() -> Callable[..., Any]:
    phi = _ufunc("float32(float32)", _gelu_cdf)

    def gelu_exact(x: Any) -> tuple[Any, Any, Any]:
        cdf = phi(x)
        density = np.multiply(x, x)
        density *= np.float32(-0.5)
        np.exp(density, out=density)  # NumPy's exp is vectorised; numba's is not
        return x * cdf, cdf, density

    return gelu_exact


def _gelu_exact_backward() -> Callable[..., Any]:
    return _ufunc("float32(float32, float32, float32, float32)", _gelu_grad)


_BUILDERS: dict[str, Callable[[], Callable[..., Any]]] = {
    "gelu_exact": _gelu_exact,
    "gelu_exact_backward": _gelu_exact_backward,
}


def kernel(name: str, dtype: Any) -> Callable[..., Any] | None:
    """The compiled kernel ``name`` for ``dtype`` (float32 only), or None without numba."""
    if name not in _BUILDERS or np.dtype(dtype) != np.float32 or not available():
        return None
    if name not in _built:
        _built[name] = _BUILDERS[name]()
    return _built[name]
