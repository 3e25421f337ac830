"""Data-parallel costs on this machine, and what they project to on a cluster.

    mpiexec -n 2 python benchmarks/distributed.py      # then -n 4
    mpiexec -n 2 python benchmarks/distributed.py --quick   # CI: proves it runs

1. MPI ``Allreduce`` (sum, float32, in place) time against message size: the median of
   several timed repeats, each rank synchronised by a barrier first.
2. The training-step overhead of averaging gradients: the MLP step of ``run.py``
   (784-256-256-10, Adam, per-rank batch 64) without any reduction, with
   ``comm.allreduce_mean`` after backward, and with ``comm.overlap`` (buckets reduced during
   backward); medians of interleaved rounds.
3. An alpha-beta fit of (1), ``t(n) = α + β·n``, and the ring-allreduce model
   ``t(p, n) = 2(p-1)·α + 2(p-1)/p · n/B`` projected to 8-256 GPUs on an assumed
   interconnect (printed with its assumptions).

Rank 0 prints markdown tables.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402

import shapegrad as sg  # noqa: E402
import shapegrad.distributed as dist  # noqa: E402

# The assumed cluster for the projection: NCCL over InfiniBand HDR (200 Gb/s per GPU).
CLUSTER_LATENCY_S = 10e-6
CLUSTER_BANDWIDTH_BPS = 25e9


def allreduce_times(comm: dist.Comm, sizes: list[int], repeat: int) -> dict[int, float]:
    mpi = sys.modules["mpi4py.MPI"]
    times: dict[int, float] = {}
    for nbytes in sizes:
        buffer = np.ones(nbytes // 4, dtype=np.float32)
        samples = []
        for _ in range(repeat):
            comm.barrier()
            start = time.perf_counter()
            comm.mpi.Allreduce(mpi.IN_PLACE, buffer, op=mpi.SUM)
            samples.append(time.perf_counter() - start)
        times[nbytes] = statistics.median(samples)
    return times


def fit_alpha_beta(times: dict[int, float]) -> tuple[float, float]:
    """``t = α + β·n``: α is the smallest message's time (latency-bound), β the median
    per-byte cost of the messages of 1 MiB and more (bandwidth-bound). A least-squares line
    would follow the largest message alone, and over-large messages fall out of cache."""
    smallest = min(times)
    alpha = times[smallest]
    large = [(t - alpha) / n for n, t in times.items() if n >= 2**20] or [(times[max(times)] - alpha) / max(times)]
    return alpha, statistics.median(large)


def step_times(comm: dist.Comm, rounds: int, steps: int) -> dict[str, float]:
    rng = np.random.default_rng(comm.rank)
    x = sg.tensor(rng.standard_normal((64, 784)).astype(np.float32))
    y = sg.tensor(rng.integers(0, 10, 64))
    results: dict[str, list[float]] = {"no reduction": [], "allreduce_mean after backward": [], "overlap": []}
    setups: dict[str, Any] = {}
    for mode in results:
        model = run.MLP(generator=sg.Generator(0))
        grads = model.alloc_grads()
        if mode == "overlap":
            comm.overlap(grads)
        setups[mode] = (model, grads, sg.optim.Adam(model))
    for _ in range(rounds):
        for mode, (model, grads, opt) in setups.items():
            comm.barrier()
            start = time.perf_counter()
            for _ in range(steps):
                grads.zero()
                sg.losses.cross_entropy(model(x.trace(grads)), y).backward()
                if mode != "no reduction":
                    comm.allreduce_mean(grads)
                opt.update(model, grads)
            results[mode].append((time.perf_counter() - start) / steps)
    return {mode: statistics.median(values) for mode, values in results.items()}


def ring_time(p: int, nbytes: float, alpha: float, bandwidth: float) -> float:
    return 2 * (p - 1) * alpha + 2 * (p - 1) / p * nbytes / bandwidth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)  # one BLAS thread per rank: the ranks share the machine's cores
    comm = dist.init()
    sizes = [2**k for k in (range(12, 17, 4) if args.quick else range(12, 27, 2))]
    times = allreduce_times(comm, sizes, repeat=3 if args.quick else 15)
    steps = step_times(comm, rounds=1 if args.quick else 7, steps=2 if args.quick else 20)
    if comm.rank != 0:
        return
    alpha, beta = fit_alpha_beta(times)
    print(
        f"## MPI on this machine, {comm.size} ranks ({sys.modules['mpi4py.MPI'].Get_library_version().splitlines()[0]})"
    )
    print("\n| message | Allreduce | bandwidth |\n| ---: | ---: | ---: |")
    for nbytes, seconds in times.items():
        print(f"| {nbytes / 1024:.0f} KiB | {seconds * 1e6:.1f} µs | {nbytes / seconds / 1e9:.2f} GB/s |")
    print(f"\nfit t = α + β·n: α = {alpha * 1e6:.1f} µs, 1/β = {1 / beta / 1e9:.2f} GB/s")
    base = steps["no reduction"]
    print("\n| MLP step (784-256-256-10, Adam, batch 64 per rank) | time | overhead of averaging |")
    print("| --- | ---: | ---: |")
    for mode, seconds in steps.items():
        print(f"| {mode} | {seconds * 1e3:.2f} ms | {(seconds - base) * 1e3:+.2f} ms ({seconds / base:.2f}×) |")
    params = sum(t.size for t in run.MLP(generator=sg.Generator(0)).parameters())
    print(f"\n(gradients per step: {params} float32 = {params * 4 / 2**20:.2f} MiB)")
    print(
        f"\n## Projection (ring allreduce, α = {CLUSTER_LATENCY_S * 1e6:.0f} µs, "
        f"B = {CLUSTER_BANDWIDTH_BPS / 1e9:.0f} GB/s per GPU: NCCL over 200 Gb/s InfiniBand; no overlap)"
    )
    print("\n| GPUs | 25M params (100 MB), 100 ms compute | 350M params (1.4 GB), 1 s compute |")
    print("| ---: | ---: | ---: |")
    for p in (8, 16, 32, 64, 128, 256):
        cells = []
        for nbytes, compute in ((100e6, 0.1), (1.4e9, 1.0)):
            comm_time = ring_time(p, nbytes, CLUSTER_LATENCY_S, CLUSTER_BANDWIDTH_BPS)
            cells.append(f"{compute / (compute + comm_time):.0%} ({comm_time * 1e3:.0f} ms)")
        print(f"| {p} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
