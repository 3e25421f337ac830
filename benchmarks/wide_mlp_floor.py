"""What bounds issue #26's wide MLP step against its BLAS floor: the step under ``sg.compile``,
its matrix products alone at the step's shapes, and the floor, in one process.

    python benchmarks/wide_mlp_floor.py
    env -u OPENBLAS_CORETYPE python benchmarks/wide_mlp_floor.py   # OpenBLAS's own kernels
    python benchmarks/wide_mlp_floor.py --quick                     # fewer repeats (CI)

The floor is ``workloads.wide_mlp_flops()`` at the best 1024³ sgemm rate of this process
(``run.sgemm_rate``). The products are the step's own: three forward, three weight
gradients, two input gradients (the data needs none), written into preallocated arrays. What
the step takes beyond them is everything else it does (Adam, ReLU, the bias and the loss).
One thread, the process pinned to one core, medians of interleaved rounds (``run.compare``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(name, "1")

import numpy as np  # noqa: E402
import run  # noqa: E402
import workloads  # noqa: E402

import shapegrad as sg  # noqa: E402

QUICK = "--quick" in sys.argv[1:]


def main() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    rate = run.sgemm_rate(repeat=5 if QUICK else 30)
    floor = workloads.wide_mlp_flops() / rate
    rng = np.random.default_rng(3)
    batch = workloads.WIDE_BATCH
    x = sg.tensor(rng.standard_normal((batch, 1024)).astype(np.float32))
    y = sg.tensor(rng.integers(0, 10, batch))
    compiled = sg.compile(workloads.sg_train_step(workloads.WideMLP(sg.Generator(3)), x, y))
    for _ in range(3):
        compiled()

    def f32(*shape: int) -> Any:
        return rng.standard_normal(shape).astype(np.float32)

    a, w, w3, g, g3 = f32(batch, 1024), f32(1024, 1024), f32(1024, 10), f32(batch, 1024), f32(batch, 10)
    hidden, weight = np.empty((batch, 1024), np.float32), np.empty((1024, 1024), np.float32)
    logits, head = np.empty((batch, 10), np.float32), np.empty((1024, 10), np.float32)

    def products() -> None:
        np.matmul(a, w, out=hidden)  # forward, layers 1 and 2, and the head
        np.matmul(a, w, out=hidden)
        np.matmul(a, w3, out=logits)
        np.matmul(a.T, g, out=weight)  # weight gradients
        np.matmul(a.T, g, out=weight)
        np.matmul(a.T, g3, out=head)
        np.matmul(g, w.T, out=hidden)  # input gradients of layers 2 and 3
        np.matmul(g3, w3.T, out=hidden)

    times = run.compare({"step": compiled, "products": products}, 1 if QUICK else 3, 3 if QUICK else 9)
    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    print(f"sgemm 1024³: {rate / 1e9:.1f} GFLOP/s; the step's BLAS floor: {floor * 1e3:.2f} ms")
    print(f"sg.compile step: {times['step'] * 1e3:.2f} ms, {times['step'] / floor:.2f}× the floor")
    print(f"its products alone: {times['products'] * 1e3:.2f} ms, {times['products'] / floor:.2f}× the floor")
    print(f"everything else: {(times['step'] - times['products']) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
