"""What an optimizer update checks and changes: weights written between a forward and its
backward, chained models each with its optimizer, per-parameter step counts, settings, refusals
that change nothing, float16 state, and clipping on the device.

Each test once showed a wrong answer with no error (issue #12); it fails on the code before
its fix. Behaviour that can differ by backend runs on every backend (``backend`` fixture).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.tiny_models import Decoder, Encoder, Line

import shapegrad as sg
from shapegrad import nn


class _TwoHeads(nn.Module, checked=False):
    def __init__(self) -> None:
        self.a = nn.parameter(sg.tensor([1.0]))
        self.b = nn.parameter(sg.tensor([1.0]))


def test_an_optimizer_update_between_forward_and_backward_is_detected(backend: str) -> None:
    model = Line()
    opt = sg.optim.Sgd(model, lr=0.1)
    grads = model.alloc_grads()
    x = sg.ones(4, 2)
    model(x.trace(grads)).sum().backward()
    # A forward pass recorded into fresh gradients (recording into the ones the update is
    # about to use is refused on its own: see test_tape's consumed-gradients test).
    later = model.alloc_grads()
    loss = model(x.trace(later)).sum()  # forward with the current weights
    opt.update(model, grads)  # weights change before this forward's backward
    with pytest.raises(sg.TapeError, match=r"parameter 'fc\.(weight|bias)' was modified in place"):
        loss.backward()


def test_a_load_between_forward_and_backward_is_detected(tmp_path: Path, numpy_backend: str) -> None:
    model = Line()
    path = tmp_path / "m.safetensors"
    sg.save(model, path)
    grads = model.alloc_grads()
    loss = model(sg.ones(4, 2).trace(grads)).sum()
    sg.load(model, path)
    with pytest.raises(sg.TapeError, match="modified in place"):
        loss.backward()


def test_backward_before_the_update_still_works(numpy_backend: str) -> None:
    model = Line()
    opt = sg.optim.Adam(model)
    grads = model.alloc_grads()
    for _ in range(3):
        grads.zero()
        model(sg.ones(4, 2).trace(grads)).sum().backward()
        opt.update(model, grads)


def test_two_chained_models_each_with_its_gradients_and_optimizer(backend: str) -> None:
    enc, dec = Encoder(), Decoder()
    g_enc, g_dec = enc.alloc_grads(), dec.alloc_grads()
    opt_enc, opt_dec = sg.optim.Sgd(enc, lr=0.1), sg.optim.Sgd(dec, lr=0.01)
    x = sg.ones(5, 3)
    dec(enc(x.trace(g_enc, g_dec))).sum().backward()
    assert sorted(g_enc.received()) == ["fc.bias", "fc.weight"]
    assert sorted(g_dec.received()) == ["fc.bias", "fc.weight"]
    before = dec.fc.weight.numpy().copy()
    opt_enc.update(enc, g_enc)
    opt_dec.update(dec, g_dec)
    assert not np.allclose(dec.fc.weight.numpy(), before)


def test_the_error_says_where_the_decoder_s_gradients_went(numpy_backend: str) -> None:
    enc, dec = Encoder(), Decoder()
    g_enc, g_dec = enc.alloc_grads(), dec.alloc_grads()
    opt_dec = sg.optim.Sgd(dec, lr=0.01)
    dec(enc(sg.ones(5, 3).trace(g_enc))).sum().backward()
    with pytest.raises(sg.UnusedParameterError, match=r"computed by a backward pass but went to no Gradients.*trace"):
        opt_dec.update(dec, g_dec)


def test_where_a_gradient_went_is_forgotten_by_the_next_step(numpy_backend: str) -> None:
    """The mark is the parameter's own (no process-wide set): the decoder's zero() clears it,
    and another model's parameters never carry it."""
    enc, dec, other = Encoder(), Decoder(), Decoder()
    g_enc, g_dec = enc.alloc_grads(), dec.alloc_grads()
    dec(enc(sg.ones(5, 3).trace(g_enc))).sum().backward()
    g_dec.zero()
    with pytest.raises(sg.UnusedParameterError) as refused:
        sg.optim.Sgd(dec, lr=0.01).update(dec, g_dec)
    assert "went to no Gradients" not in str(refused.value)
    with pytest.raises(sg.UnusedParameterError) as refused:
        sg.optim.Sgd(other, lr=0.01).update(other, other.alloc_grads())
    assert "went to no Gradients" not in str(refused.value)


def test_adam_bias_correction_counts_each_parameter_s_own_steps(numpy_backend: str) -> None:
    model = _TwoHeads()
    opt = sg.optim.Adam(model, lr=0.1, unused="ignore")
    grads = model.alloc_grads()
    for step in range(4):
        grads.zero()
        out = model.a.trace(grads) * 1.0
        if step == 3:
            out = out + model.b.trace(grads) * 3.0
        out.sum().backward()
        opt.update(model, grads)
    # First update of b, at global step 4: m̂/√v̂ = g/|g| exactly as in its first step, so it
    # moves by lr (torch.optim.Adam keeps a step count per parameter too).
    assert model.b.item() == pytest.approx(1.0 - 0.1, abs=1e-6)


def test_a_raising_schedule_changes_nothing(numpy_backend: str) -> None:
    model = Line()

    def schedule(step: int) -> float:
        raise RuntimeError("schedule broke")

    opt = sg.optim.Sgd(model, lr=schedule, clip_norm=1e-3)
    grads = model.alloc_grads()
    model(sg.ones(4, 2).trace(grads)).sum().backward()
    grad_before = {p: g.numpy().copy() for p, g in grads.items()}
    weights_before = {n: t.numpy().copy() for n, t in model.named_tensors()}
    with pytest.raises(RuntimeError, match="schedule broke"):
        opt.update(model, grads)
    assert opt.step_count == 0
    assert all(np.array_equal(grad_before[p], g.numpy()) for p, g in grads.items())  # not clipped
    assert all(np.array_equal(weights_before[n], t.numpy()) for n, t in model.named_tensors())


@pytest.mark.parametrize(
    "make",
    [
        lambda m: sg.optim.Adam(m, lr=-1.0),
        lambda m: sg.optim.Adam(m, betas=(1.0, 0.999)),
        lambda m: sg.optim.Adam(m, betas=(0.9, -0.1)),
        lambda m: sg.optim.Adam(m, eps=0.0),
        lambda m: sg.optim.AdamW(m, weight_decay=-0.1),
        lambda m: sg.optim.Sgd(m, momentum=-0.5),
        lambda m: sg.optim.Sgd(m, weight_decay=-1.0),
        lambda m: sg.optim.RMSprop(m, alpha=1.5),
        lambda m: sg.optim.RMSprop(m, eps=-1e-8),
    ],
    ids=["lr", "beta1", "beta2", "eps", "wd", "momentum", "sgd-wd", "alpha", "rms-eps"],
)
def test_optimizer_settings_are_validated_at_construction(numpy_backend: str, make: Any) -> None:
    with pytest.raises(sg.HyperparameterError, match="invalid optimizer setting: expected") as info:
        make(Line())
    assert isinstance(info.value, ValueError)


def test_an_optimizer_over_no_trainable_parameter_is_refused(numpy_backend: str) -> None:
    with pytest.raises(sg.HyperparameterError, match="empty parameter list"):
        sg.optim.Adam(Line().freeze())


def test_update_before_backward_says_backward_has_not_run(numpy_backend: str) -> None:
    model = Line()
    opt = sg.optim.Adam(model, unused="ignore")
    grads = model.alloc_grads()
    grads.zero()
    with pytest.raises(sg.UnusedParameterError, match=r"backward\(\) has probably not run since grads.zero\(\)"):
        opt.update(model, grads)


def test_float16_adam_keeps_float32_state_and_stays_finite(numpy_backend: str) -> None:
    layer = nn.Linear(4, 1, dtype="float16", generator=sg.Generator(0))
    opt = sg.optim.Adam(layer, lr=1e-2)
    grads = layer.alloc_grads()
    x = sg.tensor(np.full((8, 4), 1e-3), dtype="float16")
    for _ in range(5):
        grads.zero()
        (layer(x.trace(grads)) * 1e-3).sum().backward()
        opt.update(layer, grads)
    assert all(a.dtype == np.float32 for a in opt.state_arrays().values())
    assert layer.weight.backend_dtype_name() == "float16"
    assert np.all(np.isfinite(layer.weight.numpy()))


def test_adam_makes_no_scratch_buffer_where_a_fused_kernel_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import emulated_cupy_backend
    from support import emulated_cupy

    made: list[tuple[int, ...]] = []
    original = emulated_cupy.make_module().empty_like

    def counting_empty_like(array: Any, *args: Any, **kwargs: Any) -> Any:
        made.append(tuple(array.shape))
        return original(array, *args, **kwargs)

    backend = emulated_cupy_backend()
    monkeypatch.setattr(backend._cp, "empty_like", counting_empty_like)
    with sg.use_backend(backend):
        model = Line()
        opt = sg.optim.Adam(model)
        grads = model.alloc_grads()
        model(sg.ones(2, 2).trace(grads)).sum().backward()
        opt.update(model, grads)
    assert made == []  # the one-launch kernel needs no scratch; NumPy's keeps one per shape


def test_clipping_on_the_device_equals_clipping_on_the_host() -> None:
    from conftest import emulated_cupy_backend

    results = []
    for backend in ("numpy", emulated_cupy_backend()):
        with sg.use_backend(backend):
            model = Line()
            opt = sg.optim.Sgd(model, lr=0.1, clip_norm=0.05)
            grads = model.alloc_grads()
            model(sg.ones(4, 2).trace(grads)).sum().backward()
            opt.update(model, grads)
            results.append(model.fc.weight.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)
