"""Programs that used to give a wrong answer with no error (issue #12), one test per item.

Each test fails on the code before the fix: it either shows the wrong value, or expects the
error that now replaces it. Behaviour that can differ by backend runs on every backend
(``backend`` fixture: NumPy, strict Array API, emulated CuPy, and real CuPy where a GPU is).
"""

from __future__ import annotations

import gc
import json
import os
import struct
import weakref
from pathlib import Path
from typing import Any, Literal as L

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import nn


def _grad_list(grads: Any, x: Any) -> list[Any]:
    return grads[x].tolist()


# --------------------------------------------------------------------------- A. gradients


@pytest.mark.parametrize(
    "left",
    [np.float64(0.1), np.sqrt(4.0), np.float32(3.0), np.int64(2)],
    ids=["float64", "sqrt", "float32", "int64"],
)
def test_a1_numpy_scalar_on_the_left_keeps_the_tape(backend: str, left: Any) -> None:
    grads = sg.Gradients()
    t = sg.tensor([1.0, 2.0]).trace(grads)
    product = left * t
    assert isinstance(product, sg.Tensor) and product.traced
    assert product.backend_dtype_name() == "float32"  # a NumPy scalar does not promote, as in PyTorch
    (product.sum() + (t * 0.0).sum()).backward()
    assert np.allclose(_grad_list(grads, t), [float(left)] * 2)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (lambda a, t: a * t, [3.0, 4.0]),
        (lambda a, t: a + t, [1.0, 1.0]),
        (lambda a, t: a - t, [-1.0, -1.0]),
        (lambda a, t: a / t, [-3.0, -1.0]),
        (lambda a, t: a**t, [3.0 * np.log(3.0), 16.0 * np.log(4.0)]),
    ],
    ids=["mul", "add", "sub", "div", "pow"],
)
def test_a1_numpy_array_on_the_left_gives_a_traced_tensor(backend: str, expression: Any, expected: Any) -> None:
    grads = sg.Gradients()
    t = sg.tensor([1.0, 2.0]).trace(grads)
    result = expression(np.array([3.0, 4.0], dtype=np.float32), t)
    assert isinstance(result, sg.Tensor) and result.traced
    result.sum().backward()
    assert np.allclose(_grad_list(grads, t), expected, rtol=1e-5)


def test_a1_weight_decay_term_written_with_numpy_counts(numpy_backend: str) -> None:
    grads = sg.Gradients()
    w = sg.tensor([1.0, -2.0]).trace(grads)
    decay = np.float64(0.1) * (w * w).sum()
    (decay + w.sum()).backward()
    assert np.allclose(_grad_list(grads, w), [1.0 + 0.2, 1.0 - 0.4])


def test_a1_numpy_comparisons_and_matmul_with_a_tensor_on_the_right(numpy_backend: str) -> None:
    t = sg.tensor([1.0, 5.0])
    assert (np.array([2.0, 2.0]) < t).tolist() == [False, True]
    grads = sg.Gradients()
    v = sg.tensor([1.0, 2.0]).trace(grads)
    (np.ones((2, 2), dtype=np.float32) @ v).sum().backward()
    assert _grad_list(grads, v) == [2.0, 2.0]


def test_a1_numpy_ufunc_on_a_traced_tensor_says_to_use_the_shapegrad_op(numpy_backend: str) -> None:
    t = sg.tensor([1.0]).trace(sg.Gradients())
    with pytest.raises(sg.TapeError, match=r"numpy.exp on a traced tensor would drop its tape.*sg.exp"):
        np.exp(t)
    assert np.exp(sg.tensor([0.0])).tolist() == [1.0]  # untraced: plain NumPy, as before


def test_a1_implicit_conversion_of_a_traced_tensor_is_refused(numpy_backend: str) -> None:
    t = sg.tensor([1.0, 2.0]).trace(sg.Gradients())
    with pytest.raises(sg.TapeError, match=r"implicit conversion of a traced tensor.*t.detach\(\).numpy\(\)"):
        np.asarray(t)
    assert t.detach().numpy().tolist() == [1.0, 2.0]


def test_a2_polynomial_gradient_at_zero_is_pytorch_s(backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor(0.0).trace(grads)
    coefficients = [3.0, 5.0, 7.0]
    total = sum((c * x**i for i, c in enumerate(coefficients)), start=sg.tensor(0.0))
    total.backward()
    assert grads[x].item() == 5.0  # d/dx (3 + 5x + 7x²) at 0; x**0 contributes 0, not NaN


def test_a2_tensor_power_at_zero_base_and_exponent(backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([0.0, 0.0, 2.0]).trace(grads)
    y = sg.tensor([0.0, 2.0, 0.0]).trace(grads)
    (x**y).sum().backward()
    # PyTorch: d/dx = 0 where y = 0; d/dy = 0 where x = 0; d/dy = log(2) at (2, 0).
    assert np.allclose(_grad_list(grads, x), [0.0, 0.0, 0.0])
    assert np.allclose(_grad_list(grads, y), [0.0, 0.0, np.log(2.0)])


def test_a2_scalar_base_power_at_zero_base(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0, 2.0]).trace(grads)
    (0.0**x).sum().backward()
    assert _grad_list(grads, x) == [0.0, 0.0]


class _Line(nn.Module, checked=False):
    def __init__(self) -> None:
        self.fc = nn.Linear(2, 1, generator=sg.Generator(0))

    def __call__(self, x: Any) -> Any:
        return self.fc(x)


def test_a3_an_optimizer_update_between_forward_and_backward_is_detected(backend: str) -> None:
    model = _Line()
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


def test_a3_a_load_between_forward_and_backward_is_detected(tmp_path: Path, numpy_backend: str) -> None:
    model = _Line()
    path = tmp_path / "m.safetensors"
    sg.save(model, path)
    grads = model.alloc_grads()
    loss = model(sg.ones(4, 2).trace(grads)).sum()
    sg.load(model, path)
    with pytest.raises(sg.TapeError, match="modified in place"):
        loss.backward()


def test_a3_backward_before_the_update_still_works(numpy_backend: str) -> None:
    model = _Line()
    opt = sg.optim.Adam(model)
    grads = model.alloc_grads()
    for _ in range(3):
        grads.zero()
        model(sg.ones(4, 2).trace(grads)).sum().backward()
        opt.update(model, grads)


def _exact_sigmoid(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.longdouble)
    return (1 / (1 + np.exp(-x))).astype(np.float64)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a4_sigmoid_keeps_relative_precision_for_negative_inputs(backend: str, dtype: str) -> None:
    values = np.linspace(-80, 80, 641)
    got = sg.sigmoid(sg.tensor(values, dtype=dtype)).numpy().astype(np.float64)
    exact = _exact_sigmoid(values)
    assert np.max(np.abs(got - exact) / exact) <= (1e-6 if dtype == "float32" else 1e-13)
    deep = sg.sigmoid(sg.tensor([-40.0], dtype="float64")).item()
    assert deep > 0 and abs(deep - 4.248354255291589e-18) / 4.248354255291589e-18 < 1e-12


def test_a4_softplus_gradient_and_log_sigmoid_are_precise(backend: str) -> None:
    values = np.linspace(-80, 80, 641)
    exact = _exact_sigmoid(values)
    grads = sg.Gradients()
    x = sg.tensor(values, dtype="float32").trace(grads)
    sg.softplus(x).sum().backward()
    slope = grads[x].numpy().astype(np.float64)
    assert np.max(np.abs(slope - exact) / exact) <= 1e-6
    log_sigmoid = sg.log(sg.sigmoid(sg.tensor(values, dtype="float32"))).numpy().astype(np.float64)
    negative = values <= 0  # where the cancellation was; above 0, log σ ≈ -e^-x rounds to 0 as in PyTorch
    expected = np.log(exact)
    assert np.max(np.abs(log_sigmoid - expected)[negative] / np.abs(expected[negative])) <= 1e-6
    assert np.max(np.abs(log_sigmoid - expected)[~negative]) <= 1e-6


def test_a4_float16_gelu_gradient_is_finite_far_out(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([-1000.0, -700.0, -3.0, 0.5, 700.0, 1000.0], dtype="float16").trace(grads)
    sg.gelu(x).sum().backward()
    slope = grads[x].numpy()
    assert np.all(np.isfinite(slope))
    assert slope[0] == 0 and slope[-1] == 1


def test_a5_a_leaf_s_gradient_has_the_leaf_s_dtype(backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0, 2.0], dtype="float32").trace(grads)
    target = sg.tensor([0.5, 0.5], dtype="float64")
    # Activations with fused CuPy backward kernels see float64 gradients through the
    # float64 target; each node's gradient is cast to its own dtype.
    loss = ((sg.sigmoid(x) + sg.tanh(x) + sg.relu(x) + sg.gelu(x) + sg.softplus(x)) * target).sum()
    assert loss.backend_dtype_name() == "float64"
    loss.backward()
    assert grads[x].backend_dtype_name() == "float32"


def test_a5_float64_data_into_float32_weights_is_refused_by_name(numpy_backend: str) -> None:
    layer = nn.Linear(3, 2)
    with pytest.raises(sg.DTypeError, match=r"linear: input is float64 \(4, 3\) but weight is float32.*astype"):
        layer(sg.tensor(np.zeros((4, 3))))
    with pytest.raises(sg.DTypeError, match="matmul: left is float32"):
        sg.matmul(sg.zeros(2, 3), sg.zeros(3, 2, dtype="float64"))


def test_a6_traced_integer_ids_carry_the_tape_and_say_they_get_no_gradient(backend: str) -> None:
    embedding = nn.Embedding(5, 3, generator=sg.Generator(0))
    grads = sg.Gradients()
    ids = sg.tensor([1, 4]).trace(grads, keep_grad=True)
    out = embedding(ids)
    assert out.traced
    out.sum().backward()
    with pytest.raises(sg.TapeError, match="integer tensors .* never receive a gradient"):
        grads[ids]


class _Encoder(nn.Module, checked=False):
    def __init__(self) -> None:
        self.fc = nn.Linear(3, 4, generator=sg.Generator(1))

    def __call__(self, x: Any) -> Any:
        return self.fc(x).tanh()


class _Decoder(nn.Module, checked=False):
    def __init__(self) -> None:
        self.fc = nn.Linear(4, 2, generator=sg.Generator(2))

    def __call__(self, x: Any) -> Any:
        return self.fc(x)


def test_a7_two_chained_models_each_with_its_gradients_and_optimizer(backend: str) -> None:
    enc, dec = _Encoder(), _Decoder()
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


def test_a7_the_error_says_where_the_decoder_s_gradients_went(numpy_backend: str) -> None:
    enc, dec = _Encoder(), _Decoder()
    g_enc, g_dec = enc.alloc_grads(), dec.alloc_grads()
    opt_dec = sg.optim.Sgd(dec, lr=0.01)
    dec(enc(sg.ones(5, 3).trace(g_enc))).sum().backward()
    with pytest.raises(sg.UnusedParameterError, match=r"computed by a backward pass but went to no Gradients.*trace"):
        opt_dec.update(dec, g_dec)


class _TwoHeads(nn.Module, checked=False):
    def __init__(self) -> None:
        self.a = nn.parameter(sg.tensor([1.0]))
        self.b = nn.parameter(sg.tensor([1.0]))


def test_a8_adam_bias_correction_counts_each_parameter_s_own_steps(numpy_backend: str) -> None:
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


# --------------------------------------------------------------------------- B. aliasing


def test_b9_tensor_copies_a_numpy_buffer(backend: str) -> None:
    buffer = np.array([2.0], dtype=np.float32)
    grads = sg.Gradients()
    t = sg.tensor([1.0]).trace(grads)
    loss = (t * sg.tensor(buffer)).sum()
    buffer[0] = 20.0  # a data loader refilling its buffer after the forward pass
    loss.backward()
    assert _grad_list(grads, t) == [2.0]


def test_b9_tensor_of_a_tensor_is_a_copy(backend: str) -> None:
    source = sg.tensor([1.0, 2.0])
    copy = sg.tensor(source)
    layer, other = nn.Linear(2, 2), nn.Linear(2, 2)
    other_weight = sg.tensor(layer.weight)
    source.data[...] = 5.0 if backend != "strict" else source.data
    assert copy.tolist() == [1.0, 2.0]
    assert other_weight.data is not layer.weight.data
    del other


def test_b9_asarray_and_from_numpy_share_memory_on_numpy(numpy_backend: str) -> None:
    buffer = np.zeros(3, dtype=np.float32)
    shared, from_numpy = sg.asarray(buffer), sg.from_numpy(buffer)
    buffer[1] = 7.0
    assert shared.tolist() == [0.0, 7.0, 0.0] == from_numpy.tolist()
    with pytest.raises(sg.DTypeError, match="from_numpy expects a numpy.ndarray"):
        sg.from_numpy([1.0])  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType] -- the mistake under test


def test_b9_np_asarray_of_a_parameter_is_read_only(numpy_backend: str) -> None:
    layer = nn.Linear(2, 2)
    view = np.asarray(layer.weight)
    with pytest.raises(ValueError, match="read-only"):
        view[0, 0] = 100.0
    assert np.asarray(layer.weight, copy=True).flags.writeable


def test_b10_a_plain_tensor_assigned_over_a_parameter_is_refused(numpy_backend: str) -> None:
    model = _Decoder()
    with pytest.raises(sg.ParameterError, match=r"Linear.*weight is a parameter.*sg.nn.parameter"):
        model.fc.weight = sg.tensor(np.zeros((4, 2), dtype=np.float32))
    with pytest.raises(TypeError):  # PyTorch's exception type, for code that catches it
        model.fc.weight = model.fc.weight.to("strict")
    model.fc.weight = nn.parameter(sg.zeros(4, 2))  # the way that keeps it trained
    assert "fc.weight" in dict(model.named_parameters())


def test_b11_a_kept_loss_releases_the_step_s_activations_when_the_tape_ends(numpy_backend: str) -> None:
    model = _Encoder()
    grads = model.alloc_grads()
    history: list[Any] = []
    refs: list[Any] = []
    for _ in range(3):
        grads.zero()
        hidden = model(sg.ones(64, 3).trace(grads))
        refs.append(weakref.ref(hidden._data))
        loss = (hidden * hidden).sum()
        del hidden
        loss.backward()
        history.append(loss)
    grads.zero()
    gc.collect()
    assert all(ref() is None for ref in refs)
    assert [round(loss.item(), 3) for loss in history] == [round(history[0].item(), 3)] * 3


# --------------------------------------------------------------------------- C. refusals


def _checkpoint(tmp_path: Path) -> tuple[_Line, Any, Path]:
    model = _Line()
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


@pytest.mark.parametrize("step_count", ["-3", "many"])
def test_c12_corrupt_step_count_is_refused_before_any_copy(tmp_path: Path, numpy_backend: str, step_count: str) -> None:
    _, _, path = _checkpoint(tmp_path)
    _rewrite_metadata(path, step_count=step_count)
    fresh = _Line()
    fresh_opt = sg.optim.Adam(fresh)
    before = {n: t.numpy().copy() for n, t in fresh.named_tensors()}
    with pytest.raises(sg.CheckpointError, match="step_count"):
        sg.load(fresh, path, optimizer=fresh_opt)
    assert all(np.array_equal(before[n], t.numpy()) for n, t in fresh.named_tensors())
    assert fresh_opt.step_count == 0


def _safetensors_file(path: Path, dtype: str, metadata: dict[str, str]) -> None:
    size = 2 * (2 if dtype == "BF16" else 1)  # two elements of BF16 or of an 8-bit float
    header = {"__metadata__": metadata, "model.fc.weight": {"dtype": dtype, "shape": [2, 1], "data_offsets": [0, size]}}
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"\x00" * size)


def test_c12_a_bf16_tensor_is_a_checkpoint_error_naming_it(tmp_path: Path, numpy_backend: str) -> None:
    path = tmp_path / "other.safetensors"
    _safetensors_file(path, "BF16", {"format": "shapegrad"})
    with pytest.raises(sg.CheckpointError, match=r"tensor 'model.fc.weight' has dtype BF16"):
        sg.load(_Line(), path)


def test_c12_another_library_s_file_is_refused_before_reading_tensors(tmp_path: Path, numpy_backend: str) -> None:
    path = tmp_path / "hf.safetensors"
    _safetensors_file(path, "F8_E4M3", {"format": "pt"})
    with pytest.raises(sg.CheckpointError, match="not a shapegrad checkpoint"):
        sg.load(_Line(), path)


def test_c13_a_raising_schedule_changes_nothing(numpy_backend: str) -> None:
    model = _Line()

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


def test_c13_a_parameter_from_a_read_only_array_owns_writable_memory(tmp_path: Path, numpy_backend: str) -> None:
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
def test_c14_optimizer_settings_are_validated_at_construction(numpy_backend: str, make: Any) -> None:
    with pytest.raises(sg.HyperparameterError, match="invalid optimizer setting: expected") as info:
        make(_Line())
    assert isinstance(info.value, ValueError)


def test_c14_an_optimizer_over_no_trainable_parameter_is_refused(numpy_backend: str) -> None:
    with pytest.raises(sg.HyperparameterError, match="empty parameter list"):
        sg.optim.Adam(_Line().freeze())


def test_c15_update_before_backward_says_backward_has_not_run(numpy_backend: str) -> None:
    model = _Line()
    opt = sg.optim.Adam(model, unused="ignore")
    grads = model.alloc_grads()
    grads.zero()
    with pytest.raises(sg.UnusedParameterError, match=r"backward\(\) has probably not run since grads.zero\(\)"):
        opt.update(model, grads)


def test_c16_checkpoints_honour_the_umask_and_keep_an_existing_mode(tmp_path: Path, numpy_backend: str) -> None:
    old = os.umask(0o022)
    try:
        path = tmp_path / "m.safetensors"
        sg.save(_Line(), path)
        assert path.stat().st_mode & 0o777 == 0o644
        path.chmod(0o640)
        sg.save(_Line(), path)
        assert path.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)


# --------------------------------------------------------------------------- D. edge cases


def test_d17_flatten_of_an_empty_batch_keeps_its_features(backend: str) -> None:
    assert nn.Flatten()(sg.zeros(0, 2, 3, 3)).shape == (0, 18)


def test_d17_softmax_family_over_an_empty_axis_is_pytorch_s(backend: str) -> None:
    empty = sg.zeros(2, 0)
    assert sg.softmax(empty).shape == (2, 0)
    assert sg.log_softmax(empty).shape == (2, 0)
    assert sg.logsumexp(empty, axis=-1).tolist() == [-np.inf, -np.inf]


def test_d17_attention_over_an_empty_sequence(backend: str) -> None:
    attention = nn.MultiHeadAttention[L[8]](num_heads=2, generator=sg.Generator(0))
    assert attention(sg.zeros(2, 0, 8)).shape == (2, 0, 8)
    assert attention(sg.zeros(2, 3, 8), sg.zeros(2, 0, 8), sg.zeros(2, 0, 8)).shape == (2, 3, 8)


def test_d17_kl_div_of_an_empty_batch_is_nan(backend: str) -> None:
    assert np.isnan(sg.losses.kl_div(sg.zeros(0, 3), sg.zeros(0, 3)).item())


def test_d17_negative_index_tensors_count_from_the_end(backend: str) -> None:
    grads = sg.Gradients()
    v = sg.tensor([1.0, 2.0, 3.0]).trace(grads)
    picked = v[sg.tensor([-1, 0, -1])]
    assert picked.tolist() == [3.0, 1.0, 3.0]
    picked.sum().backward()
    assert _grad_list(grads, v) == [1.0, 0.0, 2.0]


def test_d17_a_number_to_the_power_of_a_tensor(backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0, 3.0]).trace(grads)
    (2.0**x).sum().backward()
    assert np.allclose(_grad_list(grads, x), [2.0 * np.log(2.0), 8.0 * np.log(2.0)])


def test_d17_complex_data_is_refused_as_list_and_as_array(numpy_backend: str) -> None:
    for data in ([1j, 2.0], np.array([1j, 2.0])):
        with pytest.raises(sg.DTypeError, match="real numeric"):
            sg.tensor(data)


# --------------------------------------------------------------------------- E. backends


@pytest.mark.parametrize(
    "index",
    [lambda: sg.tensor([5]), lambda: (slice(None), sg.tensor([7])), lambda: (Ellipsis, sg.tensor([-9]))],
    ids=["rows", "columns", "ellipsis"],
)
def test_e19_out_of_range_index_arrays_raise_on_every_backend(backend: str, index: Any) -> None:
    x = sg.zeros(3, 4)
    with pytest.raises(sg.ShapeError, match="out of range|must lie in"):
        x[index()].tolist()  # on a device the check is read back with the values


def test_e19_out_of_range_labels_fail_before_backward_on_every_backend(backend: str) -> None:
    grads = sg.Gradients()
    logits = sg.zeros(2, 3).trace(grads)
    with pytest.raises(sg.ShapeError, match=r"labels must lie in \[0, 3\)"):
        sg.losses.cross_entropy(logits, sg.tensor([0, 3])).backward()


def test_e21_float16_adam_keeps_float32_state_and_stays_finite(numpy_backend: str) -> None:
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


def test_e21_dropout_draws_its_mask_in_the_tensor_s_dtype(numpy_backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def float64_draws(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a float64 uniform draw for a float32 mask")

    class Float32Only:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def __getattr__(self, name: str) -> Any:
            return float64_draws if name == "uniform" else getattr(self.inner, name)

    gen = sg.Generator(0)
    monkeypatch.setattr(gen._source, "_gen", Float32Only(gen._source._gen))
    out = nn.Dropout(0.5, generator=gen)(sg.ones(1000))
    assert out.backend_dtype_name() == "float32"
    assert 400 < int((out > 0).numpy().sum()) < 600


def test_e22_declared_versions_are_the_ones_the_code_needs() -> None:
    text = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    assert '"numpy>=2' in text
    assert '"cupy-cuda12x>=14' in text


class _TokenModel(nn.Module, checked=False):
    def __init__(self) -> None:
        self.embed = nn.Embedding(10, 4, generator=sg.Generator(0))
        self.head = nn.Linear(4, 3, generator=sg.Generator(1))

    def __call__(self, ids: Any) -> Any:
        return self.head(self.embed(ids))


def test_e20_a_training_step_synchronises_with_the_device_once() -> None:
    import emulated_cupy
    from conftest import emulated_cupy_backend

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


def test_e21_adam_makes_no_scratch_buffer_where_a_fused_kernel_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import emulated_cupy
    from conftest import emulated_cupy_backend

    made: list[tuple[int, ...]] = []
    original = emulated_cupy.make_module().empty_like

    def counting_empty_like(array: Any, *args: Any, **kwargs: Any) -> Any:
        made.append(tuple(array.shape))
        return original(array, *args, **kwargs)

    backend = emulated_cupy_backend()
    monkeypatch.setattr(backend._cp, "empty_like", counting_empty_like)
    with sg.use_backend(backend):
        model = _Line()
        opt = sg.optim.Adam(model)
        grads = model.alloc_grads()
        model(sg.ones(2, 2).trace(grads)).sum().backward()
        opt.update(model, grads)
    assert made == []  # the one-launch kernel needs no scratch; NumPy's keeps one per shape


def test_e24_the_emulation_refuses_what_cupy_refuses() -> None:
    import emulated_cupy

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


def test_e23_the_whole_suite_passes_with_the_emulated_cupy_as_the_default_backend() -> None:
    """What ``benchmarks/gpu_check.sh`` does on a GPU (``SHAPEGRAD_BACKEND=cupy``), on the
    emulated CuPy: every test without a backend fixture runs on it, so a test or library
    path that mixes backends or reads device memory implicitly fails here, on a CPU."""
    import subprocess
    import sys

    if os.environ.get("SHAPEGRAD_TEST_DEFAULT_BACKEND"):
        pytest.skip("this run already is the emulated-CuPy run")
    root = Path(__file__).parents[1]
    env = {**os.environ, "SHAPEGRAD_TEST_DEFAULT_BACKEND": "emulated-cupy"}
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-o", "addopts=", "tests"]
    # Backend-independent files (pyright, ruff, the example scripts, the benchmark smoke run) are left out.
    for name in ("test_typecheck.py", "test_lint.py", "test_examples.py", "test_benchmarks.py"):
        command.append(f"--ignore=tests/{name}")
    result = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert " passed" in result.stdout.splitlines()[-1]


def test_e20_clipping_on_the_device_equals_clipping_on_the_host() -> None:
    from conftest import emulated_cupy_backend

    results = []
    for backend in ("numpy", emulated_cupy_backend()):
        with sg.use_backend(backend):
            model = _Line()
            opt = sg.optim.Sgd(model, lr=0.1, clip_norm=0.05)
            grads = model.alloc_grads()
            model(sg.ones(4, 2).trace(grads)).sum().backward()
            opt.update(model, grads)
            results.append(model.fc.weight.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)
