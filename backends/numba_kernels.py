"""Fused kernels for the NumPy backend, compiled with numba when it is installed (the
``fast`` extra; ``SHAPEGRAD_NUMBA=0`` turns them off). Each replaces a chain of NumPy
passes, every one allocating its result, with one vectorised numba ufunc or one loop (per
row, per window, per parameter); NumPy's own vectorised ``exp`` stays where a kernel needs
an exponential of every element. The ``xp`` math in ``shapegrad.ops`` stays the reference,
which ``tests/test_numba_kernels.py`` compares these kernels with.

- ``gelu_exact(x) -> (out, None, None)``: ``x·Φ(x)`` in one pass, with ``Φ`` from a
  rational approximation of erf (the one XLA and Eigen use for float32, absolute error
  < 5e-7; exactly ±1 beyond its clamp); nothing but ``x`` is kept for the backward pass.
- ``gelu_exact_backward(g, x, cdf, density) -> g·(Φ(x) + x·φ(x))`` in one pass from ``x``
  alone, ``φ``'s ``exp(-x²/2)`` as a float64 series squared ten times (relative error
  < 1e-7; numba's ``exp`` is a scalar library call that stops the loop from being
  vectorised, a polynomial is not).
- ``relu_backward(g, x) -> g where x > 0, else 0``: one pass instead of compare, convert
  and multiply.
- ``sigmoid(x) -> y``: the stable sigmoid's ``e = exp(-|x|)`` by NumPy, then
  ``1/(1+e)`` where x >= 0, else ``e/(1+e)``, in one pass instead of six (the reference's
  ``where`` alone costs three NumPy passes); bit for bit the reference's result.
- ``max_pool2d(x, kernel, stride, padding, out) -> (values, index)`` and
  ``max_pool2d_backward(g, index, padded_shape, kernel, stride, padding, out)`` (the
  reference rule's saved values, so either backward follows either forward): one pass over each
  window with the winner's position kept (the reference's running maximum: the first
  maximum wins, a NaN is the window's value and keeps the winner before it, padding counts
  as ``-inf``), and one scatter of the gradient to it alone (an infinite gradient reaches
  only the winner, as PyTorch's and the reference's selection); the reference takes a dozen
  strided passes each way. Any float dtype.
- ``adam(g, step_size, beta1, beta2, eps, inv_bias2_sqrt, p, m, v)``,
  ``sgd_momentum(g, lr, momentum, p, buf)``, ``sgd_nesterov(...)``: the optimizer updates
  in place, one pass over the parameter and its state (NumPy's in-place passes read and
  write every array ten times); float32 and float64, contiguous arrays of one dtype (the
  backend falls back to its NumPy passes otherwise).
- ``softmax(x, scale, mask) -> y`` over the last axis (``None`` for an input it does not
  take) and ``softmax_backward(g, y, axis, scale, mask)``: the scaling, the mask and the
  maximum in one pass, NumPy's vectorised ``exp`` in place, the sum and division in one
  more; the gradient ``scale · y · (g - Σ g·y)`` in one pass per row.
- ``scatter_add_rows(target, indices, values) -> bool``: ``target[indices] += values`` for
  a 1-D integer index into the first axis (an embedding's gradient), one row added at a
  time; NumPy's ``add.at`` handles one element at a time. Negative indices count from the
  end as in NumPy; an index out of range raises ``IndexError`` before anything is added.
  Returns False, having done nothing, for arguments it does not take.
- ``cross_entropy(logits, labels, smoothing) -> (logp, per_row)`` and
  ``cross_entropy_backward(g, logp, ids, smoothing, per_row, count)``: the log-softmax over
  the last axis (the row maximum in one pass, NumPy's ``exp``, then the log-sum and each
  row's loss in one more), and the gradient ``(softmax - target) · scale`` from NumPy's
  ``exp`` of the saved ``logp`` and one pass; an out-of-range label raises ``IndexError``.
- ``layer_norm(x, weight, bias, eps) -> (out, xhat, rstd)`` and ``layer_norm_backward(g,
  xhat, rstd, weight, need, affine)``: the row statistics, normalisation and affine map in
  one pass per row; the gradient's two row means, ``gx`` and the ``weight``/``bias``
  column sums in one pass.
- ``lstm_sequence``, ``gru_sequence``, ``rnn_tanh_sequence``, ``rnn_relu_sequence`` and
  their ``_backward``: one layer-direction of a recurrent layer over the whole sequence
  (``backends/numba_recurrent.py``); float32 and float64.
- ``im2col`` and ``col2im``: a convolution's window gathering and its adjoint, channels-last,
  and ``im2col_planes``, the gathering of a channels-first input a row per tap
  (``backends/numba_conv.py``); float32 and float64.

``loop(source, name)`` compiles a function from generated source: ``sg.compile``'s fused
element-wise chains (``shapegrad/_compile.py``), one loop each.
"""

from __future__ import annotations

import importlib
import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from . import numba_conv, numba_loops, numba_recurrent

__all__ = ["ERF_P", "ERF_Q", "available", "kernel", "loop"]

# erf(x) ≈ x·P(x²)/Q(x²) on [-4, 4] (±1 beyond, to float32 precision): the rational
# approximation XLA and Eigen use for float32 (absolute error < 5e-7). The NumPy backend's
# float32 erf evaluates the same coefficients in NumPy passes.
ERF_P = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
ERF_Q = (
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
# float32 constants, as numba reads module globals: the loops stay in single precision.
P0, P1, P2, P3, P4, P5, P6 = (np.float32(c) for c in ERF_P)
Q0, Q1, Q2, Q3, Q4 = (np.float32(c) for c in ERF_Q)
HALF, ROOT_HALF, LIMIT = np.float32(0.5), np.float32(1.0 / math.sqrt(2.0)), np.float32(4.0)
INV_SQRT_2PI = np.float32(_INV_SQRT_2PI)

_numba: Any = None
_built: dict[str, Callable[..., Any]] = {}


ENV_VAR = "SHAPEGRAD_NUMBA"


def available() -> bool:
    """Whether numba imports and is not turned off with ``SHAPEGRAD_NUMBA=0`` (checked
    once). Off, the NumPy backend runs the reference NumPy passes and the process does not
    pay numba's one-time memory (~110 MiB resident: numba itself and LLVM)."""
    global _numba
    if _numba is None:
        if os.environ.get(ENV_VAR, "1").strip().lower() in ("0", "false", "off", "no"):
            _numba = False
            return False
        try:
            _numba = importlib.import_module("numba")
        except ImportError:
            _numba = False
    return _numba is not False


# Compiled code is kept on disk between processes (numba's cache, next to this file or in
# the user's cache directory); where neither is writable (a read-only install without a
# home directory) the kernels are compiled per process instead.
_cache = True


def _jit(fn: Callable[..., Any], **flags: Any) -> Callable[..., Any]:
    return _numba.njit(cache=_cache, **flags)(fn)


# Element kernels may fuse multiply-adds and nothing more: full fastmath also assumes no
# NaN or infinity (an input that has one is then undefined) and allows approximate
# reciprocals, which some CPUs' vector lanes use and the scalar remainder does not, so a
# result depended on the array's length. Measured: no slower than full fastmath.
_ELEMENT_FLAGS = frozenset({"contract"})


def _ufunc(signature: str, fn: Callable[..., Any], fastmath: bool = True) -> Callable[..., Any]:
    # A numba ufunc: its element loop is vectorised (an explicit loop over several arrays is
    # not: numba cannot rule out aliasing); a fused multiply-add rounds once where the
    # reference rounds twice, so the kernels are tested against it to a tolerance, not bit
    # for bit; cache keeps the machine code between processes.
    # The NumPy ufunc itself, not numba's wrapper around it: the wrapper's Python-level
    # checks cost 0.6 µs a call (a sigmoid of 32×128 took 5.0 µs, now 4.2); its one
    # signature is compiled here, so the wrapper has nothing left to do.
    flags = set(_ELEMENT_FLAGS) if fastmath else False
    return _numba.vectorize([signature], fastmath=flags, cache=_cache)(fn).ufunc


def _gelu_cdf(v: Any) -> Any:
    w = v * ROOT_HALF
    u = min(max(w, -LIMIT), LIMIT)
    u2 = u * u
    p = ((((((P0 * u2 + P1) * u2 + P2) * u2 + P3) * u2 + P4) * u2 + P5) * u2 + P6) * u
    q = (((Q0 * u2 + Q1) * u2 + Q2) * u2 + Q3) * u2 + Q4
    # Beyond the clamp erf is exactly ±1, as the reference's p/q rounds to there: a fused
    # multiply-add or a division rounded differently (a CPU's vector lanes) gives 1 - 6e-8,
    # which x multiplies: gelu(-1e6) would be -0.03 instead of -0. A blend, not a select: with
    # a select LLVM left the backward kernel (this and the density) unvectorised, 10× slower.
    erf = p / q
    beyond = np.float32(abs(u) >= LIMIT)
    erf = erf + (np.float32(math.copysign(1.0, u)) - erf) * beyond
    return HALF + HALF * erf


# exp(y) = (e^(y/1024))^1024, e^(y/1024) from its Taylor series to r⁸ (|y/1024| < 0.73 for
# any y >= -745, where float64's exp underflows; the series' error < 1e-16 for |r| < 0.09,
# i.e. |x| < 13.6, beyond which the density is below float32's smallest value anyway).
E2, E3, E4, E5, E6, E7, E8 = (1.0 / math.factorial(k) for k in range(2, 9))


def _gaussian_density(v: Any) -> Any:
    y = max(-0.5 * np.float64(v) * np.float64(v), -745.0)
    r = y * 0.0009765625
    p = 1.0 + r * (1.0 + r * (E2 + r * (E3 + r * (E4 + r * (E5 + r * (E6 + r * (E7 + r * E8)))))))
    for _ in range(10):
        p = p * p
    return p


def _gelu_out(v: Any) -> Any:
    return v * _gelu_cdf(v)


def _gelu_grad(g: Any, x: Any) -> Any:
    return g * (_gelu_cdf(x) + x * np.float32(_gaussian_density(x) * _INV_SQRT_2PI))


_registered = False


def _register_helpers() -> None:
    # The element functions call these helpers: registered, numba compiles them in.
    global _registered
    if not _registered:
        extending = importlib.import_module("numba.extending")
        for helper in (_gelu_cdf, _gaussian_density, _winner_before_nan, _window_max, _max_of_four):
            extending.register_jitable(helper)
        _registered = True


def _gelu_exact() -> Callable[..., Any]:
    _register_helpers()
    out = _ufunc("float32(float32)", _gelu_out)

    def gelu_exact(x: Any) -> tuple[Any, None, None]:
        return out(x), None, None

    return gelu_exact


def _gelu_exact_backward() -> Callable[..., Any]:
    _register_helpers()
    grad = _ufunc("float32(float32, float32)", _gelu_grad)

    def gelu_exact_backward(g: Any, x: Any, cdf: Any = None, density: Any = None) -> Any:
        return grad(g, x)  # Φ and φ recomputed from x: one pass, nothing saved

    return gelu_exact_backward


def _relu_value(x: Any) -> Any:
    # np.maximum(x, 0.0) bit for bit: a NaN stays (its payload too), -0.0 and -inf give +0.0.
    # NumPy's maximum ran at a quarter of the speed of a copy (its NaN-propagating loop),
    # this at a copy's, measured on the CIFAR CNN's 4 MiB activation and an MLP's 128×256.
    return x if x > 0 else (x if x != x else np.float32(0.0))


def _relu() -> Callable[..., Any]:
    return _ufunc("float32(float32)", _relu_value, fastmath=False)  # no fastmath: NaN kept


def _relu_grad(g: Any, x: Any) -> Any:
    # A select, as PyTorch's threshold_backward: 0 where x <= 0 even for an infinite or NaN g
    # (g·0 would be NaN there).
    return g if x > 0 else np.float32(0.0)


def _relu_backward() -> Callable[..., Any]:
    # No fastmath: it lets LLVM assume no NaN, and a NaN x must take the x <= 0 branch.
    return _ufunc("float32(float32, float32)", _relu_grad, fastmath=False)


def _sigmoid_select(x: Any, e: Any) -> Any:
    # stable_sigmoid's select after its exp: 1/(1+e) where x >= 0, else e/(1+e), the sum made
    # once; float32 operations in the reference's order, so its result bit for bit.
    d = np.float32(1.0) + e
    return np.float32(1.0) / d if x >= 0 else e / d


def _sigmoid() -> Callable[..., Any]:
    # No fastmath: the sum and divisions round as NumPy's passes do, and a NaN x takes the
    # e/(1+e) branch, as np.where's false side.
    select = _ufunc("float32(float32, float32)", _sigmoid_select, fastmath=False)

    def sigmoid(x: Any) -> Any:
        return select(x, np.exp(-np.abs(x)))  # NumPy's vectorised exp, as the reference's

    return sigmoid


def _winner_before_nan(plane: Any, top: int, left: int, kh: int, kw: int) -> int:
    # A window with a NaN: the reference's running maximum becomes NaN there, and no later
    # cell is larger than it, so the winner is the first maximum of the cells before it.
    best = plane[top, left]
    winner = 0
    for di in range(kh):
        for dj in range(kw):
            v = plane[top + di, left + dj]
            if v != v:
                return winner
            if v > best:
                best, winner = v, di * kw + dj
    return winner


def _window_max(plane: Any, top: int, left: int, kh: int, kw: int) -> tuple[Any, int]:
    # One window of the (padded) input, in row-major order: the first strict maximum wins
    # (as the reference's running `window > result`); a window with a NaN gives NaN. Selects
    # and a flag rather than branches: which cell wins is data, and a mispredicted branch
    # per cell costs more than the rest of the loop (a NaN, rare, takes one).
    best = plane[top, left]
    winner = 0
    nan = False
    for di in range(kh):
        for dj in range(kw):
            v = plane[top + di, left + dj]
            larger = v > best
            nan |= v != v
            winner = di * kw + dj if larger else winner
            best = v if larger else best
    if nan:
        return np.nan, _winner_before_nan(plane, top, left, kh, kw)
    return best, winner


def _pool_windows(x: Any, kh: int, kw: int, sh: int, sw: int, values: Any, index: Any) -> None:
    batch, channels = x.shape[0], x.shape[1]
    out_h, out_w = values.shape[2], values.shape[3]
    for b in range(batch):
        for c in range(channels):
            plane = x[b, c]
            for i in range(out_h):
                for j in range(out_w):
                    values[b, c, i, j], index[b, c, i, j] = _window_max(plane, i * sh, j * sw, kh, kw)


def _pool_windows_last(x: Any, kh: int, kw: int, sh: int, sw: int, values: Any, index: Any) -> None:
    # Channels-last (B, H, W, C) arrays: each window's channels together, where the planes
    # of a (B, C, H, W) loop would be strided by C.
    batch, channels = x.shape[0], x.shape[3]
    out_h, out_w = values.shape[1], values.shape[2]
    for b in range(batch):
        image = x[b]
        for i in range(out_h):
            for j in range(out_w):
                best, winners = values[b, i, j], index[b, i, j]
                for c in range(channels):
                    best[c], winners[c] = _window_max(image[:, :, c], i * sh, j * sw, kh, kw)


def _pool_scatter(g: Any, index: Any, kw: int, sh: int, sw: int, ph: int, pw: int, grad: Any) -> None:
    # Any layout: the arrays come as (B, C, ·, ·) or as channels-last (B, ·, ·, C) views.
    batch, channels, height, width = grad.shape
    out_h, out_w = g.shape[2], g.shape[3]
    for b in range(batch):
        for c in range(channels):
            for i in range(out_h):
                for j in range(out_w):
                    k = index[b, c, i, j]
                    r = i * sh - ph + k // kw
                    s = j * sw - pw + k % kw
                    if 0 <= r < height and 0 <= s < width:
                        grad[b, c, r, s] += g[b, c, i, j]


def _max_of_four(p: Any, q: Any, r: Any, s: Any) -> tuple[Any, int]:
    # A 2×2 window unrolled (the general loop's run-time window sizes keep LLVM from it):
    # the same first-maximum and NaN rules, the winner's freeze at a NaN as flags
    # (unrolled, they cost nothing measurable).
    best, winner = p, 0
    nan = p != p
    larger = (q > best) & (not nan)
    winner, best = (1, q) if larger else (winner, best)
    nan |= q != q
    larger = (r > best) & (not nan)
    winner, best = (2, r) if larger else (winner, best)
    nan |= r != r
    larger = (s > best) & (not nan)
    winner, best = (3, s) if larger else (winner, best)
    nan |= s != s
    return (best if not nan else np.nan), winner


def _pool2x2_windows(x: Any, values: Any, index: Any) -> None:
    batch, channels = x.shape[0], x.shape[1]
    out_h, out_w = values.shape[2], values.shape[3]
    for b in range(batch):
        for c in range(channels):
            plane = x[b, c]
            for i in range(out_h):
                top, bottom = plane[2 * i], plane[2 * i + 1]
                best_row, index_row = values[b, c, i], index[b, c, i]
                for j in range(out_w):
                    best_row[j], index_row[j] = _max_of_four(
                        top[2 * j], top[2 * j + 1], bottom[2 * j], bottom[2 * j + 1]
                    )


def _pool2x2_windows_last(x: Any, values: Any, index: Any) -> None:
    # Channels-last: the four pixels' channel runs are contiguous, the inner loop over them.
    batch, channels = x.shape[0], x.shape[3]
    out_h, out_w = values.shape[1], values.shape[2]
    for b in range(batch):
        for i in range(out_h):
            top, bottom = x[b, 2 * i], x[b, 2 * i + 1]
            for j in range(out_w):
                p, q, r, s = top[2 * j], top[2 * j + 1], bottom[2 * j], bottom[2 * j + 1]
                best, winners = values[b, i, j], index[b, i, j]
                for c in range(channels):
                    best[c], winners[c] = _max_of_four(p[c], q[c], r[c], s[c])


def _pool2x2_scatter(g: Any, index: Any, grad: Any) -> None:
    # Windows do not overlap: each of a window's four cells is written once, the gradient at
    # its winner and zero elsewhere, so the input's gradient needs no zeroing pass first (the
    # rows and columns past the last window are zeroed by the caller).
    out_h, out_w = g.shape[2], g.shape[3]
    for b in range(g.shape[0]):
        for c in range(g.shape[1]):
            plane, g_plane, winners = grad[b, c], g[b, c], index[b, c]
            for i in range(out_h):
                top, bottom, source, won = plane[2 * i], plane[2 * i + 1], g_plane[i], winners[i]
                for j in range(out_w):
                    k, v = won[j], source[j]
                    top[2 * j] = v if k == 0 else 0
                    top[2 * j + 1] = v if k == 1 else 0
                    bottom[2 * j] = v if k == 2 else 0
                    bottom[2 * j + 1] = v if k == 3 else 0


def _pool2x2_scatter_last(g: Any, index: Any, grad: Any) -> None:
    # Channels-last (B, ·, ·, C) views of the same arrays; each window's four channel runs
    # written whole, as above.
    out_h, out_w, channels = g.shape[1], g.shape[2], g.shape[3]
    for b in range(g.shape[0]):
        for i in range(out_h):
            for j in range(out_w):
                source, winners = g[b, i, j], index[b, i, j]
                for k in range(4):
                    cell = grad[b, 2 * i + (k >> 1), 2 * j + (k & 1)]
                    for c in range(channels):
                        cell[c] = source[c] if winners[c] == k else 0


def _channels_last(a: Any) -> bool:
    """Whether a ``(B, C, H, W)`` array lies in memory as ``(B, H, W, C)``, as a convolution's
    result does (``shapegrad.ops.conv.conv2d``): the pooling loops then run over its
    channels-last view."""
    return a.shape[1] > 1 and a.transpose(0, 2, 3, 1).flags.c_contiguous


Pair = tuple[int, int]
_TWO_BY_TWO = ((2, 2), (2, 2), (0, 0))  # kernel, stride, padding


def _max_pool2d() -> Callable[..., Any]:
    _register_helpers()
    windows, two_by_two = _jit(_pool_windows), _jit(_pool2x2_windows)
    windows_last, two_by_two_last = _jit(_pool_windows_last), _jit(_pool2x2_windows_last)

    def max_pool2d(x: Any, kernel: Pair, stride: Pair, padding: Pair, out: Pair) -> tuple[Any, Any]:
        b, c, h, w = x.shape
        last = _channels_last(x)
        # The results in the input's layout (a convolution's channels-last stays so).
        shape = (b, *out, c) if last else (b, c, *out)
        code = np.int8 if kernel[0] * kernel[1] < 128 else np.int32
        values, index = np.empty(shape, dtype=x.dtype), np.empty(shape, dtype=code)
        if (kernel, stride, padding) == _TWO_BY_TWO:
            if last:
                two_by_two_last(x.transpose(0, 2, 3, 1), values, index)
            else:
                two_by_two(x, values, index)
        else:
            if last:
                x = x.transpose(0, 2, 3, 1)
            if padding != (0, 0):  # padding counts as -inf: a copy, so the loop has no bounds test
                rows, cols = (1, 2) if last else (2, 3)
                full_shape = list(x.shape)
                full_shape[rows] += 2 * padding[0]
                full_shape[cols] += 2 * padding[1]
                full = np.full(full_shape, -np.inf, dtype=x.dtype)
                inside = [slice(None)] * 4
                inside[rows], inside[cols] = slice(padding[0], padding[0] + h), slice(padding[1], padding[1] + w)
                full[tuple(inside)] = x
                x = full
            (windows_last if last else windows)(x, *kernel, *stride, values, index)
        if last:
            return values.transpose(0, 3, 1, 2), index.transpose(0, 3, 1, 2)
        return values, index

    return max_pool2d


def _max_pool2d_backward() -> Callable[..., Any]:
    scatter = _jit(_pool_scatter)
    two_by_two, two_by_two_last = _jit(_pool2x2_scatter), _jit(_pool2x2_scatter_last)

    def max_pool2d_backward(
        g: Any, index: Any, padded: tuple[int, ...], kernel: Pair, stride: Pair, padding: Pair, out: Pair
    ) -> Any:
        # The reference rule's saved values: `padded` is the input's shape with the padding.
        b, c = g.shape[0], g.shape[1]
        size = (padded[2] - 2 * padding[0], padded[3] - 2 * padding[1])
        last = _channels_last(index)  # the forward's input was channels-last: so is its gradient
        # The 2×2 loops write every cell their windows cover (zero or the gradient): only
        # what lies past the last window (an odd height or width) is zeroed here. Zeroing
        # all first and storing the winners took 3× as long, measured at the CIFAR CNN's
        # three poolings (channels-last, 32×32×32 to 8×8×64, batch 32).
        two = (kernel, stride, padding) == _TWO_BY_TWO
        make = np.empty if two else np.zeros
        grad = make((b, *size, c), dtype=g.dtype).transpose(0, 3, 1, 2) if last else make((b, c, *size), dtype=g.dtype)
        if not two:
            scatter(g, index, kernel[1], *stride, *padding, grad)
            return grad
        grad[:, :, 2 * out[0] :, :] = 0
        grad[:, :, :, 2 * out[1] :] = 0
        if last:
            views = (a.transpose(0, 2, 3, 1) for a in (g, index, grad))
            two_by_two_last(*views)
        else:
            two_by_two(g, index, grad)
        return grad

    return max_pool2d_backward


# Optimizer loops: `contract` lets LLVM fuse multiply-adds; no other fast-math freedom, so a
# NaN or an infinity in a gradient reaches the parameter as it does in the reference math.
# error_model="numpy": a division by zero gives inf instead of a Python exception check
# per element, which would stop the loop from being vectorised.
_LOOP_FLAGS: dict[str, Any] = {"fastmath": {"contract"}, "error_model": "numpy"}


def _adam_loop(
    g: Any, step: Any, b1: Any, b2: Any, eps: Any, ib2: Any, c1: Any, c2: Any, p: Any, m: Any, v: Any
) -> None:
    for i in range(p.size):
        gi = g[i]
        mi = b1 * m[i] + c1 * gi
        vi = b2 * v[i] + c2 * gi * gi
        m[i] = mi
        v[i] = vi
        p[i] -= step * mi / (np.sqrt(vi) * ib2 + eps)


def _sgd_momentum_loop(g: Any, lr: Any, momentum: Any, p: Any, buf: Any) -> None:
    for i in range(p.size):
        bi = momentum * buf[i] + g[i]
        buf[i] = bi
        p[i] -= lr * bi


def _sgd_nesterov_loop(g: Any, lr: Any, momentum: Any, p: Any, buf: Any) -> None:
    for i in range(p.size):
        gi = g[i]
        bi = momentum * buf[i] + gi
        buf[i] = bi
        p[i] -= lr * (gi + momentum * bi)


def _flat(arrays: tuple[Any, ...]) -> tuple[Any, ...] | None:
    # The loops index one flat range: every array C-contiguous, of one dtype and size.
    first = arrays[0]
    for a in arrays:
        if not a.flags.c_contiguous or a.dtype != first.dtype or a.size != first.size:
            return None
    return tuple(a.reshape(-1) for a in arrays)


def _adam() -> Callable[..., Any]:
    loop = _jit(_adam_loop, **_LOOP_FLAGS)

    def adam(
        g: Any, step_size: Any, beta1: Any, beta2: Any, eps: Any, inv_bias2_sqrt: Any, p: Any, m: Any, v: Any
    ) -> bool:
        flat = _flat((g, p, m, v))
        if flat is None:
            return False
        one = p.dtype.type(1)  # 1 - β in the parameters' precision: no float64 in the loop
        fg, fp, fm, fv = flat
        loop(fg, step_size, beta1, beta2, eps, inv_bias2_sqrt, one - beta1, one - beta2, fp, fm, fv)
        return True

    return adam


def _sgd(loop_fn: Callable[..., None]) -> Callable[[], Callable[..., Any]]:
    def build() -> Callable[..., Any]:
        loop = _jit(loop_fn, **_LOOP_FLAGS)

        def sgd(g: Any, lr: Any, momentum: Any, p: Any, buf: Any) -> None:
            flat = _flat((g, p, buf))
            if flat is not None:
                loop(*flat[:1], lr, momentum, *flat[1:])
                return
            buf *= momentum  # strided or mixed arrays: the same update as NumPy passes
            buf += g
            p -= lr * (g + momentum * buf if loop_fn is _sgd_nesterov_loop else buf)

        return sgd

    return build


def _scatter_rows_loop(target: Any, indices: Any, values: Any) -> None:
    rows = target.shape[0]
    for i in range(indices.shape[0]):  # checked first: a bad index leaves target unchanged
        k = indices[i]
        if k < -rows or k >= rows:
            raise IndexError("scatter_add: an index is out of range")
    for i in range(indices.shape[0]):
        k = indices[i]
        row = target[k + rows if k < 0 else k]
        source = values[i]
        for j in range(row.shape[0]):
            row[j] += source[j]


def _scatter_add_rows() -> Callable[..., Any]:
    loop = _jit(_scatter_rows_loop)

    def scatter_add_rows(target: Any, indices: Any, values: Any) -> bool:
        if (
            type(indices) is not np.ndarray  # a tuple of index arrays, a list: add.at's
            or indices.ndim != 1
            or indices.dtype.kind not in "iu"
            or target.ndim < 2
            or not target.flags.c_contiguous
            or values.dtype != target.dtype
            or tuple(values.shape) != (indices.shape[0], *target.shape[1:])
        ):
            return False
        width = math.prod(target.shape[1:])
        loop(target.reshape(target.shape[0], width), indices, np.ascontiguousarray(values).reshape(-1, width))
        return True

    return scatter_add_rows


# Row kernels (softmax, layer norm): `reassoc` as well, so that a row's sum is vectorised;
# it reorders the additions of one row, within float32 rounding of the reference.
_ROW_FLAGS: dict[str, Any] = {"fastmath": {"contract", "reassoc"}, "error_model": "numpy"}
MASKED32 = np.float32(-1e9)  # shapegrad.ops.reductions.MASKED: weight 0, no NaN in a masked row


def _softmax_shift_rows(z: Any, scale: Any, mask: Any, has_mask: bool, y: Any) -> None:
    # y ← scale·z, masked to -1e9, minus the row maximum (exp follows, in place, in NumPy).
    rows, n = z.shape
    mask_rows = mask.shape[0]
    minus_inf = np.float32(-np.inf)
    for r in range(rows):
        allowed = mask[r % mask_rows]
        peak = minus_inf
        for j in range(n):
            v = z[r, j] * scale
            if has_mask:
                v = v if allowed[j] else MASKED32
            y[r, j] = v
            peak = max(peak, v)
        for j in range(n):
            y[r, j] -= peak


def _normalise_rows(y: Any) -> None:
    rows, n = y.shape
    for r in range(rows):
        total = np.float32(0)
        for j in range(n):
            total += y[r, j]
        for j in range(n):
            y[r, j] /= total


def _softmax_grad_rows(g: Any, y: Any, scale: Any, mask: Any, has_mask: bool, out: Any) -> None:
    rows, n = y.shape
    mask_rows = mask.shape[0]
    zero = np.float32(0)
    for r in range(rows):
        dot = zero
        for j in range(n):
            dot += g[r, j] * y[r, j]
        allowed = mask[r % mask_rows]
        for j in range(n):
            v = scale * y[r, j] * (g[r, j] - dot)
            if has_mask:
                v = v if allowed[j] else zero
            out[r, j] = v


_NO_MASK = np.ones((1, 1), dtype=np.bool_)


def _log_normalise_rows(y: Any, e: Any, ids: Any, smoothing: Any, per_row: Any) -> None:
    # y: shifted logits, made log-probabilities in place; e = exp(y).
    rows, n = y.shape
    inv_n = np.float32(1) / np.float32(n)
    for r in range(rows):
        k = ids[r]
        if k < 0 or k >= n:
            raise IndexError("cross_entropy: a label is out of range")
        total = np.float32(0)
        for j in range(n):
            total += e[r, j]
        log_total = np.log(total)
        mean = np.float32(0)
        for j in range(n):
            v = y[r, j] - log_total
            y[r, j] = v
            mean += v
        loss = -y[r, k]
        per_row[r] = (1 - smoothing) * loss - smoothing * mean * inv_n if smoothing else loss


def _cross_entropy_grad_rows(p: Any, ids: Any, smoothing: Any, scale: Any, per_row: bool) -> None:
    # p = exp(logp), made (p - target) · scale in place.
    rows, n = p.shape
    spread = smoothing / np.float32(n)
    hit = np.float32(1) - smoothing
    for r in range(rows):
        s = scale[r] if per_row else scale[0]
        for j in range(n):
            p[r, j] = (p[r, j] - spread) * s
        p[r, ids[r]] -= hit * s


def _mask_rows(mask: Any, shape: tuple[int, ...]) -> Any:
    """``mask`` as rows that repeat every ``len(result)`` rows of ``x``'s ``(rows, n)`` view:
    itself when it is a full-size suffix of ``shape`` (a causal ``(S, S)`` mask), else the
    broadcast made explicit (booleans, a quarter of the scores' bytes)."""
    if mask is None:
        return _NO_MASK
    core = mask.reshape(mask.shape[next((i for i, n in enumerate(mask.shape) if n != 1), mask.ndim) :])
    if core.ndim >= 1 and core.shape == shape[len(shape) - core.ndim :]:
        return np.ascontiguousarray(core).reshape(-1, shape[-1])
    return np.ascontiguousarray(np.broadcast_to(mask, shape)).reshape(-1, shape[-1])


def _softmax() -> Callable[..., Any]:
    shift = _jit(_softmax_shift_rows, **_ROW_FLAGS)
    normalise = _jit(_normalise_rows, **_ROW_FLAGS)

    def softmax(x: Any, scale: float, mask: Any) -> Any:
        if x.ndim == 0 or x.dtype != np.float32:
            return None
        n = x.shape[-1]
        z: Any = np.ascontiguousarray(x).reshape(-1, n)
        y: Any = np.empty(z.shape, dtype=np.float32)
        shift(z, np.float32(scale), _mask_rows(mask, x.shape), mask is not None, y)
        np.exp(y, out=y)  # NumPy's exp is vectorised; numba's is not
        normalise(y)
        return y.reshape(x.shape)

    return softmax


def _softmax_backward() -> Callable[..., Any]:
    grad_rows = _jit(_softmax_grad_rows, **_ROW_FLAGS)

    def softmax_backward(g: Any, y: Any, axis: Any, scale: Any = 1.0, mask: Any = None) -> Any:
        if int(axis) % max(y.ndim, 1) != y.ndim - 1 or y.dtype != np.float32 or g.dtype != np.float32:
            # Another axis: the reference formula (shapegrad.ops.reductions.softmax_backward).
            gy = g * y
            gz: Any = gy - y * np.sum(gy, axis=int(axis), keepdims=True)
            if mask is not None:
                gz = np.where(mask, gz, 0)
            return gz * scale if scale != 1.0 else gz
        n = y.shape[-1]
        out = np.empty(y.shape, dtype=np.float32)
        grad_rows(
            np.ascontiguousarray(g).reshape(-1, n),
            np.ascontiguousarray(y).reshape(-1, n),
            np.float32(scale),
            _mask_rows(mask, y.shape),
            mask is not None,
            out.reshape(-1, n),
        )
        return out

    return softmax_backward


def _cross_entropy() -> Callable[..., Any]:
    shift = _jit(_softmax_shift_rows, **_ROW_FLAGS)
    normalise = _jit(_log_normalise_rows, **_ROW_FLAGS)

    def cross_entropy(logits: Any, labels: Any, smoothing: float) -> tuple[Any, Any] | None:
        if logits.dtype != np.float32 or logits.ndim == 0 or logits.shape[-1] == 0:
            return None
        n = logits.shape[-1]
        z: Any = np.ascontiguousarray(logits).reshape(-1, n)
        logp: Any = np.empty(z.shape, dtype=np.float32)
        shift(z, np.float32(1), _NO_MASK, False, logp)
        exp = np.exp(logp)  # NumPy's exp is vectorised; numba's is not
        per_row: Any = np.empty(z.shape[0], dtype=np.float32)
        normalise(logp, exp, np.ascontiguousarray(labels).reshape(-1), np.float32(smoothing), per_row)
        return logp.reshape(logits.shape), per_row.reshape(logits.shape[:-1])

    return cross_entropy


def _cross_entropy_backward() -> Callable[..., Any]:
    rows = _jit(_cross_entropy_grad_rows, **_ROW_FLAGS)

    def cross_entropy_backward(
        g: Any, logp: Any, ids: Any, smoothing: Any, per_row: Any, count: Any
    ) -> tuple[Any, None]:
        n = logp.shape[-1]
        p: Any = np.exp(np.ascontiguousarray(logp).reshape(-1, n))
        flat_g = np.asarray(g, dtype=np.float32).reshape(-1)
        scale = flat_g if per_row else flat_g / np.float32(count)
        rows(
            p, np.ascontiguousarray(ids).reshape(-1), np.float32(smoothing), np.ascontiguousarray(scale), bool(per_row)
        )
        return p.reshape(logp.shape), None

    return cross_entropy_backward


def _layer_norm_rows(x: Any, weight: Any, bias: Any, eps: Any, out: Any, xhat: Any, rstd: Any) -> None:
    rows, n = x.shape
    inv_n = np.float32(1) / np.float32(n)
    for r in range(rows):
        total = np.float32(0)
        for j in range(n):
            total += x[r, j]
        mean = total * inv_n
        square = np.float32(0)
        for j in range(n):
            d = x[r, j] - mean
            square += d * d
        inv = np.float32(1) / np.sqrt(square * inv_n + eps)
        rstd[r] = inv
        for j in range(n):
            h = (x[r, j] - mean) * inv
            xhat[r, j] = h
            out[r, j] = h * weight[j] + bias[j]


def _layer_norm_grad_rows(g: Any, xhat: Any, rstd: Any, weight: Any, gx: Any, gw: Any, gb: Any) -> None:
    rows, n = g.shape
    inv_n = np.float32(1) / np.float32(n)
    for r in range(rows):
        mean_g = np.float32(0)
        mean_gx = np.float32(0)
        for j in range(n):
            s = g[r, j] * weight[j]
            gx[r, j] = s  # kept rounded: g·w - mean(g·w) fused into one multiply-add would not
            mean_g += s  # cancel (a row of one value, whose gradient is 0, gave 1e6·w·2⁻²⁴·rstd)
            mean_gx += s * xhat[r, j]
        mean_g *= inv_n
        mean_gx *= inv_n
        inv = rstd[r]
        for j in range(n):
            h = xhat[r, j]
            gx[r, j] = inv * (gx[r, j] - mean_g - h * mean_gx)
            gw[j] += g[r, j] * h
            gb[j] += g[r, j]


def _layer_norm() -> Callable[..., Any]:
    rows = _jit(_layer_norm_rows, **_ROW_FLAGS)

    def layer_norm(x: Any, weight: Any, bias: Any, eps: float) -> tuple[Any, Any, Any] | None:
        if x.dtype != np.float32 or x.ndim == 0:
            return None
        n = x.shape[-1]
        if weight is None:
            weight, bias = np.ones(n, dtype=np.float32), np.zeros(n, dtype=np.float32)
        if weight.dtype != np.float32 or bias.dtype != np.float32:
            return None
        flat: Any = np.ascontiguousarray(x).reshape(-1, n)
        out: Any = np.empty(flat.shape, dtype=np.float32)
        xhat: Any = np.empty(flat.shape, dtype=np.float32)
        rstd = np.empty(flat.shape[0], dtype=np.float32)
        rows(flat, weight, bias, np.float32(eps), out, xhat, rstd)
        stats = (*x.shape[:-1], 1)
        return out.reshape(x.shape), xhat.reshape(x.shape), rstd.reshape(stats)

    return layer_norm


def _layer_norm_backward() -> Callable[..., Any]:
    grad_rows = _jit(_layer_norm_grad_rows, **_ROW_FLAGS)

    def layer_norm_backward(g: Any, xhat: Any, rstd: Any, weight: Any, need: Any, affine: Any) -> Any:
        n = xhat.shape[-1]
        flat_g: Any = np.ascontiguousarray(g, dtype=np.float32).reshape(-1, n)
        w = np.ones(n, dtype=np.float32) if weight is None else np.ascontiguousarray(weight, dtype=np.float32)
        gx: Any = np.empty(flat_g.shape, dtype=np.float32)
        gw, gb = np.zeros(n, dtype=np.float32), np.zeros(n, dtype=np.float32)
        grad_rows(
            flat_g, np.ascontiguousarray(xhat).reshape(-1, n), np.ascontiguousarray(rstd).reshape(-1), w, gx, gw, gb
        )
        gx = gx.reshape(xhat.shape) if need[0] else None
        if not affine:
            return gx
        return gx, gw if need[1] else None, gb if need[2] else None

    return layer_norm_backward


# The recurrences (RNN, LSTM, GRU over a whole sequence), in their own module.
_recurrent_builders = numba_recurrent.builders(_jit, _LOOP_FLAGS)
# A convolution's window gathering and its adjoint, in their own module.
_conv_builders = numba_conv.builders(_jit, _LOOP_FLAGS)

_BUILDERS: dict[str, Callable[[], Callable[..., Any]]] = {
    "gelu_exact": _gelu_exact,
    "gelu_exact_backward": _gelu_exact_backward,
    "relu": _relu,
    "relu_backward": _relu_backward,
    "sigmoid": _sigmoid,
    "max_pool2d": _max_pool2d,
    "max_pool2d_backward": _max_pool2d_backward,
    "scatter_add_rows": _scatter_add_rows,
    "adam": _adam,
    "softmax": _softmax,
    "softmax_backward": _softmax_backward,
    "cross_entropy": _cross_entropy,
    "cross_entropy_backward": _cross_entropy_backward,
    "layer_norm": _layer_norm,
    "layer_norm_backward": _layer_norm_backward,
    "sgd_momentum": _sgd(_sgd_momentum_loop),
    "sgd_nesterov": _sgd(_sgd_nesterov_loop),
    **_recurrent_builders,
    **_conv_builders,
}
# Loops compiled per argument type (float32 and float64) rather than float32 ufuncs.
_ANY_FLOAT = {
    "scatter_add_rows",
    "max_pool2d",
    "max_pool2d_backward",
    "adam",
    "sgd_momentum",
    "sgd_nesterov",
    *_recurrent_builders,
    *_conv_builders,
}


def kernel(name: str, dtype: Any) -> Callable[..., Any] | None:
    """The compiled kernel ``name`` for ``dtype`` (float32 only, except the pooling and
    optimizer loops, which also take float64), or None without numba. ``adam`` returns
    False, having done nothing, for arrays it does not take (the backend then runs its
    NumPy passes)."""
    global _cache
    if name not in _BUILDERS or not available():
        return None
    dtype = np.dtype(dtype)
    if dtype != np.float32 and not (name in _ANY_FLOAT and dtype == np.float64):
        return None
    if name not in _built:
        try:
            _built[name] = _BUILDERS[name]()
        except RuntimeError as error:  # numba: "cannot cache function ...: no locator available"
            if not _cache or "cannot cache" not in str(error):
                raise
            _cache = False
            _built[name] = _BUILDERS[name]()
    return _built[name]


def loop(source: str, name: str) -> Callable[..., Any] | None:
    """The function ``name`` defined by ``source`` (generated Python over arrays, which may
    name ``np``), compiled with numba on its first call for each argument type and kept on
    disk (see :mod:`numba_loops`), or None without numba."""
    if not available():
        return None
    return numba_loops.loop(_numba, source, name)
