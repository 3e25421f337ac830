"""Checkpoints: round trips, and every bad file refused with the model left untouched."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal as L

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import nn


class Net(nn.Module):
    def __init__(self, hidden: int = 4, seed: int = 0) -> None:
        self.layer = nn.Linear(3, hidden, generator=sg.Generator(seed))
        self.norm = nn.BatchNorm1d(num_features=hidden)

    def __call__(self, x: Any) -> Any:
        return self.norm(self.layer(x))


def values(model: nn.Module) -> dict[str, np.ndarray]:
    return {n: t.numpy().copy() for n, t in model.named_tensors()}


def train_once(model: Net, opt: Any) -> None:
    grads = model.alloc_grads()
    model(sg.randn(5, 3, generator=sg.Generator(3)).trace(grads)).sum().backward()
    opt.update(model, grads)


def test_round_trip_with_optimizer_state(tmp_path: Path, backend: str) -> None:
    model, other = Net(seed=0), Net(seed=1)
    opt, other_opt = sg.optim.Adam(model), sg.optim.Adam(other)
    train_once(model, opt)
    path = tmp_path / "ckpt.safetensors"
    sg.save(model, path, optimizer=opt)
    sg.load(other, path, optimizer=other_opt)
    for name, value in values(model).items():
        np.testing.assert_array_equal(values(other)[name], value, err_msg=name)
    assert other_opt.step_count == 1
    host = sg.active_backend().to_numpy
    np.testing.assert_array_equal(
        host(other_opt.state_arrays()["layer.weight.exp_avg"]), host(opt.state_arrays()["layer.weight.exp_avg"])
    )
    # running statistics are buffers and travel too
    assert "norm.running_mean" in values(other)


def test_batch_norm_count_travels_in_a_checkpoint(tmp_path: Path, numpy_backend: str) -> None:
    """BatchNorm1d(momentum=None)'s num_batches_tracked is saved by sg.save and restored by
    sg.load with the running statistics it averages."""

    class Counted(nn.Module):
        def __init__(self) -> None:
            self.layer = nn.Linear(3, 4, generator=sg.Generator(0))
            self.norm = nn.BatchNorm1d(num_features=4, momentum=None)

        def __call__(self, x: Any) -> Any:
            return self.norm(self.layer(x))

    model, other = Counted(), Counted()
    for seed in range(2):
        model(sg.randn(5, 3, generator=sg.Generator(seed)))
    sg.save(model, tmp_path / "ckpt.safetensors")
    sg.load(other, tmp_path / "ckpt.safetensors")
    assert int(other.norm.num_batches_tracked.item()) == 2
    for name, value in values(model).items():
        np.testing.assert_array_equal(values(other)[name], value, err_msg=name)


WITH_GROUPS = {
    "sgd_groups": lambda m: sg.optim.Sgd(
        m, lr=0.1, momentum=0.9, groups=[sg.optim.Group("*.bias", momentum=0.0, lr=0.01)]
    ),
    "adamw_groups": lambda m: sg.optim.AdamW(
        m, weight_decay=0.1, groups=[sg.optim.Group(lambda path, p: p.ndim < 2, weight_decay=0.0)]
    ),
    "adagrad": lambda m: sg.optim.Adagrad(m, initial_accumulator_value=0.1),
    "adadelta": lambda m: sg.optim.Adadelta(m, groups=[sg.optim.Group("norm.*", rho=0.5)]),
}


@pytest.mark.parametrize("name", list(WITH_GROUPS))
def test_round_trip_of_optimizers_with_groups_and_the_new_ones(name: str, tmp_path: Path, backend: str) -> None:
    """issue #25: a checkpoint restores each group's state (a group without momentum has no
    buffer), so the restored optimizer's next step is the original's."""
    make = WITH_GROUPS[name]
    model, other = Net(seed=0), Net(seed=1)
    opt, other_opt = make(model), make(other)
    train_once(model, opt)
    path = tmp_path / "ckpt.safetensors"
    sg.save(model, path, optimizer=opt)
    sg.load(other, path, optimizer=other_opt)
    assert set(other_opt.state_arrays()) == set(opt.state_arrays())
    train_once(model, opt)
    train_once(other, other_opt)
    for key, value in values(model).items():
        np.testing.assert_allclose(values(other)[key], value, rtol=1e-6, err_msg=key)


def _refused(model: Net, path: Path, match: str, **kwargs: Any) -> None:
    before = values(model)
    with pytest.raises(sg.CheckpointError, match=match):
        sg.load(model, path, **kwargs)
    for name, value in values(model).items():
        np.testing.assert_array_equal(value, before[name], err_msg=f"{name} changed")


def test_shape_mismatch_names_the_tensor_and_changes_nothing(tmp_path: Path, numpy_backend: str) -> None:
    path = tmp_path / "wide.safetensors"
    sg.save(Net(hidden=5), path)
    _refused(Net(hidden=4), path, r"'layer.weight' has shape \(3, 5\) in the checkpoint, expected \(3, 4\)")


def test_dtype_mismatch(tmp_path: Path, numpy_backend: str) -> None:
    path = tmp_path / "f64.safetensors"
    wide = Net()
    wide.layer = nn.Linear(3, 4, dtype="float64")
    sg.save(wide, path)
    _refused(Net(), path, r"'layer.weight' has dtype float64 in the checkpoint, expected float32")


def test_missing_and_extra_tensors(tmp_path: Path, numpy_backend: str) -> None:
    class Small(nn.Module):
        def __init__(self) -> None:
            self.layer = nn.Linear(3, 4)

    path = tmp_path / "small.safetensors"
    sg.save(Small(), path)
    _refused(Net(), path, r"lacks 'norm.weight'")
    big = tmp_path / "big.safetensors"
    sg.save(Net(), big)
    small = Small()
    before = values(small)
    with pytest.raises(sg.CheckpointError, match=r"has 'norm.bias', which the model does not \(and 3 more\)"):
        sg.load(small, big)
    assert all(np.array_equal(values(small)[k], v) for k, v in before.items())


def test_truncated_file(tmp_path: Path, numpy_backend: str) -> None:
    path = tmp_path / "cut.safetensors"
    sg.save(Net(), path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    _refused(Net(), path, "truncated or corrupted")


def test_random_bytes(tmp_path: Path, numpy_backend: str) -> None:
    path = tmp_path / "noise.safetensors"
    path.write_bytes(np.random.default_rng(0).bytes(300))
    _refused(Net(), path, "not a readable safetensors checkpoint")


def test_missing_file(tmp_path: Path, numpy_backend: str) -> None:
    _refused(Net(), tmp_path / "nope.safetensors", "no checkpoint at")


def test_interrupted_save_leaves_the_old_file_intact(
    tmp_path: Path, numpy_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import safetensors.numpy

    path = tmp_path / "model.safetensors"
    sg.save(Net(seed=0), path)
    original = path.read_bytes()

    def crash(tensors: Any, filename: str, metadata: Any = None) -> None:
        Path(filename).write_bytes(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(safetensors.numpy, "save_file", crash)
    with pytest.raises(KeyboardInterrupt):
        sg.save(Net(seed=1), path)
    assert path.read_bytes() == original
    assert [p.name for p in tmp_path.iterdir()] == ["model.safetensors"]


def test_optimizer_state_of_another_kind_is_refused(tmp_path: Path, numpy_backend: str) -> None:
    model = Net()
    path = tmp_path / "sgd.safetensors"
    sg.save(model, path, optimizer=sg.optim.Sgd(model, momentum=0.9))
    _refused(model, path, "holds Sgd state, expected Adam", optimizer=sg.optim.Adam(model))


def test_linear_literal_sizes_round_trip(tmp_path: Path, numpy_backend: str) -> None:
    a, b = nn.Linear[L[2], L[2]](generator=sg.Generator(0)), nn.Linear[L[2], L[2]](generator=sg.Generator(1))
    sg.save(a, tmp_path / "l.safetensors")
    sg.load(b, tmp_path / "l.safetensors")
    np.testing.assert_array_equal(a.weight.numpy(), b.weight.numpy())


def test_amsgrad_state_round_trips_and_training_resumes_the_same(tmp_path: Path, backend: str) -> None:
    """Adam(amsgrad=True)'s running maximum (max_exp_avg_sq) is saved and restored with the
    rest of its state: training resumed from the checkpoint follows the uninterrupted run
    exactly."""
    model, other = Net(seed=0), Net(seed=1)
    opt, other_opt = sg.optim.Adam(model, amsgrad=True), sg.optim.Adam(other, amsgrad=True)
    for _ in range(3):
        train_once(model, opt)
    path = tmp_path / "ams.safetensors"
    sg.save(model, path, optimizer=opt)
    sg.load(other, path, optimizer=other_opt)
    host = sg.active_backend().to_numpy
    saved = {k: np.array(host(v)) for k, v in opt.state_arrays().items()}
    assert "layer.weight.max_exp_avg_sq" in saved
    for name, value in other_opt.state_arrays().items():
        np.testing.assert_array_equal(host(value), saved[name], err_msg=name)
    for _ in range(2):
        train_once(model, opt)
        train_once(other, other_opt)
    for name, value in values(model).items():
        np.testing.assert_array_equal(values(other)[name], value, err_msg=name)


def test_adam_state_without_amsgrad_is_refused_by_an_amsgrad_adam(tmp_path: Path, numpy_backend: str) -> None:
    """A checkpoint of Adam without amsgrad lacks the running maximum: loading it into
    Adam(amsgrad=True) is refused, naming the missing state, and changes nothing."""
    model = Net()
    path = tmp_path / "adam.safetensors"
    sg.save(model, path, optimizer=sg.optim.Adam(model))
    _refused(model, path, "max_exp_avg_sq", optimizer=sg.optim.Adam(model, amsgrad=True))
