"""What an optimizer update checks and changes: weights written between a forward and its
backward, chained models each with its optimizer, per-parameter step counts, settings, refusals
that change nothing, float16 state, and clipping on the device.

Each test once showed a wrong answer with no error (issue #12); it fails on the code before
its fix. Behaviour that can differ by backend runs on every backend (``backend`` fixture).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

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
        lambda m: sg.optim.Adam(m, eps=-1e-8),
        lambda m: sg.optim.AdamW(m, weight_decay=-0.1),
        lambda m: sg.optim.Sgd(m, momentum=-0.5),
        lambda m: sg.optim.Sgd(m, weight_decay=-1.0),
        lambda m: sg.optim.RMSprop(m, alpha=1.5),
        lambda m: sg.optim.RMSprop(m, eps=-1e-8),
        lambda m: sg.optim.Sgd(m, nesterov=True),
        lambda m: sg.optim.Sgd(m, momentum=0.9, dampening=0.5, nesterov=True),
    ],
    ids=[
        "lr",
        "beta1",
        "beta2",
        "eps",
        "wd",
        "momentum",
        "sgd-wd",
        "alpha",
        "rms-eps",
        "nesterov",
        "nesterov-dampening",
    ],
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


def _shrinking_run(make: Any, dtype: str, steps: int = 10) -> tuple[Any, list[np.ndarray]]:
    """``steps`` updates of a Linear(4, 3) on inputs scaled down each step (so v falls and
    AMSGrad's maximum differs from it); the weights after each step."""
    layer = nn.Linear(4, 3, generator=sg.Generator(5), dtype=dtype)
    opt, grads = make(layer), layer.alloc_grads()
    x = np.random.default_rng(2).standard_normal((6, 4))
    path = []
    for t in range(steps):
        grads.zero()
        (layer(sg.tensor(x * 10.0 / (t + 1), dtype=dtype).trace(grads)) ** 2).mean().backward()
        opt.update(layer, grads)
        path.append(layer.weight.numpy().astype(np.float64))
    return opt, path


def _torch_shrinking_run(torch: Any, make: Any, weight: np.ndarray, bias: np.ndarray, dtype: Any) -> list[np.ndarray]:
    layer = torch.nn.Linear(4, 3).to(dtype)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weight.T))
        layer.bias.copy_(torch.tensor(bias))
    opt = make(layer.parameters())
    x = np.random.default_rng(2).standard_normal((6, 4))
    path = []
    for t in range(10):
        opt.zero_grad()
        (layer(torch.tensor(x * 10.0 / (t + 1), dtype=dtype)) ** 2).mean().backward()
        opt.step()
        path.append(layer.weight.detach().numpy().T.astype(np.float64))
    return path


@pytest.mark.parametrize("decoupled", [False, True], ids=["adam", "adamw"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_amsgrad_matches_torch_and_never_runs_the_plain_adam_kernel(
    decoupled: bool, dtype: str, numpy_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adam/AdamW(amsgrad=True) against torch's over 10 steps whose gradients shrink (the
    running maximum is then what the denominator uses), on the NumPy backend with numba
    on (the default): the fused "adam" kernel, which keeps no maximum, is never asked for,
    while amsgrad=False still gets it."""
    torch = pytest.importorskip("torch")
    from shapegrad.optim import _rules
    from shapegrad_backends import numba_kernels

    if not numba_kernels.available():
        pytest.skip("numba is not installed: no fused Adam kernel to avoid")
    asked: list[str] = []
    original = _rules.fused_kernel

    def spying(backend: Any, name: str, dtype: Any) -> Any:
        asked.append(name)
        return original(backend, name, dtype)

    monkeypatch.setattr(_rules, "fused_kernel", spying)
    kind = sg.optim.AdamW if decoupled else sg.optim.Adam
    tkind = torch.optim.AdamW if decoupled else torch.optim.Adam
    settings: dict[str, Any] = {"lr": 0.05, "betas": (0.8, 0.9), "weight_decay": 0.1}
    start = nn.Linear(4, 3, generator=sg.Generator(5), dtype=dtype)
    weight, bias = start.weight.numpy(), start.bias.numpy() if start.bias is not None else None
    assert bias is not None
    tdtype = torch.float64 if dtype == "float64" else torch.float32
    tol: dict[str, float] = {"rtol": 1e-10, "atol": 1e-12} if dtype == "float64" else {"rtol": 2e-5, "atol": 1e-6}
    opt, ours = _shrinking_run(lambda m: kind(m, amsgrad=True, **settings), dtype)
    assert "adam" not in asked
    theirs = _torch_shrinking_run(torch, lambda p: tkind(p, amsgrad=True, **settings), weight, bias, tdtype)
    for t, (found, expected) in enumerate(zip(ours, theirs, strict=True)):
        np.testing.assert_allclose(found, expected, err_msg=f"step {t + 1}", **tol)
    state = opt.state_arrays()
    assert np.any(state["weight.max_exp_avg_sq"] > state["weight.exp_avg_sq"])  # the maximum mattered
    plain = _torch_shrinking_run(torch, lambda p: tkind(p, **settings), weight, bias, tdtype)
    assert not np.allclose(plain[-1], theirs[-1], **tol)
    _shrinking_run(lambda m: kind(m, **settings), dtype)
    assert "adam" in asked  # the spy sees the kernel where it is allowed


def test_amsgrad_is_per_group_and_validated(numpy_backend: str) -> None:
    """amsgrad is a setting a Group may override: only its parameters keep a running
    maximum. A value that is not a bool is refused naming expected and found."""
    opt = sg.optim.Adam(Line(), groups=[sg.optim.Group("*.bias", amsgrad=True)])
    assert sorted(opt.state_arrays()) == [
        "fc.bias.exp_avg",
        "fc.bias.exp_avg_sq",
        "fc.bias.max_exp_avg_sq",
        "fc.weight.exp_avg",
        "fc.weight.exp_avg_sq",
    ]
    with pytest.raises(sg.HyperparameterError, match=r"expected amsgrad a bool, found 'yes'"):
        sg.optim.AdamW(Line(), amsgrad=cast(Any, "yes"))
    with pytest.raises(sg.HyperparameterError, match=r"expected amsgrad a bool, found 1"):
        sg.optim.Adam(Line(), groups=[sg.optim.Group("*.bias", amsgrad=1)])


def test_compiled_amsgrad_step_replays_as_eager(numpy_backend: str) -> None:
    """A compiled training step with Adam(amsgrad=True) replays (the update is a host call)
    and gives the eager run's weights and state bit for bit."""
    results = []
    x = np.random.default_rng(3).standard_normal((6, 4))
    for compiled in (False, True):
        layer = nn.Linear(4, 3, generator=sg.Generator(5), dtype="float64")
        opt, grads = sg.optim.Adam(layer, lr=0.05, betas=(0.8, 0.9), amsgrad=True), layer.alloc_grads()

        def step(x: Any, layer: Any = layer, opt: Any = opt, grads: Any = grads) -> Any:
            grads.zero()
            loss = (layer(x.trace(grads)) ** 2).mean()
            loss.backward()
            opt.update(layer, grads)
            return loss

        run = sg.compile(step) if compiled else step
        for t in range(3):
            run(sg.tensor(x * 10.0 / (t + 1)))
        if compiled:
            assert run.eager_reason is None
            (recording,) = run.recordings
            assert recording.replays == 2
        results.append((layer.weight.numpy().copy(), {k: np.array(v) for k, v in opt.state_arrays().items()}))
    (eager_w, eager_state), (replayed_w, replayed_state) = results
    np.testing.assert_array_equal(replayed_w, eager_w)
    assert list(replayed_state) == list(eager_state)
    for name, value in replayed_state.items():
        np.testing.assert_array_equal(value, eager_state[name], err_msg=name)


def test_every_optimizer_s_defaults_are_pytorch_s(numpy_backend: str) -> None:
    """The README promises PyTorch's defaults: Sgd's lr was 1e-2 where torch.optim.SGD's is
    1e-3, so a port that relied on it trained ten times as fast."""
    torch = pytest.importorskip("torch")
    import inspect

    pairs = [
        (sg.optim.Sgd, torch.optim.SGD, ["lr", "momentum", "dampening", "weight_decay", "nesterov"]),
        (sg.optim.Adam, torch.optim.Adam, ["lr", "betas", "eps", "weight_decay", "amsgrad"]),
        (sg.optim.AdamW, torch.optim.AdamW, ["lr", "betas", "eps", "weight_decay", "amsgrad"]),
        (sg.optim.RMSprop, torch.optim.RMSprop, ["lr", "alpha", "eps", "weight_decay", "momentum", "centered"]),
        (sg.optim.Adagrad, torch.optim.Adagrad, ["lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps"]),
        (sg.optim.Adadelta, torch.optim.Adadelta, ["lr", "rho", "eps", "weight_decay"]),
    ]
    for ours, theirs, names in pairs:
        mine, torch_defaults = (
            inspect.signature(ours.__init__).parameters,
            inspect.signature(theirs.__init__).parameters,
        )
        for name in names:
            assert mine[name].default == torch_defaults[name].default, (ours.__name__, name)


def test_an_eps_of_zero_is_accepted_as_pytorch_does(numpy_backend: str) -> None:
    """Adam and RMSprop refused eps=0 (expected eps > 0), which PyTorch accepts (eps >= 0)."""
    for make in (sg.optim.Adam, sg.optim.AdamW, sg.optim.RMSprop):
        make(Line(), eps=0.0)
