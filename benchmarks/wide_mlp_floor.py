"""What bounds issue #26's wide MLP step against its BLAS floor: the step under ``sg.compile``,
its matrix products alone at the step's shapes, and the floor, in one process.

    python benchmarks/wide_mlp_floor.py
    env -u OPENBLAS_CORETYPE python benchmarks/wide_mlp_floor.py   # OpenBLAS's own kernels
    python benchmarks/wide_mlp_floor.py --quick                     # fewer repeats (CI)

The floor is ``workloads.wide_mlp_flops()`` at the best 1024³ sgemm rate of this process
(``run.sgemm_rate``). The products are the step's own: three forward, three weight
gradients, two input gradients (the data needs none), written into preallocated arrays. What
the step takes beyond them is everything else it does (Adam, ReLU, the bias and the loss);
of that, Adam's update is timed alone (the backend's fused kernel over arrays of the model's
parameter sizes) against its memory traffic at the rate the process streams a sum of arrays
as large into one of them: an update at about 1× that is bound by memory, not by its code.
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
from shapegrad._backend import active_backend, fused_kernel  # noqa: E402

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

    # Adam's update alone: the backend's fused kernel over arrays of the model's parameter
    # sizes, against the memory traffic it cannot avoid (read p, g, m, v; write p, m, v) at
    # the rate this process streams a sum of arrays just as large into one of them (a += b:
    # read two, write one that was just read, as Adam writes what it read; a sum into a third
    # array would also read that array's lines before writing them, a fourth stream)
    sizes = [1024 * 1024 + 1024, 1024 * 1024 + 1024, 1024 * 10 + 10]
    adam = fused_kernel(active_backend(), "adam", np.dtype(np.float32))
    assert adam is not None, "the NumPy backend offers a fused Adam kernel"
    states = [(f32(n), f32(n), f32(n), np.abs(f32(n))) for n in sizes]
    scalars = [np.float32(v) for v in (1e-3, 0.9, 0.999, 1e-8, 1.0)]
    total = sum(sizes)
    left, right = f32(total), f32(total)

    def update() -> None:
        for p, grad, m, v in states:
            adam(grad, *scalars, p, m, v)

    def stream() -> None:
        np.add(left, right, out=left)

    times = run.compare(
        {"step": compiled, "products": products, "adam": update, "stream": stream}, 1 if QUICK else 3, 3 if QUICK else 9
    )
    bandwidth = 3 * 4 * total / times["stream"]
    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    print(f"sgemm 1024³: {rate / 1e9:.1f} GFLOP/s; the step's BLAS floor: {floor * 1e3:.2f} ms")
    print(f"sg.compile step: {times['step'] * 1e3:.2f} ms, {times['step'] / floor:.2f}× the floor")
    print(f"its products alone: {times['products'] * 1e3:.2f} ms, {times['products'] / floor:.2f}× the floor")
    print(f"everything else: {(times['step'] - times['products']) * 1e3:.2f} ms")
    adam_floor = 7 * 4 * total / bandwidth
    print(
        f"of which Adam's update over {total / 1e6:.1f} M parameters: {times['adam'] * 1e3:.2f} ms, "
        f"{times['adam'] / adam_floor:.2f}× its memory traffic (7 arrays, {7 * 4 * total / 2**20:.0f} MiB) at the "
        f"{bandwidth / 1e9:.1f} GB/s this process streams a += b of that size"
    )


if __name__ == "__main__":
    main()
