"""The CIFAR CNN step of issue #26 against PyTorch eager, one thread, one process.

    python benchmarks/cifar_ab.py              # 30 interleaved rounds of 5 steps each
    python benchmarks/cifar_ab.py --rounds 60  # more rounds on a busy machine
    python benchmarks/cifar_ab.py --phases     # also forward / backward / update per step

``workloads.cifar_cnn``'s three steps (shapegrad eager, the same step under ``sg.compile``,
PyTorch eager; checked there to reach the same losses), timed as ``run.py`` times the
workloads: BLAS and PyTorch on one thread, the process pinned to one core, rounds in
balanced orders (``run.compare``), medians. Quicker than ``run.py --workloads-only`` (no
other workload, no ``torch.compile``), for measuring a change to the convolution path.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run  # noqa: E402
import workloads  # noqa: E402

import shapegrad as sg  # noqa: E402


def phases(rounds: int) -> dict[str, workloads.Phases]:
    """Median seconds of (forward + loss, backward, update) per step, both frameworks."""
    import numpy as np
    import torch

    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((32, 3, 32, 32)).astype(np.float32)
    y_np = rng.integers(0, 10, 32)
    model = workloads.CifarCNN(sg.Generator(0))
    twin = workloads.torch_cifar_cnn(model)
    opt, grads = sg.optim.Adam(model), model.alloc_grads()
    twin_opt = torch.optim.Adam(twin.parameters(), lr=1e-3)
    x, y, tx, ty = sg.tensor(x_np), sg.tensor(y_np), torch.from_numpy(x_np), torch.from_numpy(y_np)

    ours = workloads.sg_step_phases(model, opt, grads, x, y)

    def theirs() -> workloads.Phases:
        start = time.perf_counter()
        twin_opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(twin(tx), ty)
        forward = time.perf_counter()
        loss.backward()
        backward = time.perf_counter()
        twin_opt.step()
        return forward - start, backward - forward, time.perf_counter() - backward

    return workloads.median_phases({"shapegrad": ours, "torch": theirs}, rounds, warmup=5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=30, help="interleaved rounds (default 30)")
    parser.add_argument("--phases", action="store_true", help="also time forward, backward and update")
    args = parser.parse_args()
    all_cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(all_cores)})  # one core, as run.py's one-thread section
    try:
        with run.pin_threads(1):
            w = workloads.cifar_cnn(with_compile=False)
            assert w.eager is not None and w.ours_compiled is not None
            contenders: dict[str, Any] = {"shapegrad": w.ours, "sg.compile": w.ours_compiled, "torch": w.eager}
            t = run.compare(contenders, 5, args.rounds)
            split = phases(args.rounds * 5) if args.phases else None
    finally:
        os.sched_setaffinity(0, all_cores)
    print(f"{w.name}, one thread, median of {args.rounds} interleaved rounds of 5 steps")
    for name, seconds in t.items():
        print(f"{name:11s} {seconds * 1e3:6.2f} ms   ÷ PyTorch eager {seconds / t['torch']:.3f}")
    print(f"sg.compile ÷ shapegrad eager {t['sg.compile'] / t['shapegrad']:.3f}")
    if split is not None:
        print("per step, ms (forward + loss, backward, update):")
        for name, (f, b, u) in split.items():
            print(f"{name:11s} {f * 1e3:6.2f} {b * 1e3:6.2f} {u * 1e3:6.2f}")


if __name__ == "__main__":
    main()
