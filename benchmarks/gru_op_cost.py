"""The fixed cost of a recorded op in the hand-written GRU cell of issue #26, where the ops are
small and many: one Adam training step (24 steps unrolled, about 480 recorded ops and their
backward pass), in shapegrad, in PyTorch eager and in plain NumPy with its backward pass
written out by hand, at a width where the arithmetic is small (hidden 8, batch 4) and at the
workload's (hidden 128, batch 32).

    python benchmarks/gru_op_cost.py            # about a minute
    python benchmarks/gru_op_cost.py --quick    # fewer rounds (CI)

Each framework's time beyond the NumPy step's, divided by the ops shapegrad records, is its
fixed cost per op: what the tape, the checks, the dispatch and the backward pass's bookkeeping
cost around the same arithmetic. The three steps start from the same weights and must give
the same losses over their first steps (the NumPy step's Adam is the NumPy backend's fused
kernel, which shapegrad's update runs too), so that the NumPy step is the same arithmetic.
One thread, the process pinned to one core, medians of interleaved rounds (``run.compare``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(name, "1")

import numpy as np  # noqa: E402
import run  # noqa: E402
import workloads  # noqa: E402

import shapegrad as sg  # noqa: E402
from shapegrad import nn  # noqa: E402
from shapegrad._backend import active_backend, fused_kernel  # noqa: E402

QUICK = "--quick" in sys.argv[1:]
STEPS = 24
# Adam at its defaults (shapegrad's and PyTorch's, as the workloads train): the NumPy step updates with them
LR, BETAS, EPS = 1e-3, (0.9, 0.999), 1e-8


class GRU(workloads.HandGRU):
    """``workloads.HandGRU`` (its forward pass) at any width; the input width is the hidden's."""

    def __init__(self, hidden: int, generator: sg.Generator) -> None:
        self.hidden = hidden
        self.x_gates = nn.Linear(hidden, 3 * hidden, generator=generator)
        self.h_gates = nn.Linear(hidden, 3 * hidden, generator=generator)
        self.head = nn.Linear(hidden, 10, generator=generator)


def numpy_step(model: GRU, x: np.ndarray, y: np.ndarray) -> Callable[[], float]:
    """The same training step in NumPy from ``model``'s weights (copies): forward, the backward
    pass written out, and Adam through the NumPy backend's fused kernel."""
    adam = fused_kernel(active_backend(), "adam", np.dtype(np.float32))
    assert adam is not None, "the NumPy backend offers a fused Adam kernel"
    layers = (model.x_gates, model.h_gates, model.head)
    params = [a for layer in layers for a in (layer.weight.numpy().copy(), layer.bias.numpy().copy())]
    moments = [(np.zeros_like(p), np.zeros_like(p)) for p in params]
    count = [0]
    batch, n = x.shape[0], model.hidden
    rows = np.arange(batch)

    def sigmoid(a: Any) -> Any:
        return 1 / (1 + np.exp(-a))

    def step() -> float:
        wx, bx, wh, bh, wo, bo = params
        h = np.zeros((batch, n), np.float32)
        saved: list[tuple[Any, ...]] = []
        for t in range(STEPS):
            xt = x[:, t]
            gx, gh = xt @ wx + bx, h @ wh + bh
            r = sigmoid(gx[:, :n] + gh[:, :n])
            z = sigmoid(gx[:, n : 2 * n] + gh[:, n : 2 * n])
            c = np.tanh(gx[:, 2 * n :] + r * gh[:, 2 * n :])
            saved.append((xt, h, gh, r, z, c))
            h = (1.0 - z) * c + z * h
        logits = h @ wo + bo
        e = np.exp(logits - logits.max(-1, keepdims=True))
        p = e / e.sum(-1, keepdims=True)
        loss = float(-np.log(p[rows, y]).mean())
        p[rows, y] -= 1
        g = p / np.float32(batch)
        grads = [np.zeros_like(q) for q in params]
        grads[4], grads[5] = h.T @ g, g.sum(0)
        dh = g @ wo.T
        for xt, h_before, gh, r, z, c in reversed(saved):
            da = dh * (1.0 - z) * (1 - c * c)
            dz = dh * (h_before - c) * z * (1 - z)
            dr = da * gh[:, 2 * n :] * r * (1 - r)
            dgx = np.concatenate([dr, dz, da], axis=1)
            dgh = np.concatenate([dr, dz, da * r], axis=1)
            grads[0] += xt.T @ dgx
            grads[1] += dgx.sum(0)
            grads[2] += h_before.T @ dgh
            grads[3] += dgh.sum(0)
            dh = dh * z + dgh @ wh.T
        count[0] += 1
        k = count[0]
        beta1, beta2 = BETAS
        # the update's scalars as shapegrad's Adam hands them to the kernel
        scalars = [np.float32(v) for v in (LR / (1 - beta1**k), beta1, beta2, EPS, (1 - beta2**k) ** -0.5)]
        for p_, g_, (m, v) in zip(params, grads, moments, strict=True):
            adam(g_, *scalars, p_, m, v)
        return loss

    return step


def shapegrad_step(model: GRU, x: np.ndarray, y: np.ndarray) -> Callable[[], float]:
    """The workloads' training step (``workloads.sg_train_step``: Adam at its defaults, which
    ``LR``, ``BETAS`` and ``EPS`` are), giving the loss as a number."""
    step = workloads.sg_train_step(model, sg.tensor(x), sg.tensor(y))
    return lambda: step().item()


def torch_step(model: GRU, x: np.ndarray, y: np.ndarray) -> Callable[[], float]:
    """``workloads.HandGRU``'s PyTorch twin from ``model``'s weights, trained as the workloads
    are (Adam at PyTorch's defaults, which ``LR``, ``BETAS`` and ``EPS`` are)."""
    import torch

    torch.set_num_threads(1)
    return workloads._train_step(workloads.torch_hand_gru(model), torch.from_numpy(x), torch.from_numpy(y), LR)


def recorded_ops(step: Callable[[], float]) -> int:
    """How many ops one call of a shapegrad step records (its graph's nodes)."""
    from shapegrad import _tensor
    from shapegrad.ops import _toolkit

    count = [0]
    original = _tensor.record_traced

    def counting(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return original(*args, **kwargs)

    _tensor.record_traced = _toolkit.record_traced = counting
    try:
        step()
    finally:
        _tensor.record_traced = _toolkit.record_traced = original
    return count[0]


def measure(hidden: int, batch: int, number: int, repeat: int) -> dict[str, float]:
    """Seconds per step of each contender (``ops``: the ops shapegrad records per step), after
    the three have given the same losses over three steps from the same weights."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((batch, STEPS, hidden)).astype(np.float32)
    y = rng.integers(0, 10, batch)
    models = [GRU(hidden, sg.Generator(1)) for _ in range(3)]
    contenders: dict[str, Callable[[], float]] = {
        "shapegrad": shapegrad_step(models[0], x, y),
        "numpy": numpy_step(models[1], x, y),
    }
    if run.have_torch():
        contenders["torch"] = torch_step(models[2], x, y)
    losses = {name: [step() for _ in range(3)] for name, step in contenders.items()}
    for name, values in losses.items():
        np.testing.assert_allclose(values, losses["shapegrad"], rtol=2e-4, err_msg=f"{name} and shapegrad disagree")
    times: dict[str, float] = dict(run.compare(contenders, number, repeat))
    times["ops"] = recorded_ops(contenders["shapegrad"])
    return times


def main() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    number, repeat = (1, 3) if QUICK else (5, 21)
    for hidden, batch in ((8, 4), (128, 32)):
        t = measure(hidden, batch, number, repeat)
        ops = t["ops"]
        line = (
            f"hidden {hidden}, batch {batch}: a step records {ops:.0f} ops; shapegrad {t['shapegrad'] * 1e3:.2f} ms, "
            f"NumPy arithmetic alone {t['numpy'] * 1e3:.2f} ms"
        )
        ours = (t["shapegrad"] - t["numpy"]) / ops
        line += f"; beyond it per op: shapegrad {ours * 1e6:.2f} µs"
        if "torch" in t:
            theirs = (t["torch"] - t["numpy"]) / ops
            line += f", PyTorch eager {theirs * 1e6:.2f} µs (÷ {ours / theirs:.2f}); steps ÷ PyTorch {t['shapegrad'] / t['torch']:.2f}"
        print(line)


if __name__ == "__main__":
    main()
