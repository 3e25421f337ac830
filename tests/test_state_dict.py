"""A model's state as NumPy arrays (``state_dict`` / ``load_state_dict``), ``Module.apply``
and ``Module.to(dtype=...)`` (issue #25)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import nn


class Net(nn.Module):
    def __init__(self, seed: int = 0) -> None:
        gen = sg.Generator(seed)
        self.layer = nn.Linear(3, 4, generator=gen)
        self.blocks = [nn.Sequential(nn.Linear(4, 4, generator=gen), nn.BatchNorm1d(num_features=4))]

    def __call__(self, x: Any) -> Any:
        return self.blocks[0](self.layer(x))


def values(model: nn.Module) -> dict[str, np.ndarray]:
    return {n: t.numpy().copy() for n, t in model.named_tensors()}


def train_once(model: Net) -> None:
    grads = model.alloc_grads()
    model(sg.randn(5, 3, generator=sg.Generator(3)).trace(grads)).sum().backward()
    sg.optim.SGD(model, lr=0.1).update(model, grads)


def test_state_dict_round_trip(backend: str) -> None:
    """issue #25: dotted paths -> NumPy copies of parameters and running statistics; loading
    them into another instance makes it equal, outputs included."""
    model, other = Net(seed=0), Net(seed=1)
    train_once(model)
    state = model.state_dict()
    assert list(state) == [
        "layer.weight",
        "layer.bias",
        "blocks.0.0.weight",
        "blocks.0.0.bias",
        "blocks.0.1.weight",
        "blocks.0.1.bias",
        "blocks.0.1.running_mean",
        "blocks.0.1.running_var",
    ]
    assert all(type(a) is np.ndarray for a in state.values())
    assert other.load_state_dict(state) == ([], [])
    for name, value in values(model).items():
        np.testing.assert_array_equal(values(other)[name], value, err_msg=name)
    x = sg.randn(2, 3, generator=sg.Generator(4))
    np.testing.assert_array_equal(other.eval()(x).numpy(), model.eval()(x).numpy())


def test_batch_norm_count_round_trips_and_counts_on(numpy_backend: str) -> None:
    """BatchNorm(momentum=None) owns num_batches_tracked, an int64 buffer: state_dict saves
    it, load_state_dict restores it, and the loaded model's cumulative average counts on from
    it as the original's does; a momentum=0.1 model's names and checkpoints are unchanged."""

    def counted() -> nn.Module:
        return nn.Sequential(nn.Linear(3, 4, generator=sg.Generator(0)), nn.BatchNorm1d(4, momentum=None))

    model, other = counted(), counted()
    for seed in range(3):
        model(sg.randn(5, 3, generator=sg.Generator(seed)))
    state = model.state_dict()
    assert state["1.num_batches_tracked"].dtype == np.int64 and state["1.num_batches_tracked"].shape == ()
    assert int(state["1.num_batches_tracked"]) == 3
    assert other.load_state_dict(state) == ([], [])
    for net in (model, other):
        net(sg.randn(5, 3, generator=sg.Generator(9)))
    for name, value in values(model).items():
        np.testing.assert_array_equal(values(other)[name], value, err_msg=name)
    assert int(other.state_dict()["1.num_batches_tracked"]) == 4
    # a checkpoint without the count (momentum a number) is refused by name, not misread
    with pytest.raises(sg.CheckpointError, match=r"num_batches_tracked"):
        other.load_state_dict({k: v for k, v in state.items() if k != "1.num_batches_tracked"})
    assert "blocks.0.1.num_batches_tracked" not in Net().state_dict()


def test_state_dict_is_a_copy(numpy_backend: str) -> None:
    """issue #25: changing the returned arrays changes nothing in the model, and loading
    copies (the model does not alias the dict's arrays)."""
    model = Net()
    state = model.state_dict()
    state["layer.bias"][:] = 7.0
    assert not np.any(model.layer.bias.numpy() == 7.0)
    model.load_state_dict(state)
    state["layer.bias"][:] = 8.0
    np.testing.assert_array_equal(model.layer.bias.numpy(), np.full(4, 7.0, np.float32))


def test_load_state_dict_refuses_before_the_first_copy(numpy_backend: str) -> None:
    """issue #25: a missing, extra, mis-shaped or mis-typed entry raises CheckpointError
    naming it, and the model is unchanged (the first entries are valid)."""
    model = Net()
    good = Net(seed=5).state_dict()
    before = values(model)
    cases: list[tuple[dict[str, Any], str]] = [
        ({k: v for k, v in good.items() if k != "blocks.0.1.running_var"}, r"lacks 'blocks\.0\.1\.running_var'"),
        ({**good, "head.weight": np.zeros(2, np.float32)}, r"has 'head\.weight', which the model does not"),
        (
            {**good, "blocks.0.0.bias": np.zeros(5, np.float32)},
            r"'blocks\.0\.0\.bias' has shape \(5,\).*expected \(4,\)",
        ),
        (
            {**good, "blocks.0.1.running_mean": np.zeros(4)},
            r"'blocks\.0\.1\.running_mean' has dtype float64.*expected float32",
        ),
        ({**good, "layer.bias": "abc"}, r"'layer\.bias' has shape \(\)"),
    ]
    for bad, match in cases:
        with pytest.raises(sg.CheckpointError, match=match):
            model.load_state_dict(bad)
        for name, value in values(model).items():
            np.testing.assert_array_equal(value, before[name], err_msg=f"{name} changed")


def test_load_state_dict_non_strict_reports_missing_and_unexpected(numpy_backend: str) -> None:
    """issue #25: strict=False skips names on one side only and returns them (PyTorch's
    missing_keys, unexpected_keys); shapes and dtypes of the shared names are still checked."""
    model, source = Net(seed=0), Net(seed=1)
    state = {k: v for k, v in source.state_dict().items() if k.startswith("layer.")}
    state["extra"] = np.zeros(1, np.float32)
    result = model.load_state_dict(state, strict=False)
    assert result.missing_keys == [k for k in model.state_dict() if not k.startswith("layer.")]
    assert result.unexpected_keys == ["extra"]
    np.testing.assert_array_equal(model.layer.weight.numpy(), source.layer.weight.numpy())
    with pytest.raises(sg.CheckpointError, match=r"'layer\.bias' has shape \(2,\)"):
        model.load_state_dict({"layer.bias": np.zeros(2, np.float32)}, strict=False)


def test_load_state_dict_invalidates_a_pending_backward(numpy_backend: str) -> None:
    """issue #25: a load is an in-place write: a backward pass through the old values raises."""
    model = Net()
    grads = model.alloc_grads()
    loss = model(sg.randn(5, 3, generator=sg.Generator(3)).trace(grads)).sum()
    model.load_state_dict(Net(seed=2).state_dict())
    with pytest.raises(sg.TapeError):
        loss.backward()


def test_apply_visits_children_before_parents_each_once(numpy_backend: str) -> None:
    """issue #25: Module.apply(fn) as PyTorch's: every sub-module, children first, then
    the module itself; a shared module once; returns the module."""
    shared = nn.Linear(2, 2)
    inner = nn.Sequential(shared, nn.ReLU())
    outer = nn.Sequential(inner, shared)
    seen: list[nn.Module] = []
    assert outer.apply(seen.append) is outer
    assert [id(m) for m in seen] == [id(shared), id(inner[1]), id(inner), id(outer)]


def test_to_dtype_casts_floats_keeps_parameters_and_paths(backend: str) -> None:
    """issue #25: model.to(dtype="float64") casts parameters and float buffers, keeps
    parameters parameters (trainable state too) under the same paths; training runs after
    alloc_grads() again, and an older Gradients is refused."""
    model = Net()
    model.blocks[0][0].freeze()
    old_grads = model.alloc_grads()
    before = values(model)
    model.to(dtype="float64")
    assert {t.backend_dtype_name() for _, t in model.named_tensors()} == {"float64"}
    assert [p for p, _ in model.named_parameters()] == [p for p in before if "running" not in p]
    assert [p for p, _ in model.named_parameters(trainable_only=True)] == [
        "layer.weight",
        "layer.bias",
        "blocks.0.1.weight",
        "blocks.0.1.bias",
    ]
    for name, value in values(model).items():
        np.testing.assert_allclose(value, before[name], err_msg=name)
    opt = sg.optim.SGD(model, lr=0.1)
    with pytest.raises(sg.GradientsMismatchError):
        opt.update(model, old_grads)
    grads = model.alloc_grads()
    x = sg.randn(5, 3, generator=sg.Generator(3), dtype="float64")
    model(x.trace(grads)).sum().backward()
    opt.update(model, grads)
    assert model.layer.weight.backend_dtype_name() == "float64"


def test_to_dtype_refuses_integers_and_a_live_optimizer(numpy_backend: str) -> None:
    """issue #25: integer buffers are never cast (PyTorch refuses a non-float dtype too), and
    an optimizer's state would be left in the old dtype: both refused, nothing changed."""
    model = Net()
    with pytest.raises(sg.DTypeError, match="expected a floating-point dtype"):
        model.to(dtype="int64")
    opt = sg.optim.Adam(model)
    with pytest.raises(sg.ShapegradError, match=r"to\(dtype='float64'\) while an optimizer \(Adam\)"):
        model.to(dtype="float64")
    assert model.layer.weight.backend_dtype_name() == "float32"
    del opt


def test_to_dtype_leaves_integer_buffers(numpy_backend: str) -> None:
    """issue #25: only floating-point tensors are cast, as PyTorch's Module.to(dtype)."""

    class Counted(nn.Module):
        def __init__(self) -> None:
            self.scale = nn.parameter(sg.ones(2))
            self.count = sg.zeros(1, dtype="int64")

    model = Counted().to(dtype="float64")
    assert model.scale.backend_dtype_name() == "float64"
    assert model.count.backend_dtype_name() == "int64"
