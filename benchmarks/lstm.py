"""``sg.nn.LSTM`` against ``torch.nn.LSTM`` on one CPU thread (issue #25).

    python benchmarks/lstm.py            # 2 layers, batch 32, 64 steps, 128 inputs, hidden 128
    python benchmarks/lstm.py --quick    # a few rounds of a smaller case: proves it still runs

One step is a forward and backward pass of a 2-layer LSTM (``batch_first``) from the same
weights and input, with the sum of the output as the loss. Both run in this process, pinned to
one thread (``torch.set_num_threads(1)``, threadpoolctl for NumPy's BLAS), in interleaved
rounds (shapegrad then PyTorch, then the other way round), after a warm-up that also checks
that both give the same loss and input gradient. Reported: each one's median time per step and
the median of the per-round ratios shapegrad ÷ PyTorch (below 1 is faster).
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


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a small case and few rounds (CI)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved timing rounds (default 20, quick 3)")
    args = parser.parse_args(argv)
    import torch

    sizes = (8, 16, 32, 32, 2) if args.quick else (32, 64, 128, 128, 2)
    rounds = args.rounds or (3 if args.quick else 20)
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
