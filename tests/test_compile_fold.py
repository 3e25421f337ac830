"""sg.compile's constant folding: what a step computes from no input is computed once, when
the recording is built, and never shared where a replay could change it or give it back."""

from __future__ import annotations

from typing import Any, Literal as L

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import nn


@pytest.fixture(autouse=True)
def _records_on_numpy(numpy_backend: str) -> None:
    """sg.compile records on the NumPy backend only."""


def _x(seed: int) -> Any:
    return sg.tensor(np.random.default_rng(seed).standard_normal((2, 6, 16)).astype(np.float32))


def test_a_causal_mask_is_built_once() -> None:
    block = nn.TransformerEncoderBlock[L[16]](num_heads=2, ff_dim=32, generator=sg.Generator(0))
    block.eval()

    def forward(x: Any) -> Any:
        return block(x, causal=True)

    compiled = sg.compile(forward)
    for s in range(3):
        np.testing.assert_allclose(compiled(_x(s)).numpy(), forward(_x(s)).numpy(), rtol=1e-6, atol=1e-6)
    recording = compiled.recordings[0]
    assert recording.folded_operations >= 3, recording  # arange, reshape, comparison
    assert "arange" not in recording.source
    assert "folded" in repr(recording)


def test_a_constant_written_in_place_is_computed_at_every_replay() -> None:
    def accumulate(x: Any) -> Any:
        total = sg.zeros(16)
        total[3:5] = total[3:5] + x.sum((0, 1))[3:5]  # a write into the array zeros made
        total += x.sum((0, 1))
        return total * 2.0

    compiled = sg.compile(accumulate)
    for s in range(4):
        np.testing.assert_allclose(compiled(_x(s)).numpy(), accumulate(_x(s)).numpy(), rtol=1e-5)
    assert compiled.eager_reason is None


def test_a_constant_given_back_is_a_new_array_at_every_call() -> None:
    def with_positions(x: Any) -> Any:
        positions = sg.arange(6)
        return x.sum(-1) + positions, positions, positions.reshape(2, 3)

    compiled = sg.compile(with_positions)
    for s in range(4):
        got = compiled(_x(s))
        want = with_positions(_x(s))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
        for g in got[1:]:
            g.numpy()[...] = -1  # the caller's to change: the next call's are new
    assert compiled.eager_reason is None


def test_a_bias_gradient_product_with_a_folded_ones_vector_trains_as_eager() -> None:
    def build() -> tuple[Any, Any, Any]:
        model = nn.Linear[L[16], L[4]](generator=sg.Generator(1))
        return model, sg.optim.Adam(model, lr=1e-2), model.alloc_grads()

    ours, twin = build(), build()

    def step_of(model: Any, opt: Any, grads: Any) -> Any:
        def step(x: Any) -> Any:
            grads.zero()
            loss = (model(x.trace(grads)) ** 2).mean()
            loss.backward()
            opt.update(model, grads)
            return loss

        return step

    compiled, eager = sg.compile(step_of(*ours)), step_of(*twin)
    for s in range(5):
        np.testing.assert_allclose(compiled(_x(s)).item(), eager(_x(s)).item(), rtol=1e-6)
    np.testing.assert_allclose(ours[0].bias.numpy(), twin[0].bias.numpy(), rtol=1e-6)
    np.testing.assert_allclose(ours[0].weight.numpy(), twin[0].weight.numpy(), rtol=1e-6)
    assert compiled.recordings[0].folded_operations >= 1, compiled.recordings[0]
