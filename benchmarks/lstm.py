"""``sg.nn.LSTM`` against ``torch.nn.LSTM`` on one CPU thread (issue #25).

    python benchmarks/lstm.py            # 2 layers, batch 32, 64 steps, 128 inputs, hidden 128
    python benchmarks/lstm.py --quick    # a few rounds of a smaller case: proves it still runs
    python benchmarks/lstm.py --profile  # first, where shapegrad's step spends its time

One step is a forward and backward pass of a 2-layer LSTM (``batch_first``) from the same
weights and input, with the sum of the output as the loss. Both run in this process, pinned to
one thread (``torch.set_num_threads(1)``, threadpoolctl for NumPy's BLAS), in interleaved
rounds (shapegrad then PyTorch, then the other way round), after a warm-up that also checks
that both give the same loss and input gradient. Reported: each one's median time per step and
the median of the per-round ratios shapegrad ÷ PyTorch (below 1 is faster).

Measured (a shared 2-core AMD EPYC, torch 2.13, 20 rounds a run): 1.17× PyTorch, the median
of six runs (1.10-1.22); the previous version gave 1.26-1.31 in the same session. PyTorch
runs oneDNN's fused LSTM (``mkldnn_rnn_layer``), whose whole step costs about what the step's
matrix products alone cost on either library's BLAS. ``--profile`` (same machine): the
products are 74 % of shapegrad's step (32 of 43 ms; PyTorch's whole step was 38), the
recurrences' element-wise work (one numba call per step each way, with the vectorised
float32 tanh) 11 %, and the rest (the input projection's bias and copies, the tape, slicing
the result) 15 %. Per step and layer the numba calls take 14 µs forward and 16 µs backward
against 57 and 49 µs for the two products; they read the step's slices of the saved gates
and the projection from memory. Measured and left: the step loop inside numba (numba's
``np.dot`` calls SciPy's BLAS, 2.5× slower here per product, and SciPy is no dependency),
fewer Python calls per step (1.3 µs per step of slicing and dispatch: under 1 %), the two
weight-gradient products as one (no faster), the bias folded into the step (0.5 %).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import pin_threads  # noqa: E402

import shapegrad as sg  # noqa: E402
from shapegrad import nn  # noqa: E402


def build(batch: int, steps: int, features: int, hidden: int, layers: int) -> tuple[Any, Any, Any, Any]:
    """The torch layer, a shapegrad layer holding a copy of its weights, and the input twice."""
    import torch

    torch.manual_seed(0)
    reference = torch.nn.LSTM(features, hidden, num_layers=layers, batch_first=True)
    layer = nn.LSTM(features, hidden, layers)
    for name, value in reference.named_parameters():
        setattr(layer, name, nn.parameter(sg.tensor(value.detach().numpy())))
    x = np.random.default_rng(0).standard_normal((batch, steps, features)).astype(np.float32)
    return reference, layer, x, torch.tensor(x, requires_grad=True)


def shapegrad_step(layer: Any, x: np.ndarray) -> tuple[float, np.ndarray]:
    grads = layer.alloc_grads()
    traced = sg.tensor(x).trace(grads, keep_grad=True)
    out, _ = layer(traced)
    loss = out.sum()
    loss.backward()
    return loss.item(), grads[traced].numpy()


def torch_step(reference: Any, x: Any) -> tuple[float, np.ndarray]:
    reference.zero_grad()
    x.grad = None
    out, _ = reference(x)
    loss = out.sum()
    loss.backward()
    return loss.item(), x.grad.numpy()


def _products(layer: Any, x: np.ndarray) -> dict[str, Callable[[], object]]:
    """Each matrix product of one shapegrad step, alone, at its shapes and layouts, with the
    recurrences' own calls: what the profile splits the step into."""
    from shapegrad_backends import numba_kernels, numba_recurrent

    batch, steps, _ = x.shape
    dtype = np.float32
    lstm = numba_kernels.kernel("lstm_sequence", dtype)
    lstm_backward = numba_kernels.kernel("lstm_sequence_backward", dtype)
    assert lstm is not None and lstm_backward is not None, "needs numba"
    rng = np.random.default_rng(1)
    parts: dict[str, list[Callable[[], object]]] = {}
    inputs = np.ascontiguousarray(x.swapaxes(0, 1)).reshape(steps * batch, -1)
    for k in range(layer.num_layers):
        w_ih, w_hh = getattr(layer, f"weight_ih_l{k}").numpy(), getattr(layer, f"weight_hh_l{k}").numpy()
        b_hh = getattr(layer, f"bias_hh_l{k}").numpy()
        hidden = w_hh.shape[1]
        xproj = (inputs @ w_ih.T).reshape(steps, batch, -1)
        h0 = np.zeros((batch, hidden), dtype)
        result, gates = lstm(xproj, w_hh, b_hh, (h0, h0), False)
        g = rng.standard_normal(result.shape).astype(dtype)
        dpre = rng.standard_normal(gates.shape).astype(dtype)
        rows = dpre.reshape(steps * batch, -1)
        w_t, out, dh = np.ascontiguousarray(w_hh.T), np.empty(gates.shape[1:], dtype), np.empty_like(h0)

        def step_products(h: Any = result[0, 0], w_t: Any = w_t, out: Any = out) -> None:
            for _ in range(steps):
                np.matmul(h, w_t, out=out)

        def step_gradient_products(d: Any = dpre[0], w: Any = w_hh, dh: Any = dh) -> None:
            for _ in range(steps):
                np.matmul(d, w, out=dh)

        args = (xproj, w_hh, b_hh, (h0, h0), False)
        back = (g, result, gates, w_hh, h0, h0, dtype(0))
        a, w, r, res = inputs, w_ih, rows, result
        parts.setdefault("recurrence forward", []).append(lambda args=args: lstm(*args))
        parts.setdefault("  its products (h·W_hhᵀ per step)", []).append(step_products)
        parts.setdefault("recurrence backward", []).append(lambda back=back: lstm_backward(*back))
        parts.setdefault("  its products (dpre·W_hh per step)", []).append(step_gradient_products)
        parts.setdefault("  its W_hh gradient (one product, the bias sum)", []).append(
            lambda r=dpre, res=res, h0=h0: numba_recurrent._weight_grads(r, res, h0, False)
        )
        parts.setdefault("input projection x·W_ihᵀ", []).append(lambda a=a, w=w: a @ w.T)
        parts.setdefault("its gradient products (dx, dW_ih)", []).append(lambda a=a, w=w, r=r: (r @ w, a.T @ r))
        inputs = result[0].reshape(steps * batch, -1)
    return {name: (lambda calls=calls: [c() for c in calls]) for name, calls in parts.items()}


def profile(sizes: tuple[int, ...], rounds: int) -> None:
    """Where a shapegrad step's time goes (all layers), interleaved with the whole steps."""
    reference, layer, x, tx = build(*sizes)
    parts = {"shapegrad step": lambda: shapegrad_step(layer, x), "torch step": lambda: torch_step(reference, tx)}
    parts.update(_products(layer, x))
    spent: dict[str, list[float]] = {name: [] for name in parts}
    for fn in parts.values():
        fn()
    for _ in range(rounds):
        for name, fn in parts.items():
            start = time.perf_counter()
            fn()
            spent[name].append(time.perf_counter() - start)
    ms = {name: statistics.median(v) * 1e3 for name, v in spent.items()}
    total = ms["shapegrad step"]
    print(f"profile (ms per step, medians of {rounds} interleaved rounds, all {sizes[-1]} layers):")
    for name, value in ms.items():
        print(f"  {name:<48} {value:8.2f}  {100 * value / total:5.1f} %")
    products = sum(v for k, v in ms.items() if "product" in k or "gradient" in k)
    kernels = ms["recurrence forward"] + ms["recurrence backward"]
    inside = kernels - sum(v for k, v in ms.items() if k.startswith("  "))
    print(f"  {'matrix products together':<48} {products:8.2f}  {100 * products / total:5.1f} %")
    print(f"  {'recurrences less their products (element-wise)':<48} {inside:8.2f}  {100 * inside / total:5.1f} %")
    rest = total - products - inside
    print(f"  {'the rest (tape, slicing, other passes)':<48} {rest:8.2f}  {100 * rest / total:5.1f} %")


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a small case and few rounds (CI)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved timing rounds (default 20, quick 3)")
    parser.add_argument("--profile", action="store_true", help="also split the step into its products and kernels")
    args = parser.parse_args(argv)
    import torch

    sizes = (8, 16, 32, 32, 2) if args.quick else (32, 64, 128, 128, 2)
    rounds = args.rounds or (3 if args.quick else 20)
    if args.profile:
        with pin_threads(1):
            profile(sizes, rounds)
    with pin_threads(1):
        reference, layer, x, tx = build(*sizes)
        ours, theirs = shapegrad_step(layer, x), torch_step(reference, tx)  # warm-up (numba compiles)
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4)
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-3, atol=1e-5)
        times: dict[str, list[float]] = {"shapegrad": [], "torch": []}
        ratios: list[float] = []
        for r in range(rounds):
            order = ["shapegrad", "torch"] if r % 2 == 0 else ["torch", "shapegrad"]
            spent: dict[str, float] = {}
            for who in order:
                start = time.perf_counter()
                shapegrad_step(layer, x) if who == "shapegrad" else torch_step(reference, tx)
                spent[who] = time.perf_counter() - start
                times[who].append(spent[who])
            ratios.append(spent["shapegrad"] / spent["torch"])
    batch, steps, features, hidden, layers = sizes
    ratio = statistics.median(ratios)
    print(
        f"LSTM forward+backward, {layers} layers, batch {batch}, {steps} steps, input {features}, "
        f"hidden {hidden}, float32, one thread (torch {torch.__version__}, {rounds} interleaved rounds)"
    )
    print(f"  same weights and input: loss {ours[0]:.6g} (torch {theirs[0]:.6g})")
    for who, spent_list in times.items():
        print(f"  {who:>9}: {statistics.median(spent_list) * 1e3:8.2f} ms per step (median)")
    print(f"  ratio shapegrad / torch: {ratio:.2f} (median of per-round ratios; below 1 is faster)")
    return ratio


if __name__ == "__main__":
    main()
