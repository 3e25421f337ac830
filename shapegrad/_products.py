"""``a @ bᵀ`` on NumPy through whichever of BLAS's two equivalent calls runs faster.

A layer's input gradient is ``g @ Wᵀ`` (``linear``'s ``gx``, ``matmul``'s ``ga``), and code
written with PyTorch's weight layout computes ``x @ W.T`` forward. BLAS can be asked for it
as itself or as ``(W @ gᵀ)ᵀ``: the same dot products with the two operands' roles swapped.
Some kernels are several times slower one way when ``g`` has few rows: OpenBLAS's SkylakeX
kernels (an AVX-512 CPU) took 55 µs for ``g @ W.T`` at 32×384 by 384×128 and 40 µs swapped,
839 against 367 µs for a 1024×1024 weight at 8 rows; its Haswell kernels on the same CPU
show no such gap. Which way is faster is a property of the BLAS build and the CPU, so it is
measured, once per shape, the first time a product of that shape is met.

The choice never changes a result: the swapped call is taken only where it gives the same
bits as the direct one, checked on fixed pseudo-random matrices of the shape (the same check
in every process, so runs agree bit for bit whichever way the timing went). Where a kernel
sums in another order (OpenBLAS's Haswell kernels often do), the direct call is kept.

Only NumPy matrices of float32 or float64 with unit-stride rows are considered, with 4 to
128 rows on the left (where the gap was found) and at least ``MIN_WORK`` multiply-adds (a
smaller product takes microseconds either way); every other product is the direct call.
"""

from __future__ import annotations

import threading
import time
from typing import Any, cast

import numpy as np

MIN_ROWS, MAX_ROWS = 4, 128
MIN_WORK = 1 << 18  # multiply-adds: below this, the measurement would cost more than it saves
MAX_WEIGHT = 1 << 24  # elements of ``b``: the measurement makes a copy of it (64 MB in float32)
MAX_SHAPES = 4096  # shapes measured per process; beyond, new shapes take the direct call
FASTER = 0.9  # the swapped call is taken when it takes at most this share of the direct one's time

# (rows, inner, columns, dtype char, left contiguous, right contiguous) -> whether to swap
_decided: dict[tuple[int, int, int, str, bool, bool], bool] = {}
_lock = threading.Lock()


def times_transposed(xp: Any, a: Any, b: Any) -> Any:
    """``a @ bᵀ`` for matrices ``a`` (M×N) and ``b`` (K×N) of any backend, C-ordered where it
    was swapped. On NumPy, for the shapes the module docstring names, through the faster of
    the two equivalent BLAS calls (same bits); stacks of matrices take the direct call.

    Examples:
        >>> import numpy as np
        >>> a, b = np.ones((2, 3), np.float32), np.ones((4, 3), np.float32)
        >>> times_transposed(np, a, b).shape
        (2, 4)
    """
    if isinstance(cast(object, b), np.ndarray) and b.ndim == 2 and _swaps(a, b.shape, b.strides, b.dtype):
        return _swapped(xp, a, b)
    return xp.matmul(a, xp.matrix_transpose(b))


def matrix_product(xp: Any, a: Any, b: Any) -> Any:
    """``a @ b`` (``xp.matmul``'s rules), through :func:`times_transposed`'s choice where ``b``
    is a NumPy matrix laid out transposed: ``x @ W.T`` with PyTorch's weight layout."""
    # a row-major b (a layer's own weight, the common case) is told by one stride, before the rest
    if (
        isinstance(cast(object, b), np.ndarray)
        and b.ndim == 2
        and b.strides[0] == b.itemsize
        and _swaps(a, b.shape[::-1], b.strides[::-1], b.dtype)
    ):
        return _swapped(xp, a, xp.matrix_transpose(b))
    return xp.matmul(a, b)


def _swapped(xp: Any, a: Any, b: Any) -> Any:
    """``(b @ aᵀ)ᵀ`` in C order: ``a @ bᵀ`` through BLAS's other call."""
    return xp.ascontiguousarray(xp.matrix_transpose(xp.matmul(b, xp.matrix_transpose(a))))


def _swaps(a: Any, shape: tuple[int, ...], strides: tuple[int, ...], dtype: Any) -> bool:
    """Whether ``a @ bᵀ``, for a NumPy matrix ``b`` of this ``shape`` (K×N), ``strides`` and
    ``dtype``, is computed as ``(b @ aᵀ)ᵀ``: measured once per shape."""
    # Told by the arrays, not by xp: sg.compile records NumPy's math through a namespace of its own.
    if not isinstance(cast(object, a), np.ndarray) or a.ndim != 2:
        return False
    rows, inner = a.shape
    columns = shape[0]
    if not MIN_ROWS <= rows <= MAX_ROWS or shape[1] != inner or not MIN_WORK <= rows * inner * columns:
        return False
    if inner * columns > MAX_WEIGHT:
        return False
    if dtype != a.dtype or dtype.char not in "fd":
        return False
    size = dtype.itemsize
    if a.strides[1] != size or strides[1] != size:  # BLAS would be handed another layout (or a copy)
        return False
    key = (rows, inner, columns, dtype.char, a.strides[0] == inner * size, strides[0] == inner * size)
    decided = _decided.get(key)
    if decided is None:
        decided = _measure(key)
    return decided


def _measure(key: tuple[int, int, int, str, bool, bool]) -> bool:
    """Time both calls on pseudo-random matrices of the shape ``key`` names (laid out as the
    operands are) and keep the swapped one if it is clearly faster and gives the same bits."""
    with _lock:
        if len(_decided) >= MAX_SHAPES:
            return False
        a, b = probe_operands(key)
        direct = np.matmul(a, b.T)
        swapped = np.ascontiguousarray(np.matmul(b, a.T).T)
        decided = _same_bits(direct, swapped) and _faster_swapped(a, b)
        _decided[key] = decided
        return decided


def probe_operands(key: tuple[int, int, int, str, bool, bool]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The fixed pseudo-random ``a`` and ``b`` a shape ``key`` is measured on: the same in
    every process, laid out as the operands are (a view of a wider matrix where one is a
    slice of columns)."""
    rows, inner, columns, char, a_whole, b_whole = key
    rng = np.random.default_rng(rows * 1_000_003 + inner * 1_009 + columns)
    dtype = np.dtype(char)
    a = (2 * rng.random((rows, inner if a_whole else inner + 1), dtype) - 1)[:, :inner]
    b = (2 * rng.random((columns, inner if b_whole else inner + 1), dtype) - 1)[:, :inner]
    return a, b


def _same_bits(direct: np.ndarray[Any, Any], swapped: np.ndarray[Any, Any]) -> bool:
    """Whether the two calls' results are the same bits (the kernels sum in the same order)."""
    return bool(np.array_equal(direct, swapped))


def _faster_swapped(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> bool:
    """Whether ``(b @ aᵀ)ᵀ`` (made C-ordered) takes at most ``FASTER`` of ``a @ bᵀ``'s time:
    the best of five alternating runs of each."""
    best = [float("inf"), float("inf")]
    for _ in range(5):
        start = time.perf_counter()
        np.matmul(a, b.T)
        middle = time.perf_counter()
        np.ascontiguousarray(np.matmul(b, a.T).T)
        end = time.perf_counter()
        best = [min(best[0], middle - start), min(best[1], end - middle)]
    return best[1] <= FASTER * best[0]
