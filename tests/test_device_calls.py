"""How many device calls a training step makes on the CuPy backend, counted on the emulated CuPy.

On a GPU a small-batch step is bound by the host, not the device: on an H200 (RESULTS.md)
each CuPy call costs 10-60 µs of host time, and the MLP step at batch 64 took 3.4 ms on CuPy
against 1.6 ms for PyTorch CUDA. The number of calls is what the library controls, and the
emulation counts it exactly, so it is held here: a change that adds calls to the common path
fails with the count it found.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import emulated_cupy_backend
from support import emulated_cupy

import shapegrad as sg


class _MLP(sg.nn.Module):
    """The benchmarks' MLP in small: three linear layers, ReLU between."""

    def __init__(self) -> None:
        rng = sg.Generator(0)
        self.fc1 = sg.nn.Linear(12, 16, generator=rng)
        self.fc2 = sg.nn.Linear(16, 16, generator=rng)
        self.out = sg.nn.Linear(16, 4, generator=rng)

    def __call__(self, x: Any) -> Any:
        return self.out(self.fc2(self.fc1(x).relu()).relu())


def _calls(fn: Any) -> int:
    before = emulated_cupy.device_operations()
    fn()
    return emulated_cupy.device_operations() - before


def test_a_training_step_on_a_device_stays_within_its_calls() -> None:
    """zero, forward, cross-entropy, backward and Adam's update: 96 calls before the device
    cross-entropy became one op and the linear layers' backward lost its reshapes and its
    ones-vector products; 75 now."""
    rng = np.random.default_rng(0)
    with sg.use_backend(emulated_cupy_backend()):
        model = _MLP()
        opt, grads = sg.optim.Adam(model), model.alloc_grads()
        x, y = sg.tensor(rng.standard_normal((8, 12)).astype(np.float32)), sg.tensor(rng.integers(0, 4, 8))

        def step() -> None:
            grads.zero()
            sg.losses.cross_entropy(model(x.trace(grads)), y).backward()
            opt.update(model, grads)

        step()  # the first step makes the optimizer's state
        found = _calls(step)
    assert found <= 75, f"the MLP training step made {found} device calls, expected at most 75"


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_on_a_device_masks_ignored_rows_without_waiting(reduction: str) -> None:
    """A device cannot tell whether a row is ignored without reading the labels back: the
    rows are masked in one op, with no host transfer, and give the host's values and
    gradients (ignored rows 0, left out of the mean)."""
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((6, 5)).astype(np.float32)
    labels = np.array([1, -100, 4, 0, -100, 2])
    found = []
    for backend in ("numpy", emulated_cupy_backend()):
        with sg.use_backend(backend):
            grads = sg.Gradients()
            z = sg.tensor(logits).trace(grads)
            before = emulated_cupy.host_transfers()
            loss = sg.losses.cross_entropy(z, sg.tensor(labels), label_smoothing=0.1, reduction=reduction)
            assert emulated_cupy.host_transfers() == before
            loss.sum().backward()
            found.append((loss.numpy(), grads[z].numpy()))
    (host_loss, host_grad), (device_loss, device_grad) = found
    np.testing.assert_allclose(device_loss, host_loss, rtol=1e-6)
    np.testing.assert_allclose(device_grad, host_grad, rtol=1e-6, atol=1e-7)
    assert not device_grad[labels == -100].any()


def test_cross_entropy_on_a_device_with_every_row_ignored_is_nan_with_no_gradient() -> None:
    """PyTorch's mean over no counted row: NaN, and a zero gradient; a row whose class 0 (where
    an ignored row points) is a masked -inf logit stays out of both."""
    with sg.use_backend(emulated_cupy_backend()):
        grads = sg.Gradients()
        z = sg.tensor(np.array([[0.5, 1.0, -1.0], [-np.inf, 0.3, 1.0]], np.float32)).trace(grads)
        loss = sg.losses.cross_entropy(z, sg.tensor(np.array([-100, -100])))
        loss.backward()
        assert np.isnan(loss.item())
        assert not grads[z].numpy().any()
