"""What bounds the fixed cost of a recorded op: the 1,000-op chain of ``run.py --per-op``
(``x * a``, ``+ b``, ``tanh``, ``* 0.9`` in turn, 4×4 float32, traced, then its backward pass)
in shapegrad, against the same chain on a bare tape, its NumPy arithmetic alone, and PyTorch.

    python benchmarks/tape_floor.py            # about a minute
    python benchmarks/tape_floor.py --quick    # fewer rounds (CI)

The bare tape is the least a reverse pass in Python can do: each op appends (rule, saved
values, parents) to a list and wraps its result; the backward pass walks the list in reverse,
calls shapegrad's own backward rules (so the arithmetic is the same, array for array) and adds
each input's gradient into its parent. It has none of what shapegrad does beside that: no
write counters (a write into a saved tensor between the forward and the backward pass goes
unseen: a wrong gradient, no error), no tape or thread checks, no merged tapes, no fused
kernels chosen per dtype, no gradient cast to its input's dtype or reduced over broadcast axes,
no ``Gradients`` delivery, no release of saved values, no hooks (anomaly detection,
``sg.compile``'s recording). Its cost beyond the NumPy arithmetic is the floor for this design
of autodiff in Python; shapegrad's beyond that is what those guarantees cost.

One thread, the process pinned to one core, medians of interleaved rounds (``run.compare``).
"""

from __future__ import annotations

import operator
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

import shapegrad as sg  # noqa: E402
from shapegrad.ops.activations import tanh_backward  # noqa: E402
from shapegrad.ops.elementwise import add_backward, mul_backward  # noqa: E402

QUICK = "--quick" in sys.argv[1:]
SHAPE = (4, 4)
BOTH, LEFT = (True, True), (True, False)  # which operands of a binary rule want a gradient


# An entry of the bare tape: [rule, saved values, parent entries, gradient] (a list: the
# least Python there is to build and update); a value on it: (array, the entry that made it).
RULE, SAVED, PARENTS, GRAD = range(4)


def _binary(u: tuple[Any, list[Any]], v: tuple[Any, list[Any]], rule: Any, forward: Any, tape: list[Any]) -> Any:
    out = forward(u[0], v[0])
    entry = [rule, (u[0], v[0], out, BOTH), (u[1], v[1]), None]
    tape.append(entry)
    return out, entry


def bare_chain(x: Any, a: Any, b: Any) -> list[Any]:
    """The chain on the bare tape, then its backward pass; the gradients of x, a and b."""
    leaves: list[list[Any]] = [[None, (), (), None] for _ in range(3)]
    tape: list[list[Any]] = list(leaves)
    h, va, vb = ((v, e) for v, e in zip((x, a, b), leaves, strict=True))
    mul, add, tanh = operator.mul, operator.add, np.tanh
    for _ in range(run.CHAIN_OPS // 4):
        u = _binary(_binary(h, va, mul_backward, mul, tape), vb, add_backward, add, tape)
        t = tanh(u[0])
        t_entry = [tanh_backward, (t,), (u[1],), None]
        tape.append(t_entry)
        out = t * 0.9
        entry = [mul_backward, (t, 0.9, out, LEFT), (t_entry, None), None]
        tape.append(entry)
        h = (out, entry)
    h[1][GRAD] = np.ones_like(h[0])
    for entry in reversed(tape):
        grad = entry[GRAD]
        rule = entry[RULE]
        if grad is None or rule is None:
            continue
        entry[GRAD] = None
        for parent, input_grad in zip(entry[PARENTS], rule(np, grad, *entry[SAVED]), strict=True):
            if parent is not None and input_grad is not None:
                previous = parent[GRAD]
                parent[GRAD] = input_grad if previous is None else previous + input_grad
    return [leaf[GRAD] for leaf in leaves]


def numpy_chain(x: Any, a: Any, b: Any) -> None:
    """The chain's arithmetic alone, forward and backward, with no tape: the products and
    sums the backward rules compute, in NumPy."""
    saved: list[Any] = []
    h = x
    for _ in range(run.CHAIN_OPS // 4):
        t = np.tanh(h * a + b)
        saved.append((h, t))
        h = t * 0.9
    g, ga, gb = np.ones_like(h), np.zeros_like(a), np.zeros_like(b)
    for h, t in reversed(saved):
        g = (g * 0.9) * (1 - t * t)
        gb = gb + g
        ga = ga + g * h
        g = g * a


def measure(number: int, repeat: int) -> dict[str, float]:
    """Microseconds per op of the chain: shapegrad's, the bare tape's, the NumPy arithmetic's
    and PyTorch's (where installed), medians of interleaved rounds; the gradients of shapegrad
    and of the bare tape are checked equal first."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    a = (1 + 0.1 * rng.standard_normal(SHAPE)).astype(np.float32)
    b = (0.1 * rng.standard_normal(SHAPE)).astype(np.float32)
    tx, ta, tb = sg.tensor(x), sg.tensor(a), sg.tensor(b)

    def shapegrad_chain() -> list[Any]:
        grads = sg.Gradients()
        inputs = (tx.trace(grads), ta.trace(grads), tb.trace(grads))
        run.sg_chain(*inputs).sum().backward()
        return [grads[t].numpy() for t in inputs]

    # sum()'s seed of ones is the bare tape's: the same gradients, array for array
    for ours, bare in zip(shapegrad_chain(), bare_chain(x, a, b), strict=True):
        np.testing.assert_allclose(ours, bare, rtol=1e-5, atol=1e-6)
    contenders: dict[str, Callable[[], Any]] = {
        "shapegrad": shapegrad_chain,
        "bare": lambda: bare_chain(x, a, b),
        "numpy": lambda: numpy_chain(x, a, b),
    }
    if run.have_torch():
        import torch

        torch.set_num_threads(1)
        inputs = [torch.from_numpy(v) for v in (x, a, b)]

        def torch_chain() -> None:
            leaves = [v.detach().requires_grad_() for v in inputs]
            run.torch_chain(*leaves).sum().backward()

        contenders["torch"] = torch_chain
    t = run.compare(contenders, number, repeat)
    return {name: seconds / run.CHAIN_OPS * 1e6 for name, seconds in t.items()}


def main() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    per_op = measure(1 if QUICK else 3, 3 if QUICK else 15)
    arithmetic = per_op["numpy"]
    print(f"1,000-op chain on {SHAPE[0]}×{SHAPE[1]} float32, traced with its backward pass, per op (µs):")
    for name, label in (
        ("shapegrad", "shapegrad"),
        ("bare", "bare tape (no checks)"),
        ("torch", "PyTorch"),
        ("numpy", "NumPy arithmetic alone"),
    ):
        if name in per_op:
            beyond = "" if name == "numpy" else f", {per_op[name] - arithmetic:.2f} beyond the arithmetic"
            print(f"  {label}: {per_op[name]:.2f}{beyond}")
    ours, bare = per_op["shapegrad"] - arithmetic, per_op["bare"] - arithmetic
    print(f"shapegrad's bookkeeping ÷ the bare tape's: {ours / bare:.2f} (what its checks and delivery cost)")


if __name__ == "__main__":
    main()
