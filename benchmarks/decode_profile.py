"""Where the time of one compiled greedy-decoding step goes, and what its matrix products cost
on NumPy's BLAS against XLA's (issue #26: ``sg.compile`` against JAX ``jit`` there).

    python benchmarks/decode_profile.py
    python benchmarks/decode_profile.py --quick   # fewer repeats (CI)

``workloads.greedy_decoding``'s forward pass (``examples/gpt.py``'s model, context 64, batch
1) under ``sg.compile``, replayed with every array function of the replay timed by name;
then each product shape of that replay, timed as ``numpy.matmul`` and inside one
``jax.jit`` executable (32 products per call, so XLA's dispatch is shared), one thread, the
process pinned to one core, medians of interleaved rounds (``run.compare``). The replay is
narrowed to the last position where it can (``Recording.narrowed_operations``): its last
block's products have one row, and XLA, which computes every position, is timed at the
replay's shapes, so the products' total says what each BLAS takes for the same work.
"""

from __future__ import annotations

import collections
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(name, "1")

import numpy as np  # noqa: E402
import run  # noqa: E402
from gpt_torch import gpt  # noqa: E402

import shapegrad as sg  # noqa: E402

QUICK = "--quick" in sys.argv[1:]


def _median(contenders: dict[str, Callable[[], Any]], number: int) -> dict[str, float]:
    """``run.compare``: seconds per call, medians of interleaved rounds (fewer with --quick)."""
    return run.compare(contenders, max(1, number // 50), 3) if QUICK else run.compare(contenders, number, 7)


def replay_by_function() -> tuple[float, dict[str, float], collections.Counter[tuple[Any, ...]], int]:
    """Seconds per replay, seconds per replay by array function, the product shapes and how
    many operations were narrowed."""
    model = gpt.GPT(generator=sg.Generator(0))
    model.eval()
    prompt = np.frombuffer(gpt.corpus()[: gpt.CONTEXT].encode("ascii"), dtype=np.uint8).astype(np.int64)
    forward = sg.compile(lambda ids: model(ids)[0, gpt.CONTEXT - 1].argmax())
    ids = sg.tensor(prompt[None])
    for _ in range(3):
        forward(ids).item()
    whole = _median({"replay": lambda: forward(ids)}, 200)["replay"]
    plan: Any = forward.recordings[0]._plan  # noqa: SLF001 -- a benchmark reads the recording
    spent: dict[str, float] = collections.defaultdict(float)
    shapes: collections.Counter[tuple[Any, ...]] = collections.Counter()

    def timed(fn: Any) -> Any:
        name = getattr(fn, "__name__", type(fn).__name__)

        def call(*args: Any, **kwargs: Any) -> Any:
            if name == "matmul":
                shapes[(args[0].shape, args[1].shape)] += 1
            start = time.perf_counter()
            result = fn(*args, **kwargs)
            spent[name] += time.perf_counter() - start
            return result

        return call

    original = list(plan.functions)
    plan.functions[:] = [timed(f) for f in original]
    calls = 4 if QUICK else 200
    for _ in range(calls):
        forward(ids)
    plan.functions[:] = original
    per_replay = {name: seconds / calls for name, seconds in spent.items()}
    counts = collections.Counter({k: v // calls for k, v in shapes.items()})
    return whole, per_replay, counts, forward.recordings[0].narrowed_operations


def products(shapes: collections.Counter[tuple[Any, ...]]) -> list[tuple[Any, int, float, float | None]]:
    """(shapes, count per replay, NumPy seconds, XLA seconds or None without JAX) per product."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        jax = None
    rows: list[tuple[Any, int, float, float | None]] = []
    rng = np.random.default_rng(0)
    for (left, right), count in shapes.items():
        a = rng.standard_normal(left).astype(np.float32)
        bs = [rng.standard_normal(right).astype(np.float32) for _ in range(32)]
        contenders: dict[str, Callable[[], Any]] = {"numpy": lambda: [np.matmul(a, b) for b in bs]}
        if jax is not None:

            def many(a: Any, bs: list[Any]) -> Any:
                return sum(jnp.sum(a @ b) for b in bs)

            jitted = jax.jit(many)
            ja, jbs = jnp.asarray(a), [jnp.asarray(b) for b in bs]
            contenders["xla"] = lambda: jitted(ja, jbs).block_until_ready()
        times = _median(contenders, 100)
        theirs = times["xla"] / len(bs) if "xla" in times else None
        rows.append(((left, right), count, times["numpy"] / len(bs), theirs))
    return rows


def main() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    whole, by_function, shapes, narrowed = replay_by_function()
    print(f"compiled decoding step: {whole * 1e6:.0f} µs per token (median)")
    print(f"operations narrowed to the last position: {narrowed}")
    print("time per replay by array function (timed one by one, so the sum is a little above):")
    for name, seconds in sorted(by_function.items(), key=lambda kv: -kv[1]):
        print(f"  {name:16s} {seconds * 1e6:8.1f} µs")
    print("the replay's products, one at a time: NumPy (OpenBLAS) and XLA inside one jit")
    total_ours = total_theirs = 0.0
    for (left, right), count, ours, theirs in products(shapes):
        ratio = f"{ours / theirs:.2f}" if theirs else "–"
        xla = f"{theirs * 1e6:.1f} µs" if theirs else "no JAX"
        print(f"  {left} @ {right} × {count}: NumPy {ours * 1e6:.1f} µs, XLA {xla}, NumPy ÷ XLA {ratio}")
        total_ours += ours * count
        total_theirs += (theirs or 0.0) * count
    if total_theirs:
        print(f"products per token: NumPy {total_ours * 1e6:.0f} µs, XLA {total_theirs * 1e6:.0f} µs")
    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")


if __name__ == "__main__":
    main()
