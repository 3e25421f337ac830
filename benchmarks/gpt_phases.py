"""Where the GPT training step's time goes, against its PyTorch twin, one thread.

    python benchmarks/gpt_phases.py            # forward / backward / update, then single ops
    python benchmarks/gpt_phases.py --quick    # a few iterations: proves it still runs

The step of ``benchmarks/run.py``'s GPT case split into its three phases (the forward pass
with the loss, the backward pass, the optimizer update with clipping), timed per step and
interleaved with PyTorch's, then the forward pass's building blocks at the model's shapes
(batch 16 × 64 tokens, width 96, 4 heads, feed-forward 384, vocabulary 128), each traced as
in training. Medians; the process is pinned to one core, as run.py's one-thread section.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples"))

import gpt  # noqa: E402
import gpt_torch  # noqa: E402
import workloads  # noqa: E402

import shapegrad as sg  # noqa: E402

Phases = workloads.Phases


def step_phases(rounds: int) -> dict[str, Phases]:
    """Median seconds of (forward + loss, backward, update) per step, both frameworks."""
    import torch
    import torch.nn.functional as F

    text = np.frombuffer(gpt.corpus().encode("ascii"), dtype=np.uint8).astype(np.int64)
    x_np, y_np = gpt.windows(text, 16, np.random.default_rng(0))
    model = gpt.GPT(generator=sg.Generator(0))
    opt, grads = sg.optim.AdamW(model, lr=1e-3, clip_norm=1.0), model.alloc_grads()
    x, y = sg.tensor(x_np), sg.tensor(y_np)
    twin = gpt_torch.torch_gpt(model)
    twin_opt = torch.optim.AdamW(twin.parameters(), lr=1e-3)
    tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np)

    ours = workloads.sg_step_phases(model, opt, grads, x, y)

    def theirs() -> Phases:
        start = time.perf_counter()
        twin_opt.zero_grad()
        logits = twin(tx)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ty.reshape(-1))
        forward = time.perf_counter()
        loss.backward()
        backward = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(twin.parameters(), 1.0)
        twin_opt.step()
        return forward - start, backward - forward, time.perf_counter() - backward

    return workloads.median_phases({"shapegrad": ours, "torch": theirs}, rounds)


def forward_ops(rounds: int) -> dict[str, tuple[float, float]]:
    """Median seconds of each forward building block: (shapegrad, PyTorch)."""
    import torch
    import torch.nn.functional as F

    rng = np.random.default_rng(0)
    grads = sg.Gradients()

    def traced(a: np.ndarray) -> Any:
        return sg.tensor(a).trace(grads)

    def leaf(a: np.ndarray) -> Any:
        return torch.from_numpy(a).requires_grad_()

    x = rng.standard_normal((16, 64, 96)).astype(np.float32)
    hidden = rng.standard_normal((16, 64, 384)).astype(np.float32)
    scores = rng.standard_normal((16, 4, 64, 64)).astype(np.float32)
    logits = rng.standard_normal((16, 64, 128)).astype(np.float32)
    labels = rng.integers(0, 128, (16, 64))
    weight = (rng.standard_normal((96, 384)) * 0.1).astype(np.float32)
    scale, shift, bias = np.ones(96, np.float32), np.zeros(96, np.float32), np.zeros(384, np.float32)
    causal = np.tril(np.ones((64, 64), dtype=bool))
    sx, sh, ss, sl = traced(x), traced(hidden), traced(scores), traced(logits)
    sw, sb, s_weight, s_bias = traced(scale), traced(shift), traced(weight), traced(bias)
    s_mask, s_labels = sg.tensor(causal), sg.tensor(labels)
    tx, th, ts, tl = leaf(x), leaf(hidden), leaf(scores), leaf(logits)
    tw, tb, t_weight, t_bias = leaf(scale), leaf(shift), leaf(weight.T.copy()), leaf(bias)
    t_mask, t_labels = torch.from_numpy(causal), torch.from_numpy(labels)
    cases: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
        "layer norm (16, 64, 96)": (lambda: sg.layer_norm(sx, sw, sb), lambda: F.layer_norm(tx, (96,), tw, tb)),
        "linear 96 → 384": (
            lambda: sg.ops.linalg.linear(sx, s_weight, s_bias),
            lambda: F.linear(tx, t_weight, t_bias),
        ),
        "exact GELU (16, 64, 384)": (lambda: sg.gelu(sh, approximate="none"), lambda: F.gelu(th)),
        "masked softmax (16, 4, 64, 64)": (
            lambda: sg.softmax(ss, scale=0.2, mask=s_mask),
            lambda: torch.softmax((ts * 0.2).masked_fill(~t_mask, -1e9), -1),
        ),
        "cross-entropy (1024, 128)": (
            lambda: sg.losses.cross_entropy(sl, s_labels),
            lambda: F.cross_entropy(tl.reshape(-1, 128), t_labels.reshape(-1)),
        ),
        "residual add (16, 64, 96)": (lambda: sx + sx, lambda: tx + tx),
    }
    return {name: interleaved(ours, theirs, rounds) for name, (ours, theirs) in cases.items()}


def interleaved(ours: Callable[[], Any], theirs: Callable[[], Any], rounds: int) -> tuple[float, float]:
    """Median seconds of one call of each, after three warm-up calls, the two alternating so
    that a noisy neighbour slows both alike."""
    times: dict[int, list[float]] = {0: [], 1: []}
    for fn in (ours, theirs):
        for _ in range(3):
            fn()
    for _ in range(rounds):
        for which, fn in enumerate((ours, theirs)):
            start = time.perf_counter()
            fn()
            times[which].append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def step_products(rounds: int) -> tuple[float, float]:
    """Median seconds of the step's matrix products alone, at the model's shapes: NumPy's BLAS
    (what shapegrad calls) against PyTorch's, nothing around them. Per block: four linears
    (96→288, 96→96, 96→384, 384→96) forward, input gradient and weight gradient over 1,024
    rows, and attention's two batched products (64 heads-and-sequences of 64×24 and 64×64)
    with their two gradients each; then the tied head's three."""
    import torch

    rng = np.random.default_rng(0)
    rows, width, heads, seq = 1024, 96, 64, 64

    def products(lib: Any) -> Callable[[], None]:
        def array(*shape: int) -> Any:
            a = rng.standard_normal(shape).astype(np.float32)
            return lib.from_numpy(a) if lib is torch else a

        linears = [
            (array(rows, i), array(i, o), array(rows, o)) for i, o in ((96, 288), (96, 96), (96, 384), (384, 96))
        ]
        q, k_t, w = array(heads, seq, 24), array(heads, 24, seq), array(heads, seq, seq)
        h, e, g = array(rows, width), array(128, width), array(rows, 128)

        def run() -> None:
            for _ in range(2):  # blocks
                for x, weight, grad in linears:
                    x @ weight
                    grad @ weight.T
                    x.T @ grad
                for a, b in ((q, k_t), (w, q)):
                    a @ b
                    a.swapaxes(-1, -2) @ a
                    b @ b.swapaxes(-1, -2)
            h @ e.T
            g @ e
            g.T @ h

        return run

    return interleaved(products(np), products(torch), rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few iterations (CI)")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    threadpool_limits(limits=1)  # NumPy's BLAS too: two of its threads on one core would fight
    phases = step_phases(3 if args.quick else 25)
    print("| GPT step phase | shapegrad | PyTorch | ÷ PyTorch |")
    print("| --- | ---: | ---: | ---: |")
    for i, label in enumerate(("forward + loss", "backward", "update (AdamW, clipping)")):
        ours, theirs = phases["shapegrad"][i], phases["torch"][i]
        print(f"| {label} | {ours * 1e3:.2f} ms | {theirs * 1e3:.2f} ms | {ours / theirs:.2f} |")
    total = sum(phases["shapegrad"]), sum(phases["torch"])
    print(f"| whole step | {total[0] * 1e3:.2f} ms | {total[1] * 1e3:.2f} ms | {total[0] / total[1]:.2f} |")
    products = step_products(3 if args.quick else 25)
    print(
        f"| its matrix products alone (NumPy's BLAS ÷ PyTorch's) | {products[0] * 1e3:.2f} ms | "
        f"{products[1] * 1e3:.2f} ms | {products[0] / products[1]:.2f} |"
    )
    print()
    print("| forward op, traced | shapegrad | PyTorch | ÷ PyTorch |")
    print("| --- | ---: | ---: | ---: |")
    for name, (ours, theirs) in forward_ops(3 if args.quick else 40).items():
        print(f"| {name} | {ours * 1e3:.3f} ms | {theirs * 1e3:.3f} ms | {ours / theirs:.2f} |")


if __name__ == "__main__":
    main()
