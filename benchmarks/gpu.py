"""A short training benchmark on the CuPy backend against PyTorch CUDA, on an NVIDIA GPU.

    SHAPEGRAD_BACKEND=cupy python benchmarks/gpu.py

Times the same MLP step as ``run.py`` at a GPU-sized batch, after warm-up, synchronising
the device before reading the clock, and checks that both frameworks reach the same loss
from one initialisation. Then the step under ``sg.compile`` against eager (the same losses
first) and against ``torch.compile`` on CUDA, at batch 64 and the large batch, saying
whether the compiled step replayed or ran eagerly and why (a CuPy replay is not built yet:
the row measures that fallback until it is).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402
import run  # noqa: E402
import workloads  # noqa: E402

import shapegrad as sg  # noqa: E402


def timed(fn: Any, sync: Any, number: int = 50, repeat: int = 5) -> float:
    """Median seconds per call of ``fn`` over ``repeat`` rounds of ``number`` calls."""
    for _ in range(3):
        fn()
    sync()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


class Composed:
    """A backend with its fused kernels hidden: ops and optimizers fall back to their ``xp``
    math, launch by launch, which is what the fused kernels are measured against."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.name, self.xp = inner.name, inner.xp

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def fused_kernel(self, name: str, dtype: Any) -> None:
        return None


# The op table's rows with a fused CuPy kernel (tests/support/op_table.py, shared with the tests).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.op_table import OPS  # noqa: E402

ACTIVATIONS: dict[str, Any] = {op.name: op.fn for op in OPS if op.kernel}


def fused_speedups(
    backend: Any, sync: Any, shape: tuple[int, int] = (4096, 4096), number: int = 20, repeat: int = 5
) -> dict[str, float]:
    """Composed time ÷ fused time for each activation's forward+backward and for an Adam
    step on a ``shape`` float32 parameter (above 1: the fused kernels pay)."""
    data = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    speedups: dict[str, float] = {}
    for name, fn in ACTIVATIONS.items():
        times = []
        for variant in (Composed(backend), backend):
            with sg.use_backend(variant):
                x = sg.tensor(data)

                def step(fn: Any = fn, x: Any = x) -> None:
                    grads = sg.Gradients()
                    fn(x.trace(grads)).sum().backward()

                times.append(timed(step, sync, number, repeat))
        speedups[f"{name} forward+backward"] = times[0] / times[1]
    times = []
    for variant in (Composed(backend), backend):
        with sg.use_backend(variant):
            layer = sg.nn.Linear(shape[1], shape[0])
            opt, grads = sg.optim.Adam(layer), layer.alloc_grads()
            layer(sg.tensor(data[:8]).trace(grads)).sum().backward()
            times.append(
                timed(lambda opt=opt, layer=layer, grads=grads: opt.update(layer, grads), sync, number, repeat)
            )
    speedups["Adam update"] = times[0] / times[1]
    return speedups


def compiled_row(backend: Any, sync: Any, batch: int, number: int = 50, repeat: int = 5) -> dict[str, Any]:
    """The MLP step on ``backend`` eagerly and under ``sg.compile``, from the same weights:
    their losses over 5 steps (which must agree), seconds per step of each, and why the
    compiled step ran eagerly if it did (``reason``: None where it replays)."""
    import warnings

    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((batch, 784)).astype(np.float32)
    y_np = rng.integers(0, 10, batch)
    with sg.use_backend(backend):
        x, y = sg.tensor(x_np), sg.tensor(y_np)
        steps: list[Any] = []
        for _ in range(2):
            model = run.MLP(sg.Generator(0))
            steps.append(workloads.sg_train_step(model, x, y))
        eager, compiled = steps[0], sg.compile(steps[1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.CompileWarning)  # the reason is reported below
            losses = [(eager().item(), compiled().item()) for _ in range(5)]
        mine, twin = zip(*losses, strict=True)
        np.testing.assert_allclose(twin, mine, rtol=1e-5, err_msg="sg.compile and eager disagree")
        return {
            "eager": timed(eager, sync, number, repeat),
            "compiled": timed(compiled, sync, number, repeat),
            "reason": compiled.eager_reason,
        }


def host_profile(step: Any, sync: Any, steps: int = 200, rows: int = 25) -> None:
    """The host's own time in ``step`` by function (cProfile, the heaviest ``rows``), printed:
    where a launch-bound step's milliseconds go."""
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        step()
    sync()
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(rows)
    print(f"host profile of {steps} eager CuPy steps, batch 64 (cProfile, by own time):")
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:6000])


def launch_profile(backend: Any, sync: Any, batch: int = 64) -> dict[str, float]:
    """What bounds a small-batch step on the GPU, in seconds: the MLP step eagerly on CuPy and
    on the NumPy backend of the same host (its Python and tape work, with host arithmetic too
    small to count), and the host cost of one launch: ``x + y`` on one element through
    shapegrad, through CuPy alone and through PyTorch CUDA."""
    import cupy as cp
    import torch

    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((batch, 784)).astype(np.float32)
    y_np = rng.integers(0, 10, batch)
    found: dict[str, float] = {}
    for name in ("cupy", "numpy"):
        with sg.use_backend(name):
            model = run.MLP(sg.Generator(0))
            step = workloads.sg_train_step(model, sg.tensor(x_np), sg.tensor(y_np))
            found[f"step on {name}"] = timed(step, sync if name == "cupy" else lambda: None)
            if name == "cupy":
                host_profile(step, sync)
    twin, _ = peers.torch_mlp(run.mlp_weights(run.MLP(sg.Generator(0))))
    twin = twin.cuda()
    torch_opt = torch.optim.Adam(twin.parameters(), lr=1e-3)
    tx, ty = torch.from_numpy(x_np).cuda(), torch.from_numpy(y_np).cuda()

    def torch_step() -> None:
        torch_opt.zero_grad()
        torch.nn.functional.cross_entropy(twin(tx), ty).backward()
        torch_opt.step()

    found["torch step"] = timed(torch_step, torch.cuda.synchronize)
    a, b = sg.tensor(np.ones(1, np.float32)).to(backend), sg.tensor(np.ones(1, np.float32)).to(backend)
    found["shapegrad x + y"] = timed(lambda: a + b, sync, 2000)
    ca, cb = cp.ones(1, cp.float32), cp.ones(1, cp.float32)
    found["cupy x + y"] = timed(lambda: ca + cb, sync, 2000)
    ta, tb = torch.ones(1, device="cuda"), torch.ones(1, device="cuda")
    found["torch x + y"] = timed(lambda: ta + tb, torch.cuda.synchronize, 2000)
    return found


def main() -> None:
    import cupy as cp
    import torch

    backend = sg.set_backend("cupy")
    print(sg.backend_info())
    batch = 4096
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((batch, 784)).astype(np.float32)
    y_np = rng.integers(0, 10, batch)
    model = run.MLP(sg.Generator(0))
    weights = run.mlp_weights(model)
    opt, grads = sg.optim.Adam(model), model.alloc_grads()
    x, y = sg.tensor(x_np), sg.tensor(y_np)
    tmodel, topt = peers.torch_mlp(weights)
    tmodel = tmodel.cuda()
    topt = torch.optim.Adam(tmodel.parameters(), lr=1e-3)
    torch_step = peers.torch_step(tmodel, topt, torch.from_numpy(x_np).cuda(), torch.from_numpy(y_np).cuda())

    ours = [run.sg_step(model, opt, grads, x, y) for _ in range(10)]
    theirs = [torch_step() for _ in range(10)]
    np.testing.assert_allclose(ours, theirs, rtol=2e-3, err_msg="CuPy backend and PyTorch CUDA disagree")
    pool = cp.get_default_memory_pool()
    ms = timed(lambda: run.sg_step(model, opt, grads, x, y), cp.cuda.Device().synchronize)
    tms = timed(torch_step, torch.cuda.synchronize)
    print(
        f"MLP step, batch {batch}: shapegrad/cupy {ms * 1e3:.3f} ms, torch cuda {tms * 1e3:.3f} ms, ratio {ms / tms:.2f}"
    )
    sync = cp.cuda.Device().synchronize
    for small in (64, batch):  # a small batch (launch-bound, where a replay matters most) and the large one
        row = compiled_row(backend, sync, small)
        how = "replayed" if row["reason"] is None else f"ran eagerly: {row['reason']}"
        print(
            f"MLP step, batch {small}: sg.compile {row['compiled'] * 1e3:.3f} ms ({how}), eager "
            f"{row['eager'] * 1e3:.3f} ms, sg.compile ÷ eager {row['compiled'] / row['eager']:.2f}"
        )
        twin, _ = peers.torch_mlp(weights)
        twin = twin.cuda()
        xs = torch.from_numpy(rng.standard_normal((small, 784)).astype(np.float32)).cuda()
        ys = torch.from_numpy(rng.integers(0, 10, small)).cuda()
        try:
            compiled_torch = peers.torch_step(torch.compile(twin), torch.optim.Adam(twin.parameters(), lr=1e-3), xs, ys)
            tcs = timed(compiled_torch, torch.cuda.synchronize)
            print(
                f"MLP step, batch {small}: torch.compile (CUDA) {tcs * 1e3:.3f} ms, sg.compile ÷ it {row['compiled'] / tcs:.2f}"
            )
        except Exception as error:  # noqa: BLE001 -- reported, not fatal: inductor may lack triton here
            print(f"MLP step, batch {small}: torch.compile failed: {type(error).__name__}: {str(error)[:120]}")
    profile = launch_profile(backend, sync)
    print(
        "what bounds the batch-64 step: eager on CuPy {:.3f} ms (PyTorch CUDA eager {:.3f} ms), the same step on "
        "the NumPy backend of this host {:.3f} ms; one launch from the host: shapegrad x + y {:.1f} µs, CuPy alone "
        "{:.1f} µs, PyTorch CUDA {:.1f} µs".format(
            profile["step on cupy"] * 1e3,
            profile["torch step"] * 1e3,
            profile["step on numpy"] * 1e3,
            profile["shapegrad x + y"] * 1e6,
            profile["cupy x + y"] * 1e6,
            profile["torch x + y"] * 1e6,
        )
    )
    for name, speedup in fused_speedups(backend, sync).items():
        print(f"fused kernels, 4096x4096 float32, {name}: composed ÷ fused {speedup:.2f}")
    print(
        f"CuPy pool in use {backend.memory_in_use() / 2**20:.1f} MiB, held {pool.total_bytes() / 2**20:.1f} MiB; backend {backend.name}"
    )


if __name__ == "__main__":
    main()
