"""Recurrences as single ops: one layer-direction of an RNN, LSTM or GRU.

Written with element-wise ops, an LSTM step is some thirty recorded ops, so a sequence is
thousands of nodes and as many tiny passes. Here the input projection of every step is one
matrix product recorded normally (``x @ W_ihᵀ + b_ih``, by the layer), and the recurrence over
time is one op: its forward loops over the steps (one ``h @ W_hhᵀ`` product per step) keeping
the gate activations, and its rule runs backpropagation through time the same way, with the
``W_hh`` gradient one product over all steps at the end.

The op's result is time-major, ``(K, S, B, H)``: ``K = 1`` (the hidden states) for RNN and GRU, ``K = 2``
(hidden and cell states) for LSTM, so that one op yields both sequences; the layer slices the
output and the final states out of it. Gate order and formulas are PyTorch's: LSTM ``i, f, g,
o``; GRU ``r, z, n`` with ``n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))`` and
``h' = (1 - z) ⊙ n + z ⊙ h``.

The ``xp`` code here is the reference; the NumPy backend replaces a whole sequence (forward
and rule, looked up by name) by numba-fused steps (``shapegrad_backends.numba_kernels``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._backend import fused_kernel, same_backend
from .._errors import ShapeError
from .._tensor import AnyTensor, record
from ._toolkit import check_same_float, keep_where, require_float, stable_sigmoid

__all__ = ["CELL_GATES", "recurrence"]

CELL_GATES = {"rnn_tanh": 1, "rnn_relu": 1, "lstm": 4, "gru": 3}
"""How many ``H``-wide gate blocks each cell's weights hold (PyTorch's ``weight_ih`` rows / H)."""

# A forward step: (xp, x-projection, h @ W_hhᵀ + b_hh, states) -> (new states, gates to keep).
Step = Callable[[Any, Any, Any, tuple[Any, ...]], tuple[tuple[Any, ...], Any]]
# A backward step: (xp, kept gates, new states, previous states, their gradients) ->
# (gradient of the x-projection, of h @ W_hhᵀ + b_hh, and of the previous states except the
# h @ W_hhᵀ path, which the driver adds as one product).
BackStep = Callable[[Any, Any, tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]], tuple[Any, Any, tuple[Any, ...]]]


def _rnn_step(activation: str) -> Step:
    def step(xp: Any, px: Any, ph: Any, states: tuple[Any, ...]) -> tuple[tuple[Any, ...], Any]:
        pre = px + ph
        h = xp.tanh(pre) if activation == "tanh" else xp.maximum(pre, xp.zeros_like(pre))
        return (h,), None

    return step


def _rnn_back(activation: str) -> BackStep:
    def back(xp: Any, gates: Any, new: tuple[Any, ...], old: tuple[Any, ...], grads: tuple[Any, ...]) -> Any:
        (h,), (dh,) = new, grads
        dpre = dh * (1 - h * h) if activation == "tanh" else keep_where(xp, h > 0, dh)
        return dpre, dpre, (xp.zeros_like(dh),)

    return back


def _lstm_step(xp: Any, px: Any, ph: Any, states: tuple[Any, ...]) -> tuple[tuple[Any, ...], Any]:
    c = states[1]
    n = c.shape[-1]
    pre = px + ph
    i = stable_sigmoid(xp, pre[:, :n])
    f = stable_sigmoid(xp, pre[:, n : 2 * n])
    g = xp.tanh(pre[:, 2 * n : 3 * n])
    o = stable_sigmoid(xp, pre[:, 3 * n :])
    c = f * c + i * g
    return (o * xp.tanh(c), c), xp.concat([i, f, g, o], axis=-1)


def _lstm_back(xp: Any, gates: Any, new: tuple[Any, ...], old: tuple[Any, ...], grads: tuple[Any, ...]) -> Any:
    (_, c), (_, c_prev), (dh, dc) = new, old, grads
    n = c.shape[-1]
    i, f, g, o = gates[:, :n], gates[:, n : 2 * n], gates[:, 2 * n : 3 * n], gates[:, 3 * n :]
    tc = xp.tanh(c)
    dc = dc + dh * o * (1 - tc * tc)
    dpre = xp.concat(
        [dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - g * g), dh * tc * o * (1 - o)], axis=-1
    )
    return dpre, dpre, (xp.zeros_like(dh), dc * f)


def _gru_step(xp: Any, px: Any, ph: Any, states: tuple[Any, ...]) -> tuple[tuple[Any, ...], Any]:
    h = states[0]
    n = h.shape[-1]
    r = stable_sigmoid(xp, px[:, :n] + ph[:, :n])
    z = stable_sigmoid(xp, px[:, n : 2 * n] + ph[:, n : 2 * n])
    hn = ph[:, 2 * n :]
    cand = xp.tanh(px[:, 2 * n :] + r * hn)
    return ((1 - z) * cand + z * h,), xp.concat([r, z, cand, hn], axis=-1)


def _gru_back(xp: Any, gates: Any, new: tuple[Any, ...], old: tuple[Any, ...], grads: tuple[Any, ...]) -> Any:
    (h_prev,), (dh,) = old, grads
    n = h_prev.shape[-1]
    r, z, cand, hn = gates[:, :n], gates[:, n : 2 * n], gates[:, 2 * n : 3 * n], gates[:, 3 * n :]
    dcand = dh * (1 - z) * (1 - cand * cand)
    dr = dcand * hn * r * (1 - r)
    dz = dh * (h_prev - cand) * z * (1 - z)
    return xp.concat([dr, dz, dcand], axis=-1), xp.concat([dr, dz, dcand * r], axis=-1), (dh * z,)


STEPS: dict[str, tuple[Step, BackStep]] = {
    "rnn_tanh": (_rnn_step("tanh"), _rnn_back("tanh")),
    "rnn_relu": (_rnn_step("relu"), _rnn_back("relu")),
    "lstm": (_lstm_step, _lstm_back),
    "gru": (_gru_step, _gru_back),
}


def _order(steps: int, reverse: bool) -> range:
    return range(steps - 1, -1, -1) if reverse else range(steps)


def sequence_forward(
    xp: Any, cell: str, xproj: Any, w_hh: Any, b_hh: Any, states: tuple[Any, ...], reverse: bool
) -> tuple[Any, Any]:
    """The reference forward of one layer-direction: ``(result (K, S, B, H), gates (S, B, ·))``."""
    step = STEPS[cell][0]
    w_t = xp.matrix_transpose(w_hh)
    steps = xproj.shape[0]
    outs: list[list[Any]] = [[None] * steps for _ in states]
    kept: list[Any] = [None] * steps
    for t in _order(steps, reverse):
        states, kept[t] = step(xp, xproj[t, ...], xp.matmul(states[0], w_t) + b_hh, states)
        for k, s in enumerate(states):
            outs[k][t] = s
    result = xp.stack([xp.stack(seq, axis=0) for seq in outs], axis=0)
    return result, None if kept[0] is None else xp.stack(kept, axis=0)


def previous_hidden(xp: Any, hs: Any, h0: Any, reverse: bool) -> Any:
    """The hidden state each step started from, ``(S, B, H)``: ``h0`` then ``hs`` shifted by one."""
    first = xp.expand_dims(h0, axis=0)
    return xp.concat([hs[1:, ...], first] if reverse else [first, hs[:-1, ...]], axis=0)


def weight_gradients(xp: Any, dhh: Any, h_prev: Any) -> tuple[Any, Any]:
    """``W_hh``'s and ``b_hh``'s gradients, each one reduction over all steps at once."""
    rows = xp.reshape(dhh, (-1, dhh.shape[-1]))
    return xp.matmul(xp.matrix_transpose(rows), xp.reshape(h_prev, (-1, h_prev.shape[-1]))), xp.sum(rows, axis=0)


def _sequence_backward(
    xp: Any, cell: str, g: Any, result: Any, gates: Any, w_hh: Any, states0: tuple[Any, ...], reverse: bool
) -> tuple[Any, ...]:
    back = STEPS[cell][1]
    steps = result.shape[1]
    grads = tuple(xp.zeros_like(s) for s in states0)
    dxs: list[Any] = [None] * steps
    dhhs: list[Any] = [None] * steps
    for t in reversed(_order(steps, reverse)):
        new = tuple(result[k, t, ...] for k in range(len(states0)))
        p = t + 1 if reverse else t - 1
        old = states0 if p in (-1, steps) else tuple(result[k, p, ...] for k in range(len(states0)))
        grads = tuple(d + g[k, t, ...] for k, d in enumerate(grads))
        dxs[t], dhhs[t], grads = back(xp, None if gates is None else gates[t, ...], new, old, grads)
        grads = (grads[0] + xp.matmul(dhhs[t], w_hh), *grads[1:])
    dhh = xp.stack(dhhs, axis=0)
    dw, db = weight_gradients(xp, dhh, previous_hidden(xp, result[0, ...], states0[0], reverse))
    return (xp.stack(dxs, axis=0), dw, db, *grads)


def rnn_tanh_sequence_backward(xp: Any, g: Any, result: Any, gates: Any, w_hh: Any, *rest: Any) -> tuple[Any, ...]:
    return _sequence_backward(xp, "rnn_tanh", g, result, gates, w_hh, rest[:-1], rest[-1])


def rnn_relu_sequence_backward(xp: Any, g: Any, result: Any, gates: Any, w_hh: Any, *rest: Any) -> tuple[Any, ...]:
    return _sequence_backward(xp, "rnn_relu", g, result, gates, w_hh, rest[:-1], rest[-1])


def lstm_sequence_backward(xp: Any, g: Any, result: Any, gates: Any, w_hh: Any, *rest: Any) -> tuple[Any, ...]:
    return _sequence_backward(xp, "lstm", g, result, gates, w_hh, rest[:-1], rest[-1])


def gru_sequence_backward(xp: Any, g: Any, result: Any, gates: Any, w_hh: Any, *rest: Any) -> tuple[Any, ...]:
    return _sequence_backward(xp, "gru", g, result, gates, w_hh, rest[:-1], rest[-1])


RULES = {
    "rnn_tanh": rnn_tanh_sequence_backward,
    "rnn_relu": rnn_relu_sequence_backward,
    "lstm": lstm_sequence_backward,
    "gru": gru_sequence_backward,
}


def recurrence(
    cell: str, xproj: AnyTensor, w_hh: AnyTensor, b_hh: AnyTensor, states: tuple[AnyTensor, ...], reverse: bool
) -> Any:
    """One layer-direction of a recurrent layer over the whole sequence, as one op.

    ``xproj`` is the input projection of every step, time-major ``(S, B, G·H)`` (``x @ W_ihᵀ +
    b_ih``; time-major so that each step's slice is contiguous);
    ``w_hh`` is ``(G·H, H)`` and ``b_hh`` ``(G·H,)`` as PyTorch's; ``states`` the initial
    ``(h0,)`` (or ``(h0, c0)`` for an LSTM), each ``(B, H)``; ``reverse`` runs from the last
    step to the first. The result is ``(K, S, B, H)``: each state after each step (see the
    module's docstring). PyTorch: one direction of one layer of ``torch.nn.RNN/LSTM/GRU``.
    """
    if cell not in CELL_GATES:
        raise ShapeError(f"recurrence: cell is one of {', '.join(CELL_GATES)}, found {cell!r}")
    backend = xproj._backend
    for name, t in (("w_hh", w_hh), ("b_hh", b_hh), *((f"state {k}", s) for k, s in enumerate(states))):
        same_backend(xproj, t)
        check_same_float("recurrence", xproj, t, ("input projection", name))
    require_float(xproj, "recurrence")
    hidden = w_hh.shape[-1] if w_hh.ndim == 2 else -1
    width = CELL_GATES[cell] * hidden
    batch = xproj.shape[1] if xproj.ndim == 3 else -1
    expected: dict[str, tuple[int, ...]] = {
        "input projection": (xproj.shape[0] if xproj.ndim == 3 else -1, batch, width),
        "w_hh": (width, hidden),
        "b_hh": (width,),
    }
    found = {"input projection": xproj.shape, "w_hh": w_hh.shape, "b_hh": b_hh.shape}
    for k, s in enumerate(states):
        expected[f"state {k}"], found[f"state {k}"] = (batch, hidden), s.shape
    if len(states) != (2 if cell == "lstm" else 1) or xproj.ndim != 3 or found != expected:
        raise ShapeError(f"recurrence ({cell}): expected shapes {expected}, found {found}")
    xp = backend.xp
    arrays = (xproj._data, w_hh._data, b_hh._data, tuple(s._data for s in states), bool(reverse))
    kernel = fused_kernel(backend, f"{cell}_sequence", xproj._data.dtype)
    fused = None if kernel is None else kernel(*arrays)
    result, gates = fused if fused is not None else sequence_forward(xp, cell, *arrays)
    saved = (result, gates, w_hh._data, *arrays[3], bool(reverse))
    inputs: tuple[AnyTensor, ...] = (xproj, w_hh, b_hh, *states)
    return record(result, RULES[cell], inputs, saved, backend)
