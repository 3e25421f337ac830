"""Fused recurrences for the NumPy backend (issue #25), registered in ``numba_kernels``.

Each replaces the reference loop of ``shapegrad.ops.recurrent`` (which stays the truth; the
tests compare the two) for one layer-direction: the ``h @ W_hhᵀ`` product of each step goes
to BLAS with a preallocated ``out``, and everything element-wise in a step is one numba pass
per gate block. The transcendental functions are NumPy's vectorised ``tanh`` over the whole
block (numba's scalar ``tanh``/``exp`` are library calls that stop the loop from being
vectorised), with ``σ(v) = ½ + ½·tanh(v/2)``. Float32 and float64; the forward returns None
(the reference runs) for anything else. The saved values are the reference's, so either
backward follows either forward.

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


def _lstm_pre_rows(pre: Any, x: Any, b: Any) -> None:
    # pre = h·W_hhᵀ on entry; the gates' arguments after (halved for the sigmoids, see above).
    rows, width = pre.shape
    n = width // 4
    for r in range(rows):
        for j in range(width):
            v = pre[r, j] + x[r, j] + b[j]
            pre[r, j] = v if 2 * n <= j < 3 * n else 0.5 * v


def _lstm_cell_rows(pre: Any, c_prev: Any, gates: Any, c: Any) -> None:
    rows, width = pre.shape
    n = width // 4
    for r in range(rows):
        for j in range(n):
            i = 0.5 + 0.5 * pre[r, j]
            f = 0.5 + 0.5 * pre[r, n + j]
            g = pre[r, 2 * n + j]
            o = 0.5 + 0.5 * pre[r, 3 * n + j]
            c[r, j] = f * c_prev[r, j] + i * g
            gates[r, j] = i
            gates[r, n + j] = f
            gates[r, 2 * n + j] = g
            gates[r, 3 * n + j] = o


def _lstm_grad_rows(gates: Any, tc: Any, c_prev: Any, dh: Any, gh: Any, dc: Any, gc: Any, dpre: Any) -> None:
    # dh: the recurrent gradient on entry (dpre·W_hh of the later step), gh/gc the result's.
    rows, n = tc.shape
    for r in range(rows):
        for j in range(n):
            i, f, g, o = gates[r, j], gates[r, n + j], gates[r, 2 * n + j], gates[r, 3 * n + j]
            t = tc[r, j]
            h_grad = dh[r, j] + gh[r, j]
            c_grad = dc[r, j] + gc[r, j] + h_grad * o * (1 - t * t)
            dpre[r, j] = c_grad * g * i * (1 - i)
            dpre[r, n + j] = c_grad * c_prev[r, j] * f * (1 - f)
            dpre[r, 2 * n + j] = c_grad * i * (1 - g * g)
            dpre[r, 3 * n + j] = h_grad * t * o * (1 - o)
            dc[r, j] = c_grad * f


def _rnn_pre_rows(pre: Any, x: Any, b: Any, relu: bool) -> None:
    rows, width = pre.shape
    for r in range(rows):
        for j in range(width):
            v = pre[r, j] + x[r, j] + b[j]
            pre[r, j] = v if not relu or v > 0 or v != v else 0.0  # NaN stays, as max(v, 0)


def _rnn_grad_rows(h: Any, dh: Any, gh: Any, relu: bool, dpre: Any) -> None:
    rows, n = h.shape
    for r in range(rows):
        for j in range(n):
            d = dh[r, j] + gh[r, j]
            v = h[r, j]
            dpre[r, j] = (d if v > 0 else 0.0) if relu else d * (1 - v * v)  # a select, as the reference


def _gru_pre_rows(hh: Any, x: Any, b: Any, pre: Any, hn: Any) -> None:
    # hh = h·W_hhᵀ; pre's r and z blocks get their halved arguments, hn = W_hn h + b_hn.
    rows, width = hh.shape
    n = width // 3
    for r in range(rows):
        for j in range(2 * n):
            pre[r, j] = 0.5 * (hh[r, j] + b[j] + x[r, j])
        for j in range(n):
            hn[r, j] = hh[r, 2 * n + j] + b[2 * n + j]


def _gru_candidate_rows(pre: Any, x: Any, hn: Any) -> None:
    rows, width = pre.shape
    n = width // 3
    for r in range(rows):
        for j in range(2 * n):
            pre[r, j] = 0.5 + 0.5 * pre[r, j]
        for j in range(n):
            pre[r, 2 * n + j] = x[r, 2 * n + j] + pre[r, j] * hn[r, j]


def _gru_cell_rows(pre: Any, hn: Any, h_prev: Any, gates: Any, h: Any) -> None:
    rows, width = pre.shape
    n = width // 3
    for r in range(rows):
        for j in range(n):
            z, cand = pre[r, n + j], pre[r, 2 * n + j]
            h[r, j] = (1 - z) * cand + z * h_prev[r, j]
            gates[r, j] = pre[r, j]
            gates[r, n + j] = z
            gates[r, 2 * n + j] = cand
            gates[r, 3 * n + j] = hn[r, j]


def _gru_grad_rows(gates: Any, h_prev: Any, dh: Any, gh: Any, dx: Any, dhh: Any) -> None:
    # dh: the recurrent gradient on entry; on exit, the part of h_prev's gradient that does
    # not go through W_hh (dh·z).
    rows, n = h_prev.shape
    for r in range(rows):
        for j in range(n):
            rr, z, cand, hn = gates[r, j], gates[r, n + j], gates[r, 2 * n + j], gates[r, 3 * n + j]
            d = dh[r, j] + gh[r, j]
            dcand = d * (1 - z) * (1 - cand * cand)
            dr = dcand * hn * rr * (1 - rr)
            dz = d * (h_prev[r, j] - cand) * z * (1 - z)
            dx[r, j] = dr
            dx[r, n + j] = dz
            dx[r, 2 * n + j] = dcand
            dhh[r, j] = dr
            dhh[r, n + j] = dz
            dhh[r, 2 * n + j] = dcand * rr
            dh[r, j] = d * z


def _order(steps: int, reverse: bool) -> range:
    return range(steps - 1, -1, -1) if reverse else range(steps)


def _takes(*arrays: Any) -> bool:
    dtype = arrays[0].dtype
    return dtype in (np.float32, np.float64) and all(a.dtype == dtype for a in arrays)


def _previous(result: Any, h0: Any, t: int, steps: int, reverse: bool, k: int = 0) -> Any:
    p = t + 1 if reverse else t - 1
    return h0 if p in (-1, steps) else result[k, p]


def _weight_grads(dhh: Any, result: Any, h0: Any, reverse: bool) -> tuple[Any, Any]:
    hs = result[0]
    first = h0[None]
    h_prev = np.concatenate([hs[1:], first] if reverse else [first, hs[:-1]], axis=0)
    rows = dhh.reshape(-1, dhh.shape[-1])
    return rows.T @ h_prev.reshape(-1, h_prev.shape[-1]), rows.sum(axis=0)


def builders(jit: Callable[..., Callable[..., Any]], flags: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    """The kernels' builders by name, compiled with ``jit(fn, **flags)`` on first use."""

    def lstm() -> Callable[..., Any]:
        pre_rows, cell_rows = jit(_lstm_pre_rows, **flags), jit(_lstm_cell_rows, **flags)

        def lstm_sequence(xproj: Any, w_hh: Any, b_hh: Any, states: Any, reverse: bool) -> Any:
            h0, c0 = states
            if not _takes(xproj, w_hh, b_hh, h0, c0):
                return None
            steps, batch, width = xproj.shape
            result = np.empty((2, steps, batch, width // 4), dtype=xproj.dtype)
            gates = np.empty(xproj.shape, dtype=xproj.dtype)
            pre = np.empty((batch, width), dtype=xproj.dtype)
            w_t = w_hh.T
            for t in _order(steps, reverse):
                np.matmul(_previous(result, h0, t, steps, reverse), w_t, out=pre)
                pre_rows(pre, xproj[t], b_hh)
                np.tanh(pre, out=pre)
                cell_rows(pre, _previous(result, c0, t, steps, reverse, 1), gates[t], result[1, t])
                np.multiply(gates[t, :, 3 * (width // 4) :], np.tanh(result[1, t]), out=result[0, t])
            return result, gates

        return lstm_sequence

    def lstm_backward() -> Callable[..., Any]:
        grad_rows = jit(_lstm_grad_rows, **flags)

        def lstm_sequence_backward(g: Any, result: Any, gates: Any, w_hh: Any, h0: Any, c0: Any, reverse: Any) -> Any:
            reverse = bool(reverse)
            g = np.ascontiguousarray(g, dtype=result.dtype)
            steps = result.shape[1]
            dpre = np.empty(gates.shape, dtype=gates.dtype)
            dh, dc = np.zeros_like(h0), np.zeros_like(c0)
            tc = np.empty_like(h0)
            for t in reversed(_order(steps, reverse)):
                np.tanh(result[1, t], out=tc)
                c_prev = _previous(result, c0, t, steps, reverse, 1)
                grad_rows(gates[t], tc, c_prev, dh, g[0, t], dc, g[1, t], dpre[t])
                np.matmul(dpre[t], w_hh, out=dh)
            dw, db = _weight_grads(dpre, result, h0, reverse)
            return dpre, dw, db, dh, dc

        return lstm_sequence_backward

    def rnn(relu: bool) -> Callable[[], Callable[..., Any]]:
        def build() -> Callable[..., Any]:
            pre_rows = jit(_rnn_pre_rows, **flags)

            def rnn_sequence(xproj: Any, w_hh: Any, b_hh: Any, states: Any, reverse: bool) -> Any:
                (h0,) = states
                if not _takes(xproj, w_hh, b_hh, h0):
                    return None
                steps, batch, width = xproj.shape
                result = np.empty((1, steps, batch, width), dtype=xproj.dtype)
                w_t = w_hh.T
                for t in _order(steps, reverse):
                    out = result[0, t]
                    np.matmul(_previous(result, h0, t, steps, reverse), w_t, out=out)
                    pre_rows(out, xproj[t], b_hh, relu)
                    if not relu:
                        np.tanh(out, out=out)
                return result, None

            return rnn_sequence

        return build

    def rnn_backward(relu: bool) -> Callable[[], Callable[..., Any]]:
        def build() -> Callable[..., Any]:
            grad_rows = jit(_rnn_grad_rows, **flags)

            def rnn_sequence_backward(g: Any, result: Any, gates: Any, w_hh: Any, h0: Any, reverse: Any) -> Any:
                reverse = bool(reverse)
                g = np.ascontiguousarray(g, dtype=result.dtype)
                steps = result.shape[1]
                dpre = np.empty(result.shape[1:], dtype=result.dtype)
                dh = np.zeros_like(h0)
                for t in reversed(_order(steps, reverse)):
                    grad_rows(result[0, t], dh, g[0, t], relu, dpre[t])
                    np.matmul(dpre[t], w_hh, out=dh)
                dw, db = _weight_grads(dpre, result, h0, reverse)
                return dpre, dw, db, dh

            return rnn_sequence_backward

        return build

    def gru() -> Callable[..., Any]:
        pre_rows, cand_rows = jit(_gru_pre_rows, **flags), jit(_gru_candidate_rows, **flags)
        cell_rows = jit(_gru_cell_rows, **flags)

        def gru_sequence(xproj: Any, w_hh: Any, b_hh: Any, states: Any, reverse: bool) -> Any:
            (h0,) = states
            if not _takes(xproj, w_hh, b_hh, h0):
                return None
            steps, batch, width = xproj.shape
            n = width // 3
            result = np.empty((1, steps, batch, n), dtype=xproj.dtype)
            gates = np.empty((steps, batch, 4 * n), dtype=xproj.dtype)
            hh, pre = np.empty((batch, width), dtype=xproj.dtype), np.empty((batch, width), dtype=xproj.dtype)
            hn = np.empty((batch, n), dtype=xproj.dtype)
            w_t = w_hh.T
            for t in _order(steps, reverse):
                h_prev = _previous(result, h0, t, steps, reverse)
                np.matmul(h_prev, w_t, out=hh)
                pre_rows(hh, xproj[t], b_hh, pre, hn)
                np.tanh(pre[:, : 2 * n], out=pre[:, : 2 * n])
                cand_rows(pre, xproj[t], hn)
                np.tanh(pre[:, 2 * n :], out=pre[:, 2 * n :])
                cell_rows(pre, hn, h_prev, gates[t], result[0, t])
            return result, gates

        return gru_sequence

    def gru_backward() -> Callable[..., Any]:
        grad_rows = jit(_gru_grad_rows, **flags)

        def gru_sequence_backward(g: Any, result: Any, gates: Any, w_hh: Any, h0: Any, reverse: Any) -> Any:
            reverse = bool(reverse)
            g = np.ascontiguousarray(g, dtype=result.dtype)
            steps, batch, n = result.shape[1:]
            dx = np.empty((steps, batch, 3 * n), dtype=result.dtype)
            dhh = np.empty((steps, batch, 3 * n), dtype=result.dtype)
            dh = np.zeros_like(h0)
            for t in reversed(_order(steps, reverse)):
                h_prev = _previous(result, h0, t, steps, reverse)
                grad_rows(gates[t], h_prev, dh, g[0, t], dx[t], dhh[t])
                dh += dhh[t] @ w_hh
            dw, db = _weight_grads(dhh, result, h0, reverse)
            return dx, dw, db, dh

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
