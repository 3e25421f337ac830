"""shapegrad against PyTorch eager CPU, JAX ``jit`` and hand-written NumPy, in one process run.

    python benchmarks/run.py            # the full run written to benchmarks/RESULTS.md
    python benchmarks/run.py --quick    # a few iterations: proves the benchmark still runs

Each case runs the peers in the same process after warm-up, with BLAS and PyTorch pinned
to the same thread count, and reports medians of several repeats and the ratio
shapegrad ÷ peer (below 1 is faster). Before timing, shapegrad, PyTorch, JAX and NumPy
train from the same initialisation on the same data and must reach the same loss, so that a
fast wrong answer cannot pass. JAX (the optional ``jax`` extra) runs in the one-thread
section only. ``XLA_FLAGS`` alone did not keep jax 0.10 on one core (1.8 cores busy,
measured), so that section runs with the whole process pinned to one core
(``sched_setaffinity``), every framework alike. The BLAS floor is the MLP step's FLOPs at the
sgemm rate measured in the same section. The workloads of issue #26 (``workloads.py``: a
CIFAR-shaped CNN, a hand-written GRU cell, a tiny ViT, a wide MLP, greedy decoding) run in
the one-thread section against PyTorch eager and ``torch.compile`` (inductor, timed in its
steady state after the compile; skipped in ``--quick``, whose point is speed) and, where
JAX is installed, their JAX twins under ``jax.jit`` (``jax_twins.py``, checked the same way,
compiled in their first checked steps; where JAX is absent the column says why). Where the
environment forces OpenBLAS's kernels (``OPENBLAS_CORETYPE``, as on the machines these
figures come from), the workloads run once more in a process without that variable, so that
the tables show NumPy's products on the kernels OpenBLAS would pick for the CPU too; the
header names the kernels each ran on.

    python benchmarks/run.py --workloads-only    # that table alone, one thread
    python benchmarks/run.py --per-op            # the per-op cost alone: a 1,000-op chain, the GRU

The per-op section (one thread) times a chain of 1,000 small element-wise ops traced with its
backward pass against PyTorch with ``requires_grad``, and untraced against PyTorch under
``no_grad``, per op, and the GRU workload beside it.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal as L

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402
import workloads  # noqa: E402

import shapegrad as sg  # noqa: E402
from shapegrad import nn  # noqa: E402

HERE = Path(__file__).resolve().parent


def have_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def pin_threads(n: int) -> Any:
    from threadpoolctl import threadpool_limits

    if have_torch():
        import torch

        torch.set_num_threads(n)
    return threadpool_limits(limits=n)


def balanced_orders(n: int) -> list[list[int]]:
    """Orders of ``n`` contenders in which each directly follows every other equally often
    (a Williams design: n orders for even n, 2n for odd n).

    What runs just before a contender matters on this machine: PyTorch leaves its OpenMP
    threads spinning on the second core and OpenBLAS its workers, which slows whoever comes
    next. A plain rotation of four contenders puts the same one after PyTorch in five of seven
    rounds.
    """
    base = [0]
    low, high = 1, n - 1
    while len(base) < n:
        base.append(low)
        low += 1
        if len(base) < n:
            base.append(high)
            high -= 1
    orders = [[(b + shift) % n for b in base] for shift in range(n)]
    return orders + [order[::-1] for order in orders] if n % 2 else orders


def compare(contenders: dict[str, Callable[[], Any]], number: int, repeat: int) -> dict[str, float]:
    """Seconds per call of each contender: the median over at least ``repeat`` rounds of the
    mean of ``number`` calls. Rounds interleave the contenders, so that a noisy neighbour on
    this shared machine slows all of them alike instead of whichever ran at that moment, in
    orders where every contender follows every other equally often (:func:`balanced_orders`);
    the rounds are a whole number of those orders."""
    for fn in contenders.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    orders = balanced_orders(len(names))
    rounds = -(-repeat // len(orders)) * len(orders)
    for round_ in range(rounds):
        for index in orders[round_ % len(orders)]:
            name = names[index]
            fn = contenders[name]
            start = time.perf_counter()
            for _ in range(number):
                fn()
            times[name].append((time.perf_counter() - start) / number)
    return {name: statistics.median(values) for name, values in times.items()}


# --------------------------------------------------------------------------- models
class MLP(nn.Module):
    def __init__(self, generator: sg.Generator) -> None:
        self.l1 = nn.Linear[L[784], L[256]](generator=generator)
        self.l2 = nn.Linear[L[256], L[256]](generator=generator)
        self.l3 = nn.Linear[L[256], L[10]](generator=generator)

    def __call__(self, x: sg.Tensor[Any, Any, L[784]]) -> sg.Tensor[Any, Any, L[10]]:
        return self.l3(self.l2(self.l1(x).relu()).relu())


def unchecked(model: nn.Module) -> Callable[[Any], Any]:
    """``model``'s own ``__call__`` without the run-time check wrapped around it: the same
    model, parameters and arrays, so that a comparison with ``model(x)`` times only the check
    (two model instances would also compare where their arrays happen to lie in memory)."""
    call = type(model).__call__
    plain = getattr(call, "__wrapped__", call)
    return lambda x: plain(model, x)


class CNN(nn.Module):
    def __init__(self, generator: sg.Generator) -> None:
        self.conv1 = nn.Conv2d[L[1], L[16]](kernel_size=3, padding=1, generator=generator)
        self.conv2 = nn.Conv2d[L[16], L[32]](kernel_size=3, padding=1, generator=generator)
        self.pool = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.head = nn.Linear[L[1568], L[10]](generator=generator)

    def __call__(self, x: Any) -> Any:
        h = self.pool(self.conv1(x).relu())
        h = self.pool(self.conv2(h).relu())
        return self.head(self.flatten(h))


def mlp_data(batch: int = 128, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((batch, 784)).astype(np.float32), rng.integers(0, 10, batch)


def sg_step(model: Any, opt: Any, grads: Any, x: Any, y: Any, forward: Callable[[Any], Any] | None = None) -> float:
    grads.zero()
    loss = sg.losses.cross_entropy((forward or model)(x.trace(grads)), y)
    loss.backward()
    opt.update(model, grads)
    return loss.item()


def mlp_weights(model: MLP) -> list[np.ndarray]:
    return [t.numpy().copy() for _, t in model.named_parameters()]


# --------------------------------------------------------------------------- cases
def sgemm_rate(n: int = 1024, repeat: int = 30) -> float:
    """FLOP/s of a float32 (n × n) @ (n × n) product at the pinned thread count (best of
    ``repeat``: the machine's rate, not its noise; with 5 a burst of a neighbour's load could
    lower it by a third for a whole run)."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(repeat))
    return 2 * n**3 / best


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


MLP_LAYERS = [(784, 256), (256, 256), (256, 10)]  # the MLP's (in, out) per layer


def mlp_step_flops(batch: int) -> int:
    """Matrix-product FLOPs of one MLP step: the forward products, every weight gradient, and
    the input gradients of layers 2 and 3 (the data needs none)."""
    forward = sum(2 * batch * i * o for i, o in MLP_LAYERS)
    return 2 * forward + sum(2 * batch * i * o for i, o in MLP_LAYERS[1:])


def mlp_products(batch: int) -> Callable[[], Any]:
    """The MLP step's matrix products alone, at its shapes and layouts (weights ``(in, out)``):
    what the step would cost with nothing around its GEMMs, on this BLAS."""
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((batch, i)).astype(np.float32) for i, _ in MLP_LAYERS]
    weights = [rng.standard_normal((i, o)).astype(np.float32) for i, o in MLP_LAYERS]
    grads = [rng.standard_normal((batch, o)).astype(np.float32) for _, o in MLP_LAYERS]

    def products() -> None:
        for x, w in zip(inputs, weights, strict=True):
            x @ w
        for k, (x, w, g) in enumerate(zip(inputs, weights, grads, strict=True)):
            x.T @ g
            if k:
                g @ w.T

    return products


def check_same_loss(steps: int) -> dict[str, float]:
    """shapegrad, PyTorch and NumPy from one initialisation on the same batches."""
    model = MLP(sg.Generator(0))
    weights = mlp_weights(model)
    opt, grads = sg.optim.Adam(model, lr=1e-3), model.alloc_grads()
    reference = peers.NumpyMLP(weights)
    x_np, y_np = mlp_data()
    x, y = sg.tensor(x_np), sg.tensor(y_np)
    ours = [sg_step(model, opt, grads, x, y) for _ in range(steps)]
    floor = [reference.step(x_np, y_np) for _ in range(steps)]
    result = {"shapegrad": ours[-1], "numpy": floor[-1]}
    np.testing.assert_allclose(ours, floor, rtol=1e-4, err_msg="shapegrad and hand-written NumPy disagree")
    if have_torch():
        import torch

        tmodel, topt = peers.torch_mlp(weights)
        torch_step = peers.torch_step(tmodel, topt, torch.from_numpy(x_np), torch.from_numpy(y_np))
        theirs = [torch_step() for _ in range(steps)]
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, err_msg="shapegrad and PyTorch disagree")
        result["torch"] = theirs[-1]
    if peers.have_jax() is None:
        jax_step = peers.jax_mlp_step(weights, x_np, y_np)
        jaxs = [jax_step() for _ in range(steps)]
        # XLA fuses and reorders float32 work: near a loss of 0.02 the paths differ by ~3e-6.
        np.testing.assert_allclose(ours, jaxs, rtol=1e-4, atol=1e-5, err_msg="shapegrad and JAX disagree")
        result["jax"] = jaxs[-1]
    return result


def bench_ops(number: int, repeat: int) -> list[tuple[str, float, float | None, float | None]]:
    """Per-op overhead on tiny tensors: (case, shapegrad s, torch s, numpy s)."""
    rows = []
    a_np = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    b_np = np.random.default_rng(1).standard_normal((4, 4)).astype(np.float32)
    a, b = sg.tensor(a_np), sg.tensor(b_np)
    torch_ops: dict[str, Callable[[Any, Any], Any]] = {}
    ops: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
        "x + 1": (lambda x, y: x + 1.0, lambda x, y: x + 1.0),
        "x * y": (lambda x, y: x * y, lambda x, y: x * y),
        "exp": (lambda x, y: x.exp(), lambda x, y: np.exp(x)),
        "matmul 4x4": (lambda x, y: x @ y, lambda x, y: x @ y),
    }
    if have_torch():
        import torch

        ta, tb = torch.from_numpy(a_np), torch.from_numpy(b_np)
        torch_ops = {
            "x + 1": lambda x, y: x + 1.0,
            "x * y": lambda x, y: x * y,
            "exp": lambda x, y: x.exp(),
            "matmul 4x4": lambda x, y: x @ y,
        }
    for name, (op, np_op) in ops.items():
        forward: dict[str, Callable[[], Any]] = {"ours": lambda: op(a, b), "numpy": lambda: np_op(a_np, b_np)}
        if torch_ops:
            forward["torch"] = lambda: torch_ops[name](ta, tb)
        t = compare(forward, number, repeat)
        rows.append((f"{name}, forward", t["ours"], t.get("torch"), t["numpy"]))

        def ours_fb() -> None:
            grads = sg.Gradients()
            op(a.trace(grads), b).sum().backward()

        both: dict[str, Callable[[], Any]] = {"ours": ours_fb}
        if torch_ops:

            def theirs_fb() -> None:
                x = ta.detach().requires_grad_()
                torch_ops[name](x, tb).sum().backward()

            both["torch"] = theirs_fb
        t = compare(both, number, repeat)
        rows.append((f"{name}, forward+backward", t["ours"], t.get("torch"), None))

    def chain_ours() -> None:
        grads = sg.Gradients()
        x = a.trace(grads)
        for _ in range(1000):
            x = x * 1.0001
        x.sum().backward()

    chain: dict[str, Callable[[], Any]] = {"ours": chain_ours}
    if torch_ops:

        def chain_theirs() -> None:
            x = ta.detach().requires_grad_()
            y = x
            for _ in range(1000):
                y = y * 1.0001
            y.sum().backward()

        chain["torch"] = chain_theirs
    t = compare(chain, max(1, number // 200), repeat)
    rows.append(("1,000-op chain + backward", t["ours"], t.get("torch"), None))
    return rows


def bench_mlp_batches(number: int, repeat: int, with_jax: bool) -> list[tuple[int, dict[str, float]]]:
    """The MLP step at batch 8, 128 and 2048: shapegrad, PyTorch, JAX ``jit``."""
    out: list[tuple[int, dict[str, float]]] = []
    for batch in (8, 128, 2048):
        x_np, y_np = mlp_data(batch)
        model = MLP(sg.Generator(0))
        weights = mlp_weights(model)
        opt, grads = sg.optim.Adam(model), model.alloc_grads()
        x, y = sg.tensor(x_np), sg.tensor(y_np)
        contenders: dict[str, Callable[[], Any]] = {
            "shapegrad": lambda: sg_step(model, opt, grads, x, y),
            "products": mlp_products(batch),
        }
        if have_torch():
            import torch

            tmodel, topt = peers.torch_mlp(weights)
            contenders["torch"] = peers.torch_step(tmodel, topt, torch.from_numpy(x_np), torch.from_numpy(y_np))
        if with_jax:
            contenders["jax"] = peers.jax_mlp_step(weights, x_np, y_np)
        calls = max(2, number * 128 // max(batch, 128)) if batch > 128 else number
        out.append((batch, compare(contenders, calls, repeat)))
    return out


def bench_mlp(number: int, repeat: int) -> dict[str, float]:
    x_np, y_np = mlp_data()
    model = MLP(sg.Generator(0))
    weights = mlp_weights(model)
    opt, grads = sg.optim.Adam(model), model.alloc_grads()
    x, y = sg.tensor(x_np), sg.tensor(y_np)
    plain = unchecked(model)
    reference = peers.NumpyMLP(weights)
    contenders: dict[str, Callable[[], Any]] = {
        "shapegrad": lambda: sg_step(model, opt, grads, x, y),
        "shapegrad, checks off": lambda: sg_step(model, opt, grads, x, y, forward=plain),
        "numpy": lambda: reference.step(x_np, y_np),
    }
    if have_torch():
        import torch

        tmodel, topt = peers.torch_mlp(weights)
        contenders["torch"] = peers.torch_step(tmodel, topt, torch.from_numpy(x_np), torch.from_numpy(y_np))
    return compare(contenders, number, repeat)


def bench_cnn(number: int, repeat: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    y_np = rng.integers(0, 10, 64)
    model = CNN(sg.Generator(0))
    opt, grads = sg.optim.Adam(model), model.alloc_grads()
    x, y = sg.tensor(x_np), sg.tensor(y_np)
    contenders: dict[str, Callable[[], Any]] = {"shapegrad": lambda: sg_step(model, opt, grads, x, y)}
    if have_torch():
        import torch

        tmodel, topt = peers.torch_cnn()
        contenders["torch"] = peers.torch_step(tmodel, topt, torch.from_numpy(x_np), torch.from_numpy(y_np))
    return compare(contenders, number, repeat)


def bench_gpt(number: int, repeat: int) -> dict[str, float]:
    """The training step of ``examples/gpt.py`` (2 pre-norm blocks, d 96, 4 heads, ff 384,
    context 64, vocabulary 128, batch 16, AdamW with clipping) against its PyTorch twin."""
    import gpt_torch
    from gpt_torch import gpt

    text = np.frombuffer(gpt.corpus().encode("ascii"), dtype=np.uint8).astype(np.int64)
    x_np, y_np = gpt.windows(text, 16, np.random.default_rng(0))
    model = gpt.GPT(generator=sg.Generator(0))
    opt, grads = sg.optim.AdamW(model, lr=1e-3, clip_norm=1.0), model.alloc_grads()
    x, y = sg.tensor(x_np), sg.tensor(y_np)
    contenders: dict[str, Callable[[], Any]] = {"shapegrad": lambda: sg_step(model, opt, grads, x, y)}
    if have_torch():
        import torch

        tmodel = gpt_torch.torch_gpt(model)
        topt = torch.optim.AdamW(tmodel.parameters(), lr=1e-3)
        tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np)
        contenders["torch"] = lambda: gpt_torch.torch_step(tmodel, topt, tx, ty)
    return compare(contenders, number, repeat)


MEMORY_PROBE = r"""
import sys, numpy as np
sys.path.insert(0, {here!r})
def rss(field):
    for line in open('/proc/self/status'):
        if line.startswith(field):
            return int(line.split()[1]) * 1024
    return 0
framework = {framework!r}
saved = np.load({weights!r})
x_np, y_np = saved['x'], saved['y']
if framework == 'torch':
    # Only PyTorch and NumPy in this process: shapegrad's own imports are not charged to it.
    import peers, torch
    torch.set_num_threads(1)
    tmodel, topt = peers.torch_mlp([saved[f'w{{i}}'] for i in range(6)])
    step = peers.torch_step(tmodel, topt, torch.from_numpy(x_np), torch.from_numpy(y_np))
else:
    import run
    import shapegrad as sg
    model = run.MLP(sg.Generator(0)); opt = sg.optim.Adam(model); grads = model.alloc_grads()
    x, y = sg.tensor(x_np), sg.tensor(y_np)
    def step():
        return run.sg_step(model, opt, grads, x, y)
open('/proc/self/clear_refs', 'w').write('5')
base = rss('VmRSS')
step()
first = rss('VmHWM') - base
open('/proc/self/clear_refs', 'w').write('5')
base = rss('VmRSS')
for _ in range({steps}):
    step()
print(first, rss('VmHWM') - base, rss('VmHWM'))
"""


def bench_memory(steps: int) -> dict[str, tuple[float, float, float]]:
    """Peak resident memory, each framework in its own process holding only itself and NumPy:
    (1) added by the first step over what the process held with its model, optimizer and data
    ready (one-time set-up: lazy initialisation, numba's kernels loaded or compiled), (2) added
    by ``steps`` more steps, (3) the whole process at its peak after them: interpreter,
    libraries, model and every step, the figure a user's machine sees."""
    import tempfile

    out: dict[str, tuple[float, float, float]] = {}
    x_np, y_np = mlp_data()
    with tempfile.TemporaryDirectory() as tmp:
        weights = str(Path(tmp) / "mlp.npz")
        arrays = {f"w{i}": w for i, w in enumerate(mlp_weights(MLP(sg.Generator(0))))}
        np.savez(weights, x=x_np, y=y_np, **arrays)
        for framework in ["shapegrad"] + (["torch"] if have_torch() else []):
            code = MEMORY_PROBE.format(here=str(HERE), framework=framework, steps=steps, weights=weights)
            env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
            result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
            first, steady, whole = result.stdout.strip().splitlines()[-1].split()
            out[framework] = (float(first), float(steady), float(whole))
    return out


# --------------------------------------------------------------------------- per-op cost
CHAIN_OPS = 1000
CHAIN_SHAPES = ((32, 128), (4, 4))  # the brief's small op, and one whose arithmetic is ~nothing


def sg_chain(x: Any, a: Any, b: Any) -> Any:
    """``CHAIN_OPS`` small element-wise ops, four kinds in turn: ``x * a``, ``+ b``,
    ``tanh``, ``* 0.9`` (a tensor-tensor product, a sum, a unary op, a product with a number)."""
    for _ in range(CHAIN_OPS // 4):
        x = (x * a + b).tanh() * 0.9
    return x


def torch_chain(x: Any, a: Any, b: Any) -> Any:
    """:func:`sg_chain` in PyTorch."""
    for _ in range(CHAIN_OPS // 4):
        x = (x * a + b).tanh() * 0.9
    return x


# case, shapegrad, PyTorch (seconds per op)
PerOpRow = tuple[str, float, float | None]


def bench_per_op(number: int, repeat: int) -> list[PerOpRow]:
    """The fixed cost of an op: a chain of ``CHAIN_OPS`` small element-wise ops, traced with
    its backward pass (PyTorch: ``requires_grad`` on the three inputs) and untraced (PyTorch:
    ``no_grad``), per op. The traced chain's gradients are checked against PyTorch's first."""
    rows: list[PerOpRow] = []
    for shape in CHAIN_SHAPES:
        rng = np.random.default_rng(0)
        x_np = rng.standard_normal(shape).astype(np.float32)
        a_np = (1 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        b_np = (0.1 * rng.standard_normal(shape)).astype(np.float32)
        x, a, b = sg.tensor(x_np), sg.tensor(a_np), sg.tensor(b_np)

        def traced(x: Any = x, a: Any = a, b: Any = b) -> Any:
            grads = sg.Gradients()
            inputs = (x.trace(grads), a.trace(grads), b.trace(grads))
            sg_chain(*inputs).sum().backward()
            return [grads[t].numpy() for t in inputs]

        def untraced(x: Any = x, a: Any = a, b: Any = b) -> Any:
            return sg_chain(x, a, b)

        both: dict[str, Callable[[], Any]] = {"ours": traced}
        plain: dict[str, Callable[[], Any]] = {"ours": untraced}
        if have_torch():
            import torch

            tx, ta, tb = (torch.from_numpy(v) for v in (x_np, a_np, b_np))

            def torch_traced(tx: Any = tx, ta: Any = ta, tb: Any = tb) -> Any:
                inputs = [v.detach().requires_grad_() for v in (tx, ta, tb)]
                torch_chain(*inputs).sum().backward()
                return [v.grad.numpy() for v in inputs]

            def torch_untraced(tx: Any = tx, ta: Any = ta, tb: Any = tb) -> Any:
                with torch.no_grad():
                    return torch_chain(tx, ta, tb)

            for ours_grad, their_grad in zip(traced(), torch_traced(), strict=True):
                np.testing.assert_allclose(ours_grad, their_grad, rtol=1e-4, atol=1e-6)
            both["torch"], plain["torch"] = torch_traced, torch_untraced
        size = "×".join(map(str, shape))
        for label, contenders in (("traced + backward", both), ("untraced (PyTorch: no_grad)", plain)):
            t = compare(contenders, number, repeat)
            theirs = t.get("torch")
            rows.append((f"{size}, {label}", t["ours"] / CHAIN_OPS, None if theirs is None else theirs / CHAIN_OPS))
    return rows


def per_op_table(rows: list[PerOpRow]) -> list[str]:
    out = ["| 1,000-op chain | shapegrad per op | PyTorch per op | ÷ PyTorch |", "| --- | ---: | ---: | ---: |"]
    for name, ours, theirs in rows:
        out.append(f"| {name} | {ours * 1e6:.2f} µs | {us(theirs)} | {ratio(ours, theirs)} |")
    return out


def emit_per_op(emit: Callable[[str], None], quick: bool) -> None:
    """The per-op section at one thread: the chain, then the GRU workload (the small-op model)."""
    emit()
    emit("## Per-op cost, 1 thread")
    emit()
    emit(
        f"a chain of {CHAIN_OPS:,} element-wise ops (x * a, + b, tanh, * 0.9 in turn) on float32, "
        "per op: traced with its backward pass (gradients checked against PyTorch's first), and untraced"
    )
    emit()
    number, repeat = (1, 3) if quick else (3, 15)
    with pin_threads(1):
        rows = bench_per_op(number, repeat)
        gru = None
        if have_torch():
            w = workloads.hand_gru(with_compile=False)
            assert w.eager is not None
            gru = compare({"shapegrad": w.ours, "torch": w.eager}, 1 if quick else 3, repeat)
    for line in per_op_table(rows):
        emit(line)
    import tape_floor  # (it imports this module: not at the top)

    with pin_threads(1):
        floor = tape_floor.measure(number, repeat)
    arithmetic = floor["numpy"]
    emit()
    emit(
        f"- what bounds the 4×4 chain (`benchmarks/tape_floor.py`): beyond its NumPy arithmetic "
        f"({arithmetic:.2f} µs per op), shapegrad takes {floor['shapegrad'] - arithmetic:.2f} µs per op, a bare "
        f"tape calling the same rules with none of its checks {floor['bare'] - arithmetic:.2f} µs "
        f"(÷ {(floor['shapegrad'] - arithmetic) / (floor['bare'] - arithmetic):.2f})"
    )
    if gru is not None:
        emit()
        emit(
            f"- GRU cell × 24 steps (the workload): shapegrad {us(gru['shapegrad'])}, PyTorch eager "
            f"{us(gru['torch'])}, ÷ eager {ratio(gru['shapegrad'], gru['torch'])}"
        )
    import gru_op_cost  # (it imports this module: not at the top)

    with pin_threads(1):
        cost = gru_op_cost.measure(8, 4, 1 if quick else 5, repeat)
    ops = cost["ops"]
    line = (
        f"- the same GRU at hidden 8, batch 4 (`benchmarks/gru_op_cost.py`), per recorded op beyond the step's NumPy "
        f"arithmetic ({ops:.0f} ops, their backward pass and Adam): shapegrad {(cost['shapegrad'] - cost['numpy']) / ops * 1e6:.2f} µs"
    )
    if "torch" in cost:
        line += (
            f", PyTorch eager {(cost['torch'] - cost['numpy']) / ops * 1e6:.2f} µs "
            f"(÷ {(cost['shapegrad'] - cost['numpy']) / (cost['torch'] - cost['numpy']):.2f})"
        )
    emit()
    emit(line)


# workload, shapegrad, PyTorch eager, torch.compile, JAX jit, BLAS floor (seconds); why no
# compile column; why no JAX column
WorkloadRow = tuple[str, float, float | None, float | None, float | None, float | None, str | None, str | None]


def bench_workloads(quick: bool, number: int, repeat: int) -> tuple[list[WorkloadRow], list[str]]:
    """Issue #26's workloads at the pinned thread count, each checked against its PyTorch
    twin first (``workloads.py``), and its JAX twin (checked the same way) where JAX is
    installed; the rows and notes (compile times, reasons)."""
    rows: list[WorkloadRow] = []
    notes: list[str] = []
    for w in workloads.build_all(with_compile=not quick, sgemm_rate=sgemm_rate()):
        contenders: dict[str, Callable[[], Any]] = {"shapegrad": w.ours}
        if w.ours_compiled is not None:
            contenders["sg.compile"] = w.ours_compiled
        if w.eager is not None:
            contenders["torch"] = w.eager
        reason = w.compiled if isinstance(w.compiled, str) else None
        if not isinstance(w.compiled, str):
            contenders["torch.compile"] = w.compiled
        jax_reason = w.jax if isinstance(w.jax, str) else None
        if w.jax is not None and not isinstance(w.jax, str):
            contenders["jax"] = w.jax
        t = compare(contenders, number, repeat)
        peers_t = (t.get("torch"), t.get("torch.compile"), t.get("jax"), w.floor)
        rows.append((w.name, t["shapegrad"], *peers_t, reason, jax_reason))
        if "sg.compile" in t:
            rows.append((f"{w.name} — sg.compile", t["sg.compile"], *peers_t, reason, jax_reason))
            notes.append(f"{w.name}: sg.compile ÷ shapegrad eager {t['sg.compile'] / t['shapegrad']:.2f}")
        notes += w.notes
    return rows, notes


def workload_table(rows: list[WorkloadRow]) -> list[str]:
    out = [
        "| workload | shapegrad | PyTorch eager | torch.compile | JAX jit | BLAS floor | ÷ eager | ÷ compile "
        "| ÷ JAX | ÷ floor |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, ours, eager, compiled, jax, floor, *_ in rows:
        out.append(
            f"| {name} | {us(ours)} | {us(eager)} | {us(compiled)} | {us(jax)} | {us(floor)} | {ratio(ours, eager)} | "
            f"{ratio(ours, compiled)} | {ratio(ours, jax)} | {ratio(ours, floor)} |"
        )
    return out


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a is not None and b else "–"


def us(t: float | None) -> str:
    return "–" if t is None else f"{t * 1e6:,.1f} µs" if t < 1e-3 else f"{t * 1e3:,.2f} ms"


DISTRIBUTED_HEADING = "# Data-parallel training"
# case, shapegrad, PyTorch, NumPy (in the batch table: the BLAS floor), JAX jit (seconds)
Row = tuple[str, float | None, float | None, float | None, float | None]
# name, shapegrad, PyTorch, BLAS floor, JAX, the step's matrix products alone
BatchRow = tuple[str, float | None, float | None, float | None, float | None, float | None]


def measure(threads: int, n_ops: int, n_step: int, repeat: int, with_jax: bool) -> tuple[list[Row], list[BatchRow]]:
    """Every timed case at one thread count: the main table and the MLP-by-batch table."""
    with pin_threads(threads):
        rows: list[Row] = [(*r, None) for r in bench_ops(n_ops, repeat)]
        mlp = bench_mlp(n_step, repeat)
        rows.append(
            ("MLP step 784-256-256-10, batch 128, Adam", mlp["shapegrad"], mlp.get("torch"), mlp["numpy"], None)
        )
        rows.append(("same MLP step, run-time checks off", mlp["shapegrad, checks off"], None, None, None))
        # The model steps take 15–40 ms: rounds of fewer steps, twice as many rounds, so that a
        # burst of a neighbour's load spoils fewer of the rounds the median is taken over.
        model_steps, model_rounds = max(2, n_step // 10), 2 * repeat + 1
        cnn = bench_cnn(model_steps, model_rounds)
        rows.append(("CNN step, 2×conv3×3, 28×28, batch 64, Adam", cnn["shapegrad"], cnn.get("torch"), None, None))
        lm = bench_gpt(model_steps, model_rounds)
        rows.append(
            ("GPT step (examples/gpt.py), batch 16 × 64 chars, AdamW", lm["shapegrad"], lm.get("torch"), None, None)
        )
        rate = sgemm_rate()
        by_batch: list[BatchRow] = [
            (
                f"MLP step, batch {b}",
                t["shapegrad"],
                t.get("torch"),
                mlp_step_flops(b) / rate,
                t.get("jax"),
                t["products"],
            )
            for b, t in bench_mlp_batches(n_step, repeat, with_jax)
        ]
    return rows, by_batch


def median_time(runs: list[list[Any]], i: int, k: int) -> float | None:
    """Row ``i``, column ``k``: the median over whole runs (each itself a median of rounds)."""
    present = [run[i][k] for run in runs if run[i][k] is not None]
    return statistics.median(present) if present else None


def median_ratio(runs: list[list[Any]], top: tuple[int, int], bottom: tuple[int, int]) -> str:
    """The median over whole runs of each run's own ratio: a ratio pairs two figures of one
    run, whose absolute speed this shared machine moves by ±15 % from run to run."""
    values: list[float] = []
    for run in runs:
        numerator, denominator = run[top[0]][top[1]], run[bottom[0]][bottom[1]]
        if numerator is not None and denominator:
            values.append(numerator / denominator)
    return f"{statistics.median(values):.2f}" if values else "–"


def batch_table(runs: list[list[BatchRow]]) -> list[str]:
    out = [
        "| case | shapegrad | PyTorch | JAX jit | BLAS floor | products alone | ÷ PyTorch | ÷ JAX | ÷ floor "
        "| products ÷ floor |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for i, row in enumerate(runs[0]):
        ours, theirs, floor, jax, products = (median_time(runs, i, k) for k in range(1, 6))
        out.append(
            f"| {row[0]} | {us(ours)} | {us(theirs)} | {us(jax)} | {us(floor)} | {us(products)} | "
            f"{median_ratio(runs, (i, 1), (i, 2))} | {median_ratio(runs, (i, 1), (i, 4))} | "
            f"{median_ratio(runs, (i, 1), (i, 3))} | {median_ratio(runs, (i, 5), (i, 3))} |"
        )
    return out


def table(runs: list[list[Row]]) -> list[str]:
    out = ["| case | shapegrad | PyTorch | NumPy | ÷ PyTorch | ÷ NumPy |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    checked = next(i for i, r in enumerate(runs[0]) if r[0].startswith("MLP step"))
    for i, row in enumerate(runs[0]):
        ours, theirs, floor = (median_time(runs, i, k) for k in range(1, 4))
        if row[0].startswith("same MLP step"):
            out.append(f"| {row[0]} | {us(ours)} | | | | checks on ÷ off: {median_ratio(runs, (checked, 1), (i, 1))} |")
        else:
            out.append(
                f"| {row[0]} | {us(ours)} | {us(theirs)} | {us(floor)} | {median_ratio(runs, (i, 1), (i, 2))} | "
                f"{median_ratio(runs, (i, 1), (i, 3))} |"
            )
    return out


WORKLOADS_HEADING = "## Workloads of issue #26, 1 thread"


def emit_workloads(emit: Callable[[str], None], quick: bool) -> None:
    """Issue #26's workloads at one thread, as a table and its notes."""
    emit()
    emit(WORKLOADS_HEADING)
    emit()
    if not have_torch():
        emit("skipped: PyTorch is absent (each workload is checked against its PyTorch twin)")
        return
    # The steps take 10-200 ms: few per round; in --quick one per round, three rounds.
    number, repeat = (1, 3) if quick else (3, 12)
    with pin_threads(1):
        rows, notes = bench_workloads(quick, number, repeat)
    emit(
        "each checked first: the same losses over its first steps as PyTorch from the same weights "
        "(decoding: the same tokens); torch.compile compiles the model (the optimizer eager) and is "
        "timed after its compile; JAX jit: the twin in jax.numpy from the same weights, the whole "
        "step jitted (optax's Adam; decoding: the forward pass and argmax), checked the same way and "
        "timed after its compile"
    )
    emit()
    for line in workload_table(rows):
        emit(line)
    reasons = [f"torch.compile column: {r}" for r in sorted({row[6] for row in rows if row[6] is not None})]
    reasons += [f"JAX jit column: {r}" for r in sorted({row[7] for row in rows if row[7] is not None})]
    emit()
    for line in reasons + notes:
        emit(f"- {line}")


def emit_own_kernels(emit: Callable[[str], None], quick: bool) -> None:
    """Where the environment forces OpenBLAS's kernels (``OPENBLAS_CORETYPE``), the workloads
    again in a process without it: OpenBLAS's own choice for this CPU. Same checks, same
    peers; only NumPy's matrix products change (PyTorch and XLA bring their own)."""
    forced = os.environ.get("OPENBLAS_CORETYPE")
    if not forced:
        return
    emit()
    emit("## Workloads of issue #26, 1 thread, OpenBLAS's own kernel choice")
    emit()
    if quick:
        emit("skipped in --quick (a second process running every workload)")
        return
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    command = [sys.executable, str(HERE / "run.py"), "--workloads-only"]
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    output = result.stdout.splitlines()
    kernels = next((line.removeprefix("BLAS: ") for line in output if line.startswith("BLAS: ")), "unknown")
    emit(
        f"the environment sets OPENBLAS_CORETYPE={forced}; the same workloads in a process without it "
        f"(BLAS: {kernels}), NumPy's products on the kernels OpenBLAS picks for this CPU:"
    )
    for line in output[output.index(WORKLOADS_HEADING) + 1 :]:
        emit(line)


def blas_line() -> str:
    """NumPy's BLAS kernels, and the variable that chose them if the environment set one."""
    forced = os.environ.get("OPENBLAS_CORETYPE")
    return f"OpenBLAS, {peers.blas_kernels()} kernels" + (f" (OPENBLAS_CORETYPE={forced})" if forced else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a few iterations (CI)")
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--runs", type=int, default=1, help="whole runs; the tables report the median of them")
    parser.add_argument("--write", action="store_true", help="write benchmarks/RESULTS.md")
    parser.add_argument("--workloads-only", action="store_true", help="issue #26's workloads alone, one thread")
    parser.add_argument("--per-op", action="store_true", help="the per-op cost (a 1,000-op chain, the GRU) alone")
    args = parser.parse_args()
    if (args.workloads_only or args.per_op) and args.write:
        parser.error("--write rewrites RESULTS.md from a whole run: not with --workloads-only or --per-op")
    n_ops, n_step, repeat = (50, 3, 3) if args.quick else (2000, 30, 7)
    lines: list[str] = []

    def emit(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    torch_version = "absent (PyTorch columns empty)"
    if have_torch():
        import torch  # imported before timing so that its threads are pinned too

        torch_version = torch.__version__
    emit(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.processor() or 'cpu'}, Python {platform.python_version()}, "
        f"numpy {np.__version__}, torch {torch_version}, shapegrad {sg.__version__}"
    )
    emit(f"BLAS: {blas_line()}")
    flags = (" --quick" if args.quick else "") + (f" --runs {args.runs}" if args.runs > 1 else "")
    emit(f"command: python benchmarks/run.py{flags}")
    emit(
        f"each time: median of at least {repeat} interleaved rounds, in orders where every contender "
        "follows every other equally often"
        + (
            f"; tables: times the median of {args.runs} whole runs, ratios the median of each run's own ratio"
            if args.runs > 1
            else ""
        )
    )
    jax_missing = peers.have_jax()
    all_cores = os.sched_getaffinity(0)
    if jax_missing is None and 1 in args.threads:
        # Before the first import of jax, so that XLA's threads are created on that core too.
        os.environ["XLA_FLAGS"] = peers.XLA_ONE_THREAD
        os.sched_setaffinity(0, {min(all_cores)})
    emit("JAX: " + (jax_missing or "jax jit, in the one-thread section only (the process pinned to one core)"))
    if args.workloads_only or args.per_op:
        if args.per_op:
            emit_per_op(emit, args.quick)
        if args.workloads_only:
            emit_workloads(emit, args.quick)
        os.sched_setaffinity(0, all_cores)
        return
    losses = check_same_loss(5 if args.quick else 20)
    emit("same initialisation, same batches, final loss: " + ", ".join(f"{k} {v:.6f}" for k, v in losses.items()))
    for threads in sorted(args.threads):  # one thread first: the pinned section
        runs: list[list[Row]] = []
        batch_runs: list[list[BatchRow]] = []
        for run in range(args.runs):
            rows, by_batch = measure(threads, n_ops, n_step, repeat, jax_missing is None and threads == 1)
            runs.append(rows)
            batch_runs.append(by_batch)
            if args.runs > 1:
                print(
                    f"[{threads} thread(s), run {run + 1}/{args.runs}]",
                    *table([rows]),
                    *batch_table([by_batch]),
                    sep="\n",
                )
        emit()
        emit(f"## {threads} thread{'s' if threads > 1 else ''}")
        emit()
        for line in table(runs):
            emit(line)
        emit()
        emit(
            "MLP step by batch (BLAS floor: the step's matrix-product FLOPs at the measured sgemm rate; "
            "products alone: those products timed at the step's shapes, nothing around them):"
        )
        emit()
        for line in batch_table(batch_runs):
            emit(line)
        if threads == 1:
            emit_per_op(emit, args.quick)
            emit_workloads(emit, args.quick)
            emit_own_kernels(emit, args.quick)
        os.sched_setaffinity(0, all_cores)
    steps = 20 if args.quick else 200
    memory = bench_memory(steps)

    def memory_line(label: str, which: int) -> str:
        values = {k: v[which] for k, v in memory.items()}
        line = f"{label}: " + ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in values.items())
        if values.get("torch"):
            line += f", ratio {values['shapegrad'] / values['torch']:.2f}"
        return line

    emit()
    emit("peak resident memory of the MLP step (own process each, VmHWM over what the ready process held):")
    emit()
    emit("- " + memory_line("first step (one-time: lazy set-up, numba kernels loaded or compiled)", 0))
    emit("- " + memory_line(f"added by {steps} further steps", 1))
    emit("- " + memory_line(f"whole process at its peak after {steps + 1} steps (interpreter, libraries, model)", 2))
    if args.write:
        # Sections other benchmarks append (distributed.py's) are kept.
        path = HERE / "RESULTS.md"
        old = path.read_text() if path.exists() else ""
        kept = old[old.index(DISTRIBUTED_HEADING) :] if DISTRIBUTED_HEADING in old else ""
        path.write_text("# Benchmark results\n\n" + "\n".join(lines) + "\n" + ("\n\n" + kept if kept else ""))


if __name__ == "__main__":
    main()
