"""The GPT example and its PyTorch twin train from one initialisation to the same loss curve."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import shapegrad as sg

torch = pytest.importorskip("torch", reason="PyTorch is the twin here: pip install -e '.[dev,torch]'")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import gpt_torch  # noqa: E402
from gpt_torch import gpt  # noqa: E402


def test_twenty_steps_follow_pytorch_s_loss_curve(numpy_backend: str) -> None:
    torch.manual_seed(0)
    ours = gpt.GPT(generator=sg.Generator(0))
    theirs = gpt_torch.torch_gpt(ours)
    opt = sg.optim.AdamW(ours, lr=1e-3, weight_decay=0.01, clip_norm=1.0)
    topt = torch.optim.AdamW(theirs.parameters(), lr=1e-3, weight_decay=0.01)
    grads = ours.alloc_grads()
    text = np.frombuffer(gpt.corpus().encode("ascii"), dtype=np.uint8).astype(np.int64)
    rng = np.random.default_rng(5)
    ours_losses, their_losses = [], []
    for _ in range(20):
        x, y = gpt.windows(text, 8, rng)
        grads.zero()
        loss = sg.losses.cross_entropy(ours(sg.tensor(x).trace(grads)), sg.tensor(y))
        loss.backward()
        opt.update(ours, grads)
        ours_losses.append(loss.item())
        their_losses.append(gpt_torch.torch_step(theirs, topt, torch.from_numpy(x), torch.from_numpy(y)))
    np.testing.assert_allclose(ours_losses, their_losses, rtol=2e-4)
    assert ours_losses[-1] < ours_losses[0] - 0.5  # and it learns
