"""The CuPy backend: tensors on an NVIDIA GPU.

CuPy is imported lazily (``import shapegrad`` never imports it). The op math is shared
with every backend; this module adds only what pays on a GPU: a namespace filling the
Array-API names CuPy spells differently, an exact ``scatter_add``, fused element-wise
kernels for activations and optimizer updates (sources in ``cupy_kernels.py``), and the
device's memory pool and random numbers.
"""

from __future__ import annotations

import importlib
import types
from typing import Any

from ._base import NumpyLikeBackend
from .cupy_kernels import KERNELS, PREAMBLE


def _array_api_namespace(cp: Any) -> Any:
    """CuPy's namespace with the Array-API spellings the op math uses.

    Not ``array_api_compat.cupy``: that module is bound to the real ``cupy`` at import
    (``from cupy import *``), so the backend could no longer drive the emulated CuPy that
    CPU-only CI runs the whole suite on; the six names below are all the op math needs.
    """
    names = {name: getattr(cp, name) for name in dir(cp) if not name.startswith("_")}
    names.setdefault("concat", cp.concatenate)
    names.setdefault("permute_dims", cp.transpose)
    names.setdefault("pow", cp.power)

    def matrix_transpose(x: Any) -> Any:
        return cp.swapaxes(x, -1, -2)

    def astype(x: Any, dtype: Any, copy: bool = True) -> Any:
        return x.astype(dtype, copy=copy)

    def argsort(x: Any, axis: int = -1, stable: bool = True) -> Any:
        # CuPy's sorts are always stable and take ``kind``, not the Array API's ``stable=``.
        return cp.argsort(x, axis=axis)

    names["argsort"] = argsort
    names.setdefault("matrix_transpose", matrix_transpose)
    names.setdefault("astype", astype)
    names.setdefault("bool", cp.bool_)
    return types.SimpleNamespace(**names)


class _CupyRandom:
    def __init__(self, cp: Any, seed: int | None) -> None:
        self._cp = cp
        self._gen = cp.random.default_rng(seed)

    def normal(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return self._gen.standard_normal(shape, dtype=self._cp.float64).astype(dtype, copy=False)

    def uniform(self, shape: tuple[int, ...], low: float, high: float, dtype: Any) -> Any:
        # Drawn in float32 itself when asked (no float64 temporary on the device).
        if self._cp.dtype(dtype) == self._cp.float32:
            draws = self._gen.random(shape, dtype=self._cp.float32)
            if low != 0.0 or high != 1.0:
                draws = draws * self._cp.float32(high - low) + self._cp.float32(low)
            return draws
        return self._gen.uniform(low, high, shape).astype(dtype, copy=False)

    def permutation(self, n: int) -> Any:
        # cupy.random.Generator has no permutation(); ranking uniform draws is one.
        return self._cp.argsort(self._gen.random(n))


_FUSED_DTYPES = ("float32", "float64")


class CupyBackend(NumpyLikeBackend):
    """Runs every op through CuPy (cuBLAS for matmul) on the current CUDA device."""

    name = "cupy"
    on_host = False  # NumPy must not read device memory implicitly (t.numpy() is explicit)
    # Index range checks are queued as device flags and read back once per step
    # (shapegrad/_device_checks.py) instead of stalling the GPU in every gather.
    lazy_checks = True

    def __init__(self, module: Any = None) -> None:
        """``module`` is the CuPy module to drive (default: ``import cupy``); tests pass a
        stand-in so that this class also runs where no GPU is."""
        self._cp: Any = None
        self._real = module is None  # the real CuPy, whose cupyx this backend may use
        self._reason: str | None = None
        self._kernels: dict[str, Any] = {}
        try:
            # optional: absent on machines without a GPU
            cp: Any = importlib.import_module("cupy") if module is None else module
        except ImportError as exc:
            self._reason = f"CuPy is not installed ({exc}); install shapegrad[cupy] on a machine with an NVIDIA GPU"
            return
        try:
            count: int = cp.cuda.runtime.getDeviceCount()
        except Exception as exc:  # CUDA raises its own error types when no driver answers
            # CuPy's words on a machine without a GPU can read like a broken driver
            # ("driver version is insufficient"): say what it means first.
            self._reason = (
                f"CuPy is installed but no CUDA device answers here (no GPU, or no usable driver); "
                f"CuPy says: {type(exc).__name__}: {exc}"
            )
            return
        if count < 1:
            self._reason = "CuPy is installed but no CUDA device was found"
            return
        self._cp = cp
        self.xp = _array_api_namespace(cp)

    def is_available(self) -> str | None:
        return self._reason

    def is_array(self, obj: Any) -> bool:
        return self._cp is not None and isinstance(obj, self._cp.ndarray)

    def asarray(self, data: Any, dtype: str | None) -> Any:
        return self._cp.asarray(data, dtype=dtype)

    def to_numpy(self, array: Any) -> Any:
        return self._cp.asnumpy(array)

    def scatter_add(self, target: Any, indices: Any, values: Any) -> None:
        self._cp.add.at(target, indices, values)

    def random(self, seed: int | None) -> _CupyRandom:
        return _CupyRandom(self._cp, seed)

    def fused_kernel(self, name: str, dtype: Any) -> Any:
        """The ``cupy.ElementwiseKernel`` for ``name`` in ``cupy_kernels.KERNELS`` (built on
        first use; CuPy compiles it once per dtype), or ``None`` for a name it lacks or a
        dtype other than float32 and float64 (float16 keeps the composed math)."""
        if self.dtype_name(dtype) not in _FUSED_DTYPES:
            return None
        if name == "erf":
            if not self._real:
                return None  # a stand-in CuPy (tests): the reference math
            try:
                special: Any = importlib.import_module("cupyx.scipy.special")
            except ImportError:
                return None
            return special.erf
        kernel = self._kernels.get(name)
        if kernel is None:
            source = KERNELS.get(name)
            if source is None:
                return None
            kernel = self._kernels[name] = self._cp.ElementwiseKernel(
                source.inputs, source.outputs, source.body, f"shapegrad_{name}", preamble=PREAMBLE
            )
        return kernel

    def memory_in_use(self) -> int:
        """Bytes the CuPy memory pool holds for live arrays."""
        return int(self._cp.get_default_memory_pool().used_bytes())
