"""Fused recurrences for the NumPy backend (issue #25), registered in ``numba_kernels``.

Each replaces the reference loop of ``shapegrad.ops.recurrent`` (which stays the truth; the
tests compare the two) for one layer-direction: the ``h @ W_hhᵀ`` product of each step goes
to BLAS with a preallocated ``out`` (and ``W_hhᵀ`` copied contiguous once), and everything
element-wise in a step is one numba call (the bias, every gate, the cell and ``h``). The
float32 ``tanh`` is a vectorisable rational approximation (a few ulp, exactly ±1 where it
saturates, NaN kept), with ``σ(v) = ½ + ½·tanh(v/2)``; float64's is vectorisable too, within
8 ulp of libm's. The forward returns None (the reference runs) for other dtypes. The saved
values are the reference's, so either backward follows either forward.

- ``lstm_sequence(xproj, w_hh, b_hh, (h0, c0), reverse) -> (result, gates)`` and
  ``lstm_sequence_backward(g, result, gates, w_hh, h0, c0, reverse)``;
- ``rnn_tanh_sequence`` / ``rnn_relu_sequence`` and their ``_backward``;
- ``gru_sequence`` and ``gru_sequence_backward``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["builders"]


# tanh(x) ≈ x·P(x²)/Q(x²) for float32: the rational approximation of Eigen's
# generic_fast_tanh_float (within 6 ulp of the exact tanh, measured over every 7th float32
# up to 10), exactly ±1 from its clamp on (where the exact tanh is within 5 ulp of it; the
# polynomials with fused multiply-adds give 1 - 1 ulp there, and σ(±∞) = 0 or 1 exactly
# is what keeps 0·∞ a NaN as in the reference), x itself below TINY. NumPy's tanh is a
# separate pass over memory, and numba's scalar tanh is a library call that keeps the loop
# from being vectorised; this is a few multiply-adds, a division and selects, in the same
# pass as the rest. Typed float32, so that nothing in a float32 loop promotes to float64.
A1, A3, A5, A7, A9, A11, A13 = (
    np.float32(c)
    for c in (
        4.89352455891786e-03,
        6.37261928875436e-04,
        1.48572235717979e-05,
        5.12229709037114e-08,
        -8.60467152213735e-11,
        2.00018790482477e-13,
        -2.76076847742355e-16,
    )
)
B0, B2, B4, B6 = (
    np.float32(c) for c in (4.89352518554385e-03, 2.26843463243900e-03, 1.18534705686654e-04, 1.19825839466702e-06)
)
CLAMP, TINY = np.float32(7.90531110763549805), np.float32(0.0004)
ZERO, HALF, ONE = np.float32(0.0), np.float32(0.5), np.float32(1.0)


def _tanh_float32(x: Any) -> Any:
    u = CLAMP if x > CLAMP else x  # clamped so that x² cannot overflow; a NaN stays NaN
    u = -CLAMP if u < -CLAMP else u
    u2 = u * u
    p = ((((((A13 * u2 + A11) * u2 + A9) * u2 + A7) * u2 + A5) * u2 + A3) * u2 + A1) * u
    q = ((B6 * u2 + B4) * u2 + B2) * u2 + B0
    t = x if abs(x) < TINY else p / q
    t = ONE if x >= CLAMP else t  # comparisons false for a NaN: it stays
    return -ONE if x <= -CLAMP else t


# tanh for float64 (within 8 ulp of libm's over [-25, 25]): the Taylor series of tanh(x/2⁸) to
# x¹³, then tanh(2y) = 2·tanh(y)/(1 + tanh²(y)) eight times (each step keeps the relative error,
# adding a rounding). Vectorisable, unlike numba's scalar tanh (a library call per element,
# which made the float64 LSTM 2.5× slower than NumPy's vectorised tanh passes).
T1, T2, T3, T4, T5, T6 = (-1 / 3, 2 / 15, -17 / 315, 62 / 2835, -1382 / 155925, 21844 / 6081075)


def _tanh_float64(x: Any) -> Any:
    y = x * 0.00390625  # x / 2⁸, exactly
    y2 = y * y
    t = y + y * y2 * (T1 + y2 * (T2 + y2 * (T3 + y2 * (T4 + y2 * (T5 + y2 * T6)))))
    for _ in range(8):
        t = (t + t) / (1.0 + t * t)
    t = x if abs(x) < 1e-8 else t  # tanh(x) rounds to x there; x/2⁸ of a subnormal would not
    t = 1.0 if x > 20.0 else t  # tanh rounds to ±1 from 19.1 on; NaN compares false and stays
    return -1.0 if x < -20.0 else t


def _tanh(x: Any) -> Any:
    """tanh in the kernels, numba's implementation chosen by the argument's dtype."""
    return np.tanh(x)


_registered = False


def _register() -> None:
    # _tanh's numba implementation is chosen by the argument's type, so one kernel source
    # compiles to the float32 loop and the float64 one.
    global _registered
    if _registered:
        return
    import importlib

    extending = importlib.import_module("numba.extending")
    types = importlib.import_module("numba.core.types")
    fast32, fast64 = extending.register_jitable(_tanh_float32), extending.register_jitable(_tanh_float64)

    # The signatures as _tanh's, annotations included (numba compares them).
    def tanh32(x: Any) -> Any:
        return fast32(x)

    def tanh64(x: Any) -> Any:
        return fast64(x)

    @extending.overload(_tanh)
    def _tanh_overload(x: Any) -> Any:  # registered by the decorator
        return tanh32 if x == types.float32 else tanh64

    _registered = True


def _gate_scales(n: int, blocks: str, dtype: Any) -> tuple[Any, Any]:
    # σ(v) = ½ + ½·tanh(v/2) and tanh(v) = 0 + 1·tanh(1·v): one formula, off + s·tanh(s·v),
    # for every column of the gate blocks ("s" a sigmoid block, "t" a tanh block), so the
    # pass over a row has no branch and one tanh per element.
    scale = np.concatenate([np.full(n, 0.5 if k == "s" else 1.0, dtype=dtype) for k in blocks])
    return scale, np.where(scale == 1.0, 0.0, 0.5).astype(dtype)


def _lstm_step(gates: Any, x: Any, b: Any, scale: Any, off: Any, c_prev: Any, c: Any, h: Any) -> None:
    # gates = h_prev·W_hhᵀ on entry, the activations i, f, g, o after. Each loop writes one
    # or two arrays: LLVM vectorises a loop only when it can check at run time that the
    # arrays it writes do not overlap those it reads, and gives up beyond a few such pairs.
    rows, width = gates.shape
    n = width // 4
    for r in range(rows):
        gr, xr = gates[r], x[r]
        for j in range(width):
            gr[j] = off[j] + scale[j] * _tanh(scale[j] * (gr[j] + xr[j] + b[j]))
    for r in range(rows):
        gr, cp, cr, hr = gates[r], c_prev[r], c[r], h[r]
        for j in range(n):
            v = gr[n + j] * cp[j] + gr[j] * gr[2 * n + j]
            cr[j] = v
            hr[j] = gr[3 * n + j] * _tanh(v)


def _lstm_grad_step(gates: Any, c: Any, c_prev: Any, dh: Any, gh: Any, dc: Any, gc: Any, dpre: Any, tc: Any) -> None:
    # dh, dc: the recurrent gradients on entry (dh = dpre·W_hh of the later step), gh, gc the
    # result's; on exit dh is the h gradient of this step (overwritten by the next product)
    # and dc the gradient of c_prev. One array written per loop, as in _lstm_step, and each
    # gate block of dpre through its own view: written at offsets of one array, the blocks
    # are a dependence LLVM cannot rule out (measured 1.6× slower).
    rows, n = c.shape
    for r in range(rows):
        gr, cr, cp, dhr, dcr, tr, dp = gates[r], c[r], c_prev[r], dh[r], dc[r], tc[r], dpre[r]
        ghr, gcr = gh[r], gc[r]
        gi, gf, gg, go = gr[:n], gr[n : 2 * n], gr[2 * n : 3 * n], gr[3 * n :]
        di, df, dg, do = dp[:n], dp[n : 2 * n], dp[2 * n : 3 * n], dp[3 * n :]
        for j in range(n):
            tr[j] = _tanh(cr[j])
        for j in range(n):
            dhr[j] = dhr[j] + ghr[j]
        for j in range(n):
            dcr[j] = dcr[j] + gcr[j] + dhr[j] * go[j] * (ONE - tr[j] * tr[j])
        for j in range(n):
            di[j] = dcr[j] * gg[j] * gi[j] * (ONE - gi[j])
        for j in range(n):
            df[j] = dcr[j] * cp[j] * gf[j] * (ONE - gf[j])
        for j in range(n):
            dg[j] = dcr[j] * gi[j] * (ONE - gg[j] * gg[j])
        for j in range(n):
            do[j] = dhr[j] * tr[j] * go[j] * (ONE - go[j])
        for j in range(n):
            dcr[j] = dcr[j] * gf[j]


def _rnn_step(out: Any, x: Any, b: Any, relu: bool) -> None:
    # out = h_prev·W_hhᵀ on entry, h after.
    rows, width = out.shape
    for r in range(rows):
        o, xr = out[r], x[r]
        for j in range(width):
            v = o[j] + xr[j] + b[j]
            o[j] = (v if v > ZERO or v != v else ZERO) if relu else _tanh(v)  # NaN stays, as max(v, 0)


def _rnn_grad_step(h: Any, dh: Any, gh: Any, relu: bool, dpre: Any) -> None:
    rows, n = h.shape
    for r in range(rows):
        hr, dhr, ghr, dp = h[r], dh[r], gh[r], dpre[r]
        for j in range(n):
            d = dhr[j] + ghr[j]
            v = hr[j]
            dp[j] = (d if v > ZERO else ZERO) if relu else d * (ONE - v * v)  # a select, as the reference


def _gru_step(hh: Any, x: Any, b: Any, h_prev: Any, gates: Any, h: Any) -> None:
    # hh = h_prev·W_hhᵀ; gates get r, z, the candidate n and W_hn h + b_hn (the reference's
    # saved values). Each loop writes one array, through its own view of the gate blocks
    # (one view with offsets would be one array read and written at a distance LLVM cannot
    # see, which keeps it from vectorising; see _lstm_step).
    rows, width = hh.shape
    n = width // 3
    for r in range(rows):
        hr, xr, gr = hh[r], x[r], gates[r]
        rz, cand, hn = gr[: 2 * n], gr[2 * n : 3 * n], gr[3 * n :]
        for j in range(2 * n):
            rz[j] = HALF + HALF * _tanh(HALF * (hr[j] + xr[j] + b[j]))
        for j in range(n):
            hn[j] = hr[2 * n + j] + b[2 * n + j]
        for j in range(n):
            cand[j] = _tanh(xr[2 * n + j] + rz[j] * hn[j])
        hp, out = h_prev[r], h[r]
        for j in range(n):
            z = rz[n + j]
            out[j] = (ONE - z) * cand[j] + z * hp[j]


def _gru_grad_step(gates: Any, h_prev: Any, dh: Any, rec: Any, gh: Any, dx: Any, dhh: Any) -> None:
    # dh: the part of the recurrent gradient that does not go through W_hh (dh·z of the later
    # step), rec the part that does (dhh·W_hh); on exit dh is this step's dh·z. One block
    # written per loop, through its own view (see _lstm_grad_step).
    rows, n = h_prev.shape
    for r in range(rows):
        gr, hp, dhr, rr, ghr = gates[r], h_prev[r], dh[r], rec[r], gh[r]
        gg, gz, gc, gn = gr[:n], gr[n : 2 * n], gr[2 * n : 3 * n], gr[3 * n :]
        dr, dz, dn = dx[r, :n], dx[r, n : 2 * n], dx[r, 2 * n :]
        hr_, hz, hn_ = dhh[r, :n], dhh[r, n : 2 * n], dhh[r, 2 * n :]
        for j in range(n):
            dhr[j] = dhr[j] + rr[j] + ghr[j]
        for j in range(n):
            dn[j] = dhr[j] * (ONE - gz[j]) * (ONE - gc[j] * gc[j])
        for j in range(n):
            dr[j] = dn[j] * gn[j] * gg[j] * (ONE - gg[j])
        for j in range(n):
            dz[j] = dhr[j] * (hp[j] - gc[j]) * gz[j] * (ONE - gz[j])
        for j in range(n):
            hr_[j] = dr[j]
        for j in range(n):
            hz[j] = dz[j]
        for j in range(n):
            hn_[j] = dn[j] * gg[j]
        for j in range(n):
            dhr[j] = dhr[j] * gz[j]


def _order(steps: int, reverse: bool) -> range:
    return range(steps - 1, -1, -1) if reverse else range(steps)


def _takes(*arrays: Any) -> bool:
    dtype = arrays[0].dtype
    return dtype in (np.float32, np.float64) and all(a.dtype == dtype for a in arrays)


def _previous(result: Any, h0: Any, t: int, steps: int, reverse: bool, k: int = 0) -> Any:
    p = t + 1 if reverse else t - 1
    return h0 if p in (-1, steps) else result[k, p]


def _weight_grads(dhh: Any, result: Any, h0: Any, reverse: bool) -> tuple[Any, Any]:
    # Σ_t dhh[t]ᵀ·h_prev[t] with h_prev = (h0, hs[:-1]) (reversed: (hs[1:], h0)): two
    # products over the contiguous runs instead of concatenating the shifted sequence, each
    # as h_prevᵀ·dhh (OpenBLAS is ~1.5× faster for it than for dhhᵀ·h_prev here), transposed once.
    hs = result[0]
    width, hidden = dhh.shape[-1], hs.shape[-1]
    first, rest = (slice(-1, None), slice(None, -1)) if reverse else (slice(0, 1), slice(1, None))
    shifted = hs[1:] if reverse else hs[:-1]
    dw_t = np.matmul(h0.T, dhh[first].reshape(-1, width))
    if len(hs) > 1:
        dw_t += np.matmul(shifted.reshape(-1, hidden).T, dhh[rest].reshape(-1, width))
    return np.ascontiguousarray(dw_t.T), dhh.reshape(-1, width).sum(axis=0)


def builders(jit: Callable[..., Callable[..., Any]], flags: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    """The kernels' builders by name, compiled with ``jit(fn, **flags)`` on first use."""

    def lstm() -> Callable[..., Any]:
        _register()
        step = jit(_lstm_step, **flags)

        def lstm_sequence(xproj: Any, w_hh: Any, b_hh: Any, states: Any, reverse: bool) -> Any:
            h, c = states
            if not _takes(xproj, w_hh, b_hh, h, c):
                return None
            steps, batch, width = xproj.shape
            n = width // 4
            result = np.empty((2, steps, batch, n), dtype=xproj.dtype)
            gates = np.empty(xproj.shape, dtype=xproj.dtype)
            # W_hhᵀ contiguous: OpenBLAS multiplies by it ~1.4× faster than by the transposed view.
            w_t = np.ascontiguousarray(w_hh.T)
            scale, off = _gate_scales(n, "ssts", xproj.dtype)
            for t in _order(steps, reverse):
                np.matmul(h, w_t, out=gates[t])
                h, c_prev, c = result[0, t], c, result[1, t]
                step(gates[t], xproj[t], b_hh, scale, off, c_prev, c, h)
            return result, gates

        return lstm_sequence

    def lstm_backward() -> Callable[..., Any]:
        _register()
        grad_step = jit(_lstm_grad_step, **flags)

        def lstm_sequence_backward(g: Any, result: Any, gates: Any, w_hh: Any, h0: Any, c0: Any, reverse: Any) -> Any:
            reverse = bool(reverse)
            g = np.ascontiguousarray(g, dtype=result.dtype)
            steps = result.shape[1]
            dpre = np.empty(gates.shape, dtype=gates.dtype)
            dh, dc, tc = np.zeros_like(h0), np.zeros_like(c0), np.empty_like(h0)
            for t in reversed(_order(steps, reverse)):
                c_prev = _previous(result, c0, t, steps, reverse, 1)
                grad_step(gates[t], result[1, t], c_prev, dh, g[0, t], dc, g[1, t], dpre[t], tc)
                np.matmul(dpre[t], w_hh, out=dh)
            dw, db = _weight_grads(dpre, result, h0, reverse)
            return dpre, dw, db, dh, dc

        return lstm_sequence_backward

    def rnn(relu: bool) -> Callable[[], Callable[..., Any]]:
        def build() -> Callable[..., Any]:
            _register()
            step = jit(_rnn_step, **flags)

            def rnn_sequence(xproj: Any, w_hh: Any, b_hh: Any, states: Any, reverse: bool) -> Any:
                (h,) = states
                if not _takes(xproj, w_hh, b_hh, h):
                    return None
                steps, batch, width = xproj.shape
                result = np.empty((1, steps, batch, width), dtype=xproj.dtype)
                w_t = np.ascontiguousarray(w_hh.T)
                for t in _order(steps, reverse):
                    h = np.matmul(h, w_t, out=result[0, t])
                    step(h, xproj[t], b_hh, relu)
                return result, None

            return rnn_sequence

        return build

    def rnn_backward(relu: bool) -> Callable[[], Callable[..., Any]]:
        def build() -> Callable[..., Any]:
            grad_step = jit(_rnn_grad_step, **flags)

            def rnn_sequence_backward(g: Any, result: Any, gates: Any, w_hh: Any, h0: Any, reverse: Any) -> Any:
                reverse = bool(reverse)
                g = np.ascontiguousarray(g, dtype=result.dtype)
                steps = result.shape[1]
                dpre = np.empty(result.shape[1:], dtype=result.dtype)
                dh = np.zeros_like(h0)
                for t in reversed(_order(steps, reverse)):
                    grad_step(result[0, t], dh, g[0, t], relu, dpre[t])
                    np.matmul(dpre[t], w_hh, out=dh)
                dw, db = _weight_grads(dpre, result, h0, reverse)
                return dpre, dw, db, dh

            return rnn_sequence_backward

        return build

    def gru() -> Callable[..., Any]:
        _register()
        step = jit(_gru_step, **flags)

        def gru_sequence(xproj: Any, w_hh: Any, b_hh: Any, states: Any, reverse: bool) -> Any:
            (h,) = states
            if not _takes(xproj, w_hh, b_hh, h):
                return None
            steps, batch, width = xproj.shape
            n = width // 3
            result = np.empty((1, steps, batch, n), dtype=xproj.dtype)
            gates = np.empty((steps, batch, 4 * n), dtype=xproj.dtype)
            hh = np.empty((batch, width), dtype=xproj.dtype)
            w_t = np.ascontiguousarray(w_hh.T)
            for t in _order(steps, reverse):
                np.matmul(h, w_t, out=hh)
                h_prev, h = h, result[0, t]
                step(hh, xproj[t], b_hh, h_prev, gates[t], h)
            return result, gates

        return gru_sequence

    def gru_backward() -> Callable[..., Any]:
        _register()
        grad_step = jit(_gru_grad_step, **flags)

        def gru_sequence_backward(g: Any, result: Any, gates: Any, w_hh: Any, h0: Any, reverse: Any) -> Any:
            reverse = bool(reverse)
            g = np.ascontiguousarray(g, dtype=result.dtype)
            steps, batch, n = result.shape[1:]
            dx = np.empty((steps, batch, 3 * n), dtype=result.dtype)
            dhh = np.empty((steps, batch, 3 * n), dtype=result.dtype)
            dh, rec = np.zeros_like(h0), np.zeros_like(h0)
            for t in reversed(_order(steps, reverse)):
                h_prev = _previous(result, h0, t, steps, reverse)
                grad_step(gates[t], h_prev, dh, rec, g[0, t], dx[t], dhh[t])
                np.matmul(dhh[t], w_hh, out=rec)
            dw, db = _weight_grads(dhh, result, h0, reverse)
            return dx, dw, db, dh + rec

        return gru_sequence_backward

    return {
        "lstm_sequence": lstm,
        "lstm_sequence_backward": lstm_backward,
        "rnn_tanh_sequence": rnn(False),
        "rnn_tanh_sequence_backward": rnn_backward(False),
        "rnn_relu_sequence": rnn(True),
        "rnn_relu_sequence_backward": rnn_backward(True),
        "gru_sequence": gru,
        "gru_sequence_backward": gru_backward,
    }
