"""Checkpoints refused before any copy (corrupt metadata, BF16, another library's file), parameters
that own writable memory, and file modes.

Each test once showed a wrong answer with no error (issue #12); it fails on the code before
its fix. Behaviour that can differ by backend runs on every backend (``backend`` fixture).
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.tiny_models import Line

import shapegrad as sg
from shapegrad import nn


def _checkpoint(tmp_path: Path) -> tuple[Line, Any, Path]:
    model = Line()
    opt = sg.optim.Adam(model)
    grads = model.alloc_grads()
    model(sg.ones(2, 2).trace(grads)).sum().backward()
    opt.update(model, grads)
    path = tmp_path / "ckpt.safetensors"
    sg.save(model, path, optimizer=opt)
    return model, opt, path


def _rewrite_metadata(path: Path, **changes: str) -> None:
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    header["__metadata__"].update(changes)
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + raw[8 + size :])


def _safetensors_file(path: Path, dtype: str, metadata: dict[str, str]) -> None:
    size = 2 * (2 if dtype == "BF16" else 1)  # two elements of BF16 or of an 8-bit float
    header = {"__metadata__": metadata, "model.fc.weight": {"dtype": dtype, "shape": [2, 1], "data_offsets": [0, size]}}
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"\x00" * size)


@pytest.mark.parametrize("step_count", ["-3", "many"])
def test_corrupt_step_count_is_refused_before_any_copy(tmp_path: Path, numpy_backend: str, step_count: str) -> None:
    _, _, path = _checkpoint(tmp_path)
    _rewrite_metadata(path, step_count=step_count)
    fresh = Line()
    fresh_opt = sg.optim.Adam(fresh)
    before = {n: t.numpy().copy() for n, t in fresh.named_tensors()}
    with pytest.raises(sg.CheckpointError, match="step_count"):
        sg.load(fresh, path, optimizer=fresh_opt)
    assert all(np.array_equal(before[n], t.numpy()) for n, t in fresh.named_tensors())
    assert fresh_opt.step_count == 0


def test_a_bf16_tensor_is_a_checkpoint_error_naming_it(tmp_path: Path, numpy_backend: str) -> None:
    path = tmp_path / "other.safetensors"
    _safetensors_file(path, "BF16", {"format": "shapegrad"})
    with pytest.raises(sg.CheckpointError, match=r"tensor 'model.fc.weight' has dtype BF16"):
        sg.load(Line(), path)


def test_another_library_s_file_is_refused_before_reading_tensors(tmp_path: Path, numpy_backend: str) -> None:
    path = tmp_path / "hf.safetensors"
    _safetensors_file(path, "F8_E4M3", {"format": "pt"})
    with pytest.raises(sg.CheckpointError, match="not a shapegrad checkpoint"):
        sg.load(Line(), path)


def test_a_parameter_from_a_read_only_array_owns_writable_memory(tmp_path: Path, numpy_backend: str) -> None:
    frozen = np.ones(2, dtype=np.float32)
    frozen.flags.writeable = False

    class Scale(nn.Module, checked=False):
        def __init__(self) -> None:
            self.w = nn.parameter(sg.asarray(frozen))

    model = Scale()
    opt = sg.optim.Adam(model, lr=0.5)
    grads = model.alloc_grads()
    (model.w.trace(grads) * 2.0).sum().backward()
    opt.update(model, grads)
    assert model.w.tolist() != [1.0, 1.0] and frozen.tolist() == [1.0, 1.0]
    path = tmp_path / "s.safetensors"
    sg.save(model, path)
    sg.load(Scale(), path)


def test_a_read_only_buffer_is_refused_before_any_copy(tmp_path: Path, numpy_backend: str) -> None:
    # A buffer over a read-only array (np.load(mmap_mode="r")): loads passed every check, then
    # NumPy's ValueError came from the copy into it, after the weights before it were written.
    class Table(nn.Module, checked=False):
        def __init__(self, writable: bool) -> None:
            self.lin = nn.Linear(2, 2)
            base = np.arange(3, dtype=np.float32)
            base.flags.writeable = writable
            self.table = sg.asarray(base)

    source = Table(True)
    state = {name: value + 1 for name, value in source.state_dict().items()}
    source.load_state_dict(state)
    path = tmp_path / "t.safetensors"
    sg.save(source, path)
    for load in (
        lambda model: model.load_state_dict(state),
        lambda model: sg.load(model, path),
        lambda model: sg.nn.from_torch(model, {k: v.T if k == "lin.weight" else v for k, v in state.items()}),
    ):
        model = Table(False)
        before = model.lin.weight.numpy().copy()
        with pytest.raises(sg.CheckpointError, match=r"'table' is backed by a read-only array"):
            load(model)
        np.testing.assert_array_equal(model.lin.weight.numpy(), before)


def test_checkpoints_honour_the_umask_and_keep_an_existing_mode(tmp_path: Path, numpy_backend: str) -> None:
    old = os.umask(0o022)
    try:
        path = tmp_path / "m.safetensors"
        sg.save(Line(), path)
        assert path.stat().st_mode & 0o777 == 0o644
        path.chmod(0o640)
        sg.save(Line(), path)
        assert path.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)
