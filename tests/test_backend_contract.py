"""What every backend must do alike: one device synchronisation per training step, the declared
dependency versions, and the CuPy emulation refusing what CuPy refuses.

Each test once showed a wrong answer with no error (issue #12); it fails on the code before
its fix. Behaviour that can differ by backend runs on every backend (``backend`` fixture).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import nn


class _TokenModel(nn.Module, checked=False):
    def __init__(self) -> None:
        self.embed = nn.Embedding(10, 4, generator=sg.Generator(0))
        self.head = nn.Linear(4, 3, generator=sg.Generator(1))

    def __call__(self, ids: Any) -> Any:
        return self.head(self.embed(ids))


def test_declared_versions_are_the_ones_the_code_needs() -> None:
    text = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    assert '"numpy>=2' in text
    assert '"cupy-cuda12x>=14' in text


def test_a_training_step_synchronises_with_the_device_once() -> None:
    from conftest import emulated_cupy_backend
    from support import emulated_cupy

    with sg.use_backend(emulated_cupy_backend()):
        model = _TokenModel()
        opt = sg.optim.Adam(model, clip_norm=1.0)
        grads = model.alloc_grads()
        ids, labels = sg.tensor([1, 2, 3, 9]), sg.tensor([0, 1, 2, 0])
        before = emulated_cupy.host_transfers()
        grads.zero()
        loss = sg.losses.cross_entropy(model(ids.trace(grads)), labels)
        loss.backward()
        opt.update(model, grads)
        # One read of the queued range checks (embedding ids, labels) at backward; clipping
        # scales on the device. Before: two per gather, two per label check and one per
        # parameter for the clipping norm.
        assert emulated_cupy.host_transfers() - before == 1


def test_the_emulation_refuses_what_cupy_refuses() -> None:
    from support import emulated_cupy

    cp = emulated_cupy.make_module()
    device = cp.asarray(np.arange(3.0))
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(device)
    with pytest.raises(TypeError, match="Unsupported type"):
        device[...] = np.zeros(3)
    with pytest.raises(TypeError, match="Unsupported type"):
        cp.add([1.0, 2.0, 3.0], device)
    # Out-of-range fancy indices wrap around instead of raising, as on a GPU.
    assert cp.asnumpy(device[cp.asarray([4])]).tolist() == [1.0]
    assert cp.asnumpy(cp.take(device, cp.asarray([-4]), axis=0)).tolist() == [2.0]
