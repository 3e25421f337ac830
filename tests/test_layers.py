"""The layer table: each layer's forward against a plain reference implementation and its
gradients (input and every parameter) against central differences in float64."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal as L, cast

import numpy as np
import pytest
from support import layer_reference as ref

import shapegrad as sg
from shapegrad import nn


def p(t: Any) -> np.ndarray:
    return np.asarray(t.numpy(), dtype=np.float64)


@dataclass(frozen=True)
class LayerCase:
    name: str
    build: Callable[[], Any]
    input_shape: tuple[int, ...]
    reference: Callable[[Any, np.ndarray], np.ndarray]
    integer_input: int = 0  # > 0: ids drawn below this, no input gradient


def gen() -> sg.Generator:
    return sg.Generator(seed=0)


CASES = [
    LayerCase(
        "linear",
        lambda: nn.Linear[L[4], L[3]](generator=gen(), dtype="float64"),
        (2, 5, 4),
        lambda m, x: x @ p(m.weight) + p(m.bias),
    ),
    LayerCase(
        "linear_no_bias",
        lambda: nn.Linear[L[4], L[3]](bias=False, generator=gen(), dtype="float64"),
        (3, 4),
        lambda m, x: x @ p(m.weight),
    ),
    LayerCase(
        "embedding",
        lambda: nn.Embedding[L[6], L[3]](generator=gen(), dtype="float64"),
        (2, 4),
        lambda m, x: p(m.weight)[x.astype(int)],
        integer_input=6,
    ),
    LayerCase(
        "conv2d",
        lambda: nn.Conv2d[L[2], L[3]](kernel_size=3, padding=1, generator=gen(), dtype="float64"),
        (2, 2, 5, 5),
        lambda m, x: ref.conv2d(x, p(m.weight), p(m.bias), 1, 1, 1, 1),
    ),
    LayerCase(
        "conv2d_stride_dilation",
        lambda: nn.Conv2d[L[2], L[2]](kernel_size=2, stride=2, dilation=2, generator=gen(), dtype="float64"),
        (1, 2, 7, 7),
        lambda m, x: ref.conv2d(x, p(m.weight), p(m.bias), 2, 0, 2, 1),
    ),
    LayerCase(
        "conv2d_groups",
        lambda: nn.Conv2d[L[4], L[2]](kernel_size=3, groups=2, bias=False, generator=gen(), dtype="float64"),
        (1, 4, 4, 4),
        lambda m, x: ref.conv2d(x, p(m.weight), None, 1, 0, 1, 2),
    ),
    LayerCase(
        "conv1d",
        lambda: nn.Conv1d[L[2], L[3]](kernel_size=3, padding=1, generator=gen(), dtype="float64"),
        (2, 2, 6),
        lambda m, x: _conv1d_ref(m, x),
    ),
    LayerCase(
        "conv_transpose2d",
        lambda: nn.ConvTranspose2d[L[2], L[3]](
            kernel_size=3, stride=2, padding=1, output_padding=1, generator=gen(), dtype="float64"
        ),
        (1, 2, 3, 3),
        lambda m, x: ref.conv_transpose2d(x, p(m.weight), p(m.bias), 2, 1, 1),
    ),
    LayerCase("max_pool", lambda: nn.MaxPool2d(2), (2, 2, 4, 4), lambda m, x: ref.pool2d(x, 2, 2, 0, "max")),
    LayerCase(
        "max_pool_padded",
        lambda: nn.MaxPool2d(3, stride=2, padding=1),
        (1, 2, 5, 5),
        lambda m, x: ref.pool2d(x, 3, 2, 1, "max"),
    ),
    LayerCase("avg_pool", lambda: nn.AvgPool2d(2, padding=1), (1, 2, 4, 4), lambda m, x: ref.pool2d(x, 2, 2, 1, "avg")),
    LayerCase("global_avg_pool", lambda: nn.GlobalAvgPool2d(), (2, 3, 4, 4), lambda m, x: x.mean(axis=(2, 3))),
    LayerCase("global_max_pool", lambda: nn.GlobalMaxPool2d(), (2, 3, 4, 4), lambda m, x: x.max(axis=(2, 3))),
    LayerCase("flatten", lambda: nn.Flatten(), (2, 3, 4), lambda m, x: x.reshape(2, -1)),
    LayerCase(
        "layer_norm",
        lambda: nn.LayerNorm[L[5]](dtype="float64"),
        (3, 5),
        lambda m, x: (
            (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * p(m.weight) + p(m.bias)
        ),
    ),
    LayerCase(
        "batch_norm_1d",
        lambda: nn.BatchNorm1d[L[3]](dtype="float64"),
        (4, 3),
        lambda m, x: (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5) * p(m.weight) + p(m.bias),
    ),
    LayerCase(
        "batch_norm_2d",
        lambda: nn.BatchNorm2d[L[2]](dtype="float64"),
        (3, 2, 2, 2),
        lambda m, x: (
            (x - x.mean((0, 2, 3), keepdims=True))
            / np.sqrt(x.var((0, 2, 3), keepdims=True) + 1e-5)
            * p(m.weight).reshape(1, -1, 1, 1)
            + p(m.bias).reshape(1, -1, 1, 1)
        ),
    ),
    LayerCase(
        "group_norm",
        lambda: nn.GroupNorm(2, 4, dtype="float64"),
        (2, 4, 3, 2),
        lambda m, x: _group_norm_ref(x, 2) * p(m.weight).reshape(1, -1, 1, 1) + p(m.bias).reshape(1, -1, 1, 1),
    ),
    LayerCase(
        "instance_norm_2d_affine",
        lambda: nn.InstanceNorm2d(3, affine=True, dtype="float64"),
        (2, 3, 3, 2),
        lambda m, x: _group_norm_ref(x, 3) * p(m.weight).reshape(1, -1, 1, 1) + p(m.bias).reshape(1, -1, 1, 1),
    ),
    LayerCase(
        "upsample_nearest",
        lambda: nn.Upsample(scale_factor=(2, 3)),
        (1, 2, 2, 3),
        lambda m, x: x.repeat(2, axis=2).repeat(3, axis=3),
    ),
    LayerCase(
        "upsample_bilinear_corners",
        lambda: nn.Upsample(size=(5, 3), mode="bilinear", align_corners=True),
        (1, 2, 3, 2),
        lambda m, x: _bilinear_corners_ref(x, 5, 3),
    ),
    LayerCase(
        "reflection_pad_2d",
        lambda: nn.ReflectionPad2d((1, 2, 2, 0)),
        (1, 2, 3, 4),
        lambda m, x: np.pad(x, ((0, 0), (0, 0), (2, 0), (1, 2)), mode="reflect"),
    ),
    LayerCase("attention_causal", lambda: _Causal(), (2, 3, 4), lambda m, x: _attention_ref(m.inner, x, True)),
    LayerCase(
        "attention",
        lambda: nn.MultiHeadAttention[L[4]](num_heads=2, generator=gen(), dtype="float64"),
        (2, 3, 4),
        lambda m, x: _attention_ref(m, x, False),
    ),
    LayerCase(
        "residual",
        lambda: nn.Residual(nn.Linear[L[3], L[3]](generator=gen(), dtype="float64")),
        (2, 3),
        lambda m, x: x + x @ p(m.inner.weight) + p(m.inner.bias),
    ),
    LayerCase(
        "sequential",
        lambda: nn.Sequential(
            nn.Linear[L[3], L[4]](generator=gen(), dtype="float64"),
            nn.Tanh(),
            nn.Linear[L[4], L[2]](generator=gen(), dtype="float64"),
        ),
        (5, 3),
        lambda m, x: np.tanh(x @ p(m[0].weight) + p(m[0].bias)) @ p(m[2].weight) + p(m[2].bias),
    ),
    LayerCase(
        "gelu",
        lambda: nn.GELU(),
        (3, 4),
        lambda m, x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
    ),
    LayerCase("leaky_relu", lambda: nn.LeakyReLU(0.2), (3, 4), lambda m, x: np.where(x > 0, x, 0.2 * x)),
    LayerCase("silu", lambda: nn.SiLU(), (3, 4), lambda m, x: x / (1 + np.exp(-x))),
    LayerCase("mish", lambda: nn.Mish(), (3, 4), lambda m, x: x * np.tanh(np.log1p(np.exp(x)))),
    LayerCase("elu", lambda: nn.ELU(0.5), (3, 4), lambda m, x: np.where(x > 0, x, 0.5 * np.expm1(x))),
    LayerCase(
        "selu",
        lambda: nn.SELU(),
        (3, 4),
        lambda m, x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)),
    ),
    LayerCase("log_sigmoid", lambda: nn.LogSigmoid(), (3, 4), lambda m, x: -np.log1p(np.exp(-x))),
    LayerCase("hardtanh", lambda: nn.Hardtanh(-0.5, 0.5), (3, 4), lambda m, x: np.clip(x, -0.5, 0.5)),
]


def _group_norm_ref(x: np.ndarray, groups: int) -> np.ndarray:
    """Each sample's group of channels over all its positions to mean 0, variance 1."""
    rows = x.reshape(x.shape[0], groups, -1)
    normed = (rows - rows.mean(-1, keepdims=True)) / np.sqrt(rows.var(-1, keepdims=True) + 1e-5)
    return normed.reshape(x.shape)


def _bilinear_corners_ref(x: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """Bilinear interpolation with align_corners=True, one output pixel at a time."""
    _, _, h, w = x.shape
    out = np.zeros((*x.shape[:2], out_h, out_w))
    for i in range(out_h):
        for j in range(out_w):
            sy, sx = i * (h - 1) / (out_h - 1), j * (w - 1) / (out_w - 1)
            y0, x0 = min(int(sy), h - 1), min(int(sx), w - 1)
            y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
            fy, fx = sy - y0, sx - x0
            out[:, :, i, j] = (
                x[:, :, y0, x0] * (1 - fy) * (1 - fx)
                + x[:, :, y0, x1] * (1 - fy) * fx
                + x[:, :, y1, x0] * fy * (1 - fx)
                + x[:, :, y1, x1] * fy * fx
            )
    return out


def _conv1d_ref(m: Any, x: np.ndarray) -> np.ndarray:
    padded = np.pad(x, ((0, 0), (0, 0), (m.padding, m.padding)))[:, :, None, :]
    return ref.conv2d(padded, p(m.weight), p(m.bias), 1, 0, 1, 1)[:, :, 0, :]


class _Causal(nn.Module):
    def __init__(self) -> None:
        self.inner = nn.MultiHeadAttention[L[4]](num_heads=2, generator=gen(), dtype="float64")

    def __call__(self, x: Any) -> Any:
        return self.inner(x, causal=True)


def _attention_ref(m: Any, x: np.ndarray, causal: bool) -> np.ndarray:
    weights = [
        p(t)
        for t in (
            m.q_proj.weight,
            m.q_proj.bias,
            m.k_proj.weight,
            m.k_proj.bias,
            m.v_proj.weight,
            m.v_proj.bias,
            m.out_proj.weight,
            m.out_proj.bias,
        )
    ]
    return ref.attention(x, *weights, heads=m.num_heads, causal=causal)


def _input(case: LayerCase, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if case.integer_input:
        return rng.integers(0, case.integer_input, case.input_shape)
    return rng.standard_normal(case.input_shape)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_forward_matches_reference(case: LayerCase, backend: str) -> None:
    layer = case.build()
    x = _input(case, 0)
    out = layer(sg.tensor(x))
    np.testing.assert_allclose(p(out), case.reference(layer, x), rtol=1e-9, atol=1e-10)


def _loss(layer: Any, x: np.ndarray, weights: np.ndarray, grads: Any = None) -> Any:
    t = sg.tensor(x)
    out = layer(t.trace(grads) if grads is not None else t)
    return (out * sg.tensor(weights)).sum()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_gradients_match_finite_differences(case: LayerCase, backend: str) -> None:
    layer = case.build()
    x = _input(case, 1)
    weights = np.random.default_rng(2).standard_normal(layer(sg.tensor(x)).shape)
    grads = layer.alloc_grads()
    traced = sg.tensor(x).trace(grads, keep_grad=True)
    (layer(traced) * sg.tensor(weights)).sum().backward()
    eps = 1e-6
    targets: list[tuple[str, Any, np.ndarray]] = [(path, t, p(grads[t])) for path, t in layer.named_parameters()]
    for path, tensor, analytic in targets:
        numeric = np.zeros_like(analytic)
        for flat in range(analytic.size):
            index = np.unravel_index(flat, analytic.shape)
            original = float(p(tensor)[index])
            values = []
            for shift in (eps, -eps):
                tensor.data[index] = original + shift
                values.append(_loss(layer, x, weights).item())
            tensor.data[index] = original
            numeric[index] = (values[0] - values[1]) / (2 * eps)
        np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-6, err_msg=path)
    if not case.integer_input:
        analytic_x = p(grads[traced])
        numeric_x = np.zeros_like(x)
        for flat in range(x.size):
            index = np.unravel_index(flat, x.shape)
            values = []
            for shift in (eps, -eps):
                moved = x.copy()
                moved[index] += shift
                values.append(_loss(layer, moved, weights).item())
            numeric_x[index] = (values[0] - values[1]) / (2 * eps)
        np.testing.assert_allclose(analytic_x, numeric_x, rtol=1e-5, atol=1e-6, err_msg="input")


def test_batch_norm_eval_uses_running_statistics(numpy_backend: str) -> None:
    bn = nn.BatchNorm1d[L[2]](dtype="float64", momentum=0.5)
    x = np.array([[1.0, 2.0], [3.0, 6.0], [5.0, 10.0]])
    bn(sg.tensor(x))
    np.testing.assert_allclose(p(bn.running_mean), 0.5 * x.mean(0))
    np.testing.assert_allclose(p(bn.running_var), 0.5 + 0.5 * x.var(0, ddof=1))
    bn.eval()
    out = p(bn(sg.tensor(x)))
    np.testing.assert_allclose(out, (x - p(bn.running_mean)) / np.sqrt(p(bn.running_var) + 1e-5))
    assert [n for n, _ in bn.named_tensors()] == ["weight", "bias", "running_mean", "running_var"]


@pytest.mark.parametrize("kind", ["1d", "2d"])
def test_batch_norm_momentum_none_is_torch_cumulative_average(kind: str, numpy_backend: str) -> None:
    """momentum=None: the running statistics are the cumulative average over the training
    batches (factor 1/num_batches_tracked), as torch's BatchNorm with momentum=None, for
    outputs, running_mean/running_var and the count over 5 batches, then in eval mode."""
    torch = pytest.importorskip("torch")
    shape = (6, 3) if kind == "1d" else (4, 3, 5, 5)
    ours: Any = (
        nn.BatchNorm1d(3, momentum=None, dtype="float64")
        if kind == "1d"
        else nn.BatchNorm2d(3, momentum=None, dtype="float64")
    )
    theirs = (torch.nn.BatchNorm1d if kind == "1d" else torch.nn.BatchNorm2d)(3, momentum=None).double()
    rng = np.random.default_rng(0)
    for i in range(5):
        x = rng.standard_normal(shape) * (i + 1) + i  # batches of different statistics
        with torch.no_grad():
            expected = theirs(torch.tensor(x)).numpy()
        np.testing.assert_allclose(p(ours(sg.tensor(x))), expected, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(p(ours.running_mean), theirs.running_mean.numpy(), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(p(ours.running_var), theirs.running_var.numpy(), rtol=1e-12)
    assert ours.num_batches_tracked.numpy().dtype == np.int64
    assert ours.num_batches_tracked.shape == () and int(ours.num_batches_tracked.item()) == 5
    assert [n for n, _ in ours.named_tensors()] == [
        "weight",
        "bias",
        "running_mean",
        "running_var",
        "num_batches_tracked",
    ]
    ours.eval()
    theirs.eval()
    x = rng.standard_normal(shape)
    with torch.no_grad():
        expected = theirs(torch.tensor(x)).numpy()
    np.testing.assert_allclose(p(ours(sg.tensor(x))), expected, rtol=1e-10, atol=1e-12)
    assert int(ours.num_batches_tracked.item()) == 5  # eval mode counts nothing


@pytest.mark.parametrize("momentum", [-0.1, 1.5, float("nan"), "0.1", True])
def test_batch_norm_refuses_a_bad_momentum(momentum: Any, numpy_backend: str) -> None:
    """A momentum that is neither None nor a number in [0, 1] is refused when built, naming
    what was expected and what was found."""
    with pytest.raises(
        sg.HyperparameterError, match=r"BatchNorm2d expects momentum to be a number in \[0, 1\] or None"
    ):
        nn.BatchNorm2d(3, momentum=momentum)
    assert nn.BatchNorm1d(3, momentum=0).momentum == 0.0
    assert nn.BatchNorm1d(3, momentum=np.float32(1.0)).momentum == 1.0


def _squares_trainer(model: Any) -> Callable[[Any], Any]:
    """One Adam step on the mean square of ``model``'s output."""
    opt, grads = sg.optim.Adam(model), model.alloc_grads()

    def step(x: Any) -> Any:
        grads.zero()
        loss = (model(x.trace(grads)) ** 2).mean()
        loss.backward()
        opt.update(model, grads)
        return loss

    return step


def test_compiled_step_with_momentum_none_replays_as_eager(numpy_backend: str) -> None:
    """A compiled training step through BatchNorm2d(momentum=None) replays (the count is an
    array the recording updates, not Python state that changes the layout) and gives the
    eager run's running statistics, count and weights bit for bit after 5 steps."""
    rng = np.random.default_rng(1)
    x = sg.tensor(rng.standard_normal((4, 3, 5, 5)).astype(np.float32))
    states = []
    for compiled in (False, True):
        model = nn.Sequential(nn.Conv2d[L[3], L[4]](3, padding=1, generator=gen()), nn.BatchNorm2d[L[4]](momentum=None))
        step = _squares_trainer(model)
        run = sg.compile(step) if compiled else step
        for _ in range(5):
            run(x)
        if compiled:
            assert run.eager_reason is None
            (recording,) = run.recordings
            assert recording.replays == 4
        states.append(model.state_dict())
    eager, replayed = states
    assert int(replayed["1.num_batches_tracked"]) == 5
    assert list(replayed) == list(eager)
    for name, value in replayed.items():
        np.testing.assert_array_equal(value, eager[name], err_msg=name)


def test_dropout_is_seeded_scaled_and_off_in_eval(numpy_backend: str) -> None:
    x = sg.ones(1000)
    first = nn.Dropout(0.3, generator=sg.Generator(7))(x).numpy()
    second = nn.Dropout(0.3, generator=sg.Generator(7))(x).numpy()
    np.testing.assert_array_equal(first, second)
    assert set(np.unique(first)) <= {0.0, np.float32(1 / 0.7)}
    assert 0.25 < (first == 0).mean() < 0.35
    drop = nn.Dropout(0.3)
    drop.eval()
    assert drop(x) is x


def test_layer_sizes_come_from_the_type_or_arguments(numpy_backend: str) -> None:
    assert nn.Linear[L[3], L[5]]().weight.shape == (3, 5)
    assert nn.Linear(3, 5).weight.shape == (3, 5)
    with pytest.raises(sg.ShapeError, match="needs its in_features"):
        nn.Linear()
    with pytest.raises(sg.ShapeError, match="contradicts"):
        nn.Linear[L[3], L[5]](4, 5)


def test_a_plain_int_size_beside_a_literal_type_argument_is_checked(numpy_backend: str) -> None:
    # Statically a plain int is accepted beside a literal type argument (LayerNorm[L[64]](n_embd),
    # sizes from a config object); at run time it must agree, and the error names both sizes.
    n_embd = 64
    assert nn.LayerNorm[L[64]](n_embd).weight is not None
    assert nn.Linear[L[64], L[256]](n_embd, 4 * n_embd).weight.shape == (64, 256)
    with pytest.raises(sg.ShapeError, match=r"normalized_size=48 contradicts the type's 64"):
        nn.LayerNorm[L[64]](48)
    with pytest.raises(sg.ShapeError, match=r"out_channels=16 contradicts the type's 8"):
        nn.Conv2d[L[3], L[8]](3, in_channels=3, out_channels=16)
    assert nn.LSTM[L[8], L[16]](8, 16, 2).hidden_size == 16  # the recurrent layers as well
    with pytest.raises(sg.ShapeError, match=r"hidden_size=32 contradicts the type's 16"):
        nn.GRU[L[8], L[16]](8, 32)

    class Hidden(sg.Dim): ...

    with pytest.raises(sg.ShapeError, match=r"write Hidden\(64\)"):  # a Dim type argument takes a Dim
        nn.Linear[Hidden, L[2]](64, 2)


def test_initialisation_matches_pytorch_bounds(numpy_backend: str) -> None:
    layer = nn.Linear[L[100], L[50]](generator=sg.Generator(0))
    assert np.abs(layer.weight.numpy()).max() <= 0.1
    assert np.abs(layer.weight.numpy()).max() > 0.09
    conv = nn.Conv2d[L[4], L[8]](kernel_size=3, generator=sg.Generator(0))
    assert np.abs(conv.weight.numpy()).max() <= 1 / 6


def test_named_parameters_have_dotted_paths_and_freeze(numpy_backend: str) -> None:
    class Net(nn.Module):
        def __init__(self) -> None:
            self.encoder = nn.Sequential(nn.Linear[L[2], L[3]](), nn.ReLU(), nn.Linear[L[3], L[3]]())
            self.heads = {"a": nn.Linear[L[3], L[1]]()}
            self.blocks = [nn.LayerNorm[L[3]]()]

    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == [
        "encoder.0.weight",
        "encoder.0.bias",
        "encoder.2.weight",
        "encoder.2.bias",
        "heads.a.weight",
        "heads.a.bias",
        "blocks.0.weight",
        "blocks.0.bias",
    ]
    assert net.num_parameters() == 6 + 3 + 9 + 3 + 3 + 1 + 3 + 3
    net.freeze("encoder")
    assert [n for n, _ in net.named_parameters(trainable_only=True)] == names[4:]
    assert net.alloc_grads().parameter_paths() == names[4:]
    with pytest.raises(sg.ShapegradError, match="no parameter or sub-module at 'decoder'"):
        net.freeze("decoder")


def test_modules_yields_each_module_once_for_an_init_loop(numpy_backend: str) -> None:
    shared = nn.Linear[L[4], L[4]]()
    model = nn.Sequential(nn.Linear[L[2], L[4]](), nn.ReLU(), shared, shared, nn.LayerNorm[L[4]]())
    assert [type(m).__name__ for m in model.modules()] == [
        "Sequential",
        "Linear[2, 4]",
        "ReLU",
        "Linear[4, 4]",
        "LayerNorm[4]",
    ]
    for m in model.modules():  # PyTorch's GPT-style initialisation loop
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    assert float(np.abs(shared.weight.numpy()).max()) < 0.2
    assert shared.bias is not None and not shared.bias.numpy().any()


def test_batchnorm2d_after_a_convolution_in_a_sequential(numpy_backend: str) -> None:
    block = nn.Sequential(nn.Conv2d[L[3], L[8]](3, padding=1), nn.BatchNorm2d[L[8]](), nn.ReLU(), nn.MaxPool2d(2))
    out = block(sg.randn(2, 3, 8, 8))
    assert out.shape == (2, 8, 4, 4)
    assert [name for name, _ in block.named_parameters()] == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_size_arithmetic_of_literals_is_the_number() -> None:
    assert sg._dims.literal_size(sg.Sum[L[64], L[32]]) == 96
    assert sg._dims.literal_size(sg.Half[L[7]]) == 3  # floor, as PyTorch's pooling by 2
    assert sg._dims.literal_size(sg.Twice[sg.Half[L[9]]]) == 8
    assert sg._dims.literal_size(sg.Prod[L[2], sg.Sum[L[1], L[2]]]) == 6
    assert sg._dims.literal_size(sg.Sum[L[1], sg.Open]) is None
    assert nn.Linear[sg.Sum[L[3], L[2]], L[4]]().weight.shape == (5, 4)


def test_a_doubling_transposed_convolution_is_checked_when_built(numpy_backend: str) -> None:
    x = sg.randn(1, 4, 5, 7)
    for kernel, padding in ((4, 1), (2, 0)):
        up = nn.ConvTranspose2d[L[4], L[2], nn.Doubles](kernel, 2, padding)
        assert up(x).shape == (1, 2, 10, 14)
    Up = sg.Tensor[sg.NoTape, L[1], L[2], sg.Twice[L[5]], sg.Twice[L[7]]]
    assert sg.cast(nn.ConvTranspose2d[L[4], L[2], nn.Doubles](4, 2, 1)(x), Up).shape == (1, 2, 10, 14)
    with pytest.raises(sg.ShapeError, match=r"the type says Doubles .* kernel_size=\(3, 3\), stride=\(2, 2\)"):
        nn.ConvTranspose2d[L[4], L[2], nn.Doubles](3, 2, 1)  # 2n - 1
    with pytest.raises(sg.ShapeError, match="the type says Doubles"):
        nn.ConvTranspose2d[L[4], L[2], nn.Doubles](4, 1, 1)
    assert nn.ConvTranspose2d[L[4], L[2]](3, 2, 1)(x).shape == (1, 2, 9, 13)  # no rule: any sizes


def test_pooling_by_two_floors_odd_sizes_as_its_half_type_says(numpy_backend: str) -> None:
    x = sg.randn(1, 3, 7, 6)
    Pooled = sg.Tensor[sg.NoTape, L[1], L[3], sg.Half[L[7]], sg.Half[L[6]]]
    for pool in (nn.MaxPool2d(2), nn.AvgPool2d(2)):
        assert sg.cast(pool(x), Pooled).shape == (1, 3, 3, 3)  # as torch.nn.MaxPool2d(2): floor


def test_sequential_overloads_chain_every_length_up_to_16() -> None:
    # The stack is written out (pyright has no variadic chain): each length's overload must
    # chain its layers X0 -> X1 -> ... -> Xk; then any number of size-keeping layers
    # (Sequential(*blocks)), and only the deprecated last one takes more of other layers.
    from typing import get_overloads

    *typed, same_size, longer = get_overloads(nn.Sequential.__init__)
    assert len(typed) == 16
    assert same_size.__annotations__["self"] == "Sequential[X0, X0]"
    assert same_size.__annotations__["layers"] == "Layer[X0, X0]"
    for k, overload in enumerate(typed, 1):
        annotations = overload.__annotations__
        assert annotations["self"] == f"Sequential[X0, X{k}]"
        # each link is a Layer or a ChanLayer (BatchNorm1d's channels reading, after a Conv1d)
        assert [annotations[f"l{i + 1}"] for i in range(k)] == [
            f"Layer[X{i}, X{i + 1}] | ChanLayer[X{i}, X{i + 1}]" for i in range(k)
        ]
    assert longer.__annotations__["more"] == "Layer[Any, Any]" and "up to 16 layers" in longer.__deprecated__


def test_layers_of_plain_int_sizes_check_their_input_at_run_time(numpy_backend: str) -> None:
    # Statically Linear(3, 4) and LayerNorm(3) are Open-sized and take any last axis; the
    # run time refuses one that does not fit their weights, naming both sizes.
    with pytest.raises(sg.ShapeError, match=r"has 5 features .* expects 3"):
        nn.Linear(3, 4)(sg.ones(2, 5))
    with pytest.raises(sg.ShapeError, match=r"weight of shape \(3,\) for input \(2, 5\)"):
        nn.LayerNorm(3)(sg.ones(2, 5))


@pytest.mark.parametrize("padding_idx", [2, -1, 0])
def test_embedding_padding_idx_matches_torch(padding_idx: int, numpy_backend: str) -> None:
    """padding_idx as torch's nn.Embedding: the row is zeros at initialisation, looked up as
    any row, and its gradient entry is zero (ids hitting it included); a negative index
    counts from the end and is stored non-negative. Gradients and 10 Adam steps (no weight
    decay: the padding row never moves) agree with torch in float64."""
    torch = pytest.importorskip("torch")
    ours = nn.Embedding(6, 3, padding_idx=padding_idx, generator=gen(), dtype="float64")
    row = padding_idx % 6
    assert ours.padding_idx == row
    np.testing.assert_array_equal(p(ours.weight)[row], np.zeros(3))
    theirs = torch.nn.Embedding(6, 3, padding_idx=padding_idx).double()
    assert theirs.padding_idx == ours.padding_idx
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(p(ours.weight)))
    ids = np.array([[row, 1, 3], [row, row, 5], [4, 1, 0]])
    opt, grads = sg.optim.Adam(ours, lr=0.1), ours.alloc_grads()
    topt = torch.optim.Adam(theirs.parameters(), lr=0.1)
    target = np.random.default_rng(0).standard_normal((3, 3, 3))
    for _ in range(10):
        grads.zero()
        loss = ((ours(sg.tensor(ids).trace(grads)) - sg.tensor(target)) ** 2).sum()
        loss.backward()
        topt.zero_grad()
        tloss = ((theirs(torch.tensor(ids)) - torch.tensor(target)) ** 2).sum()
        tloss.backward()
        assert theirs.weight.grad is not None
        np.testing.assert_allclose(p(grads[ours.weight]), theirs.weight.grad.numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(p(grads[ours.weight])[row], np.zeros(3))
        opt.update(ours, grads)
        topt.step()
        np.testing.assert_allclose(p(ours.weight), theirs.weight.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(p(ours.weight)[row], np.zeros(3))


@pytest.mark.parametrize("padding_idx", [6, -7, 100])
def test_embedding_refuses_a_padding_idx_out_of_range(padding_idx: int, numpy_backend: str) -> None:
    """A padding_idx outside [-num_embeddings, num_embeddings) is refused when built, naming
    the range and the value (torch asserts the same range); a float is a DTypeError."""
    with pytest.raises(sg.HyperparameterError, match=rf"padding_idx must lie in \[-6, 6\).*found {padding_idx}"):
        nn.Embedding(6, 3, padding_idx=padding_idx)
    with pytest.raises(sg.DTypeError, match="integer padding_idx"):
        nn.Embedding(6, 3, padding_idx=cast(Any, 1.0))
    assert nn.Embedding(6, 3).padding_idx is None


def test_from_torch_loads_an_embedding_with_padding_idx(numpy_backend: str) -> None:
    """A torch Embedding with padding_idx loads as any other (its weight only; the padding
    row is whatever the state dict holds), into an Embedding with or without one."""
    torch = pytest.importorskip("torch")
    theirs = torch.nn.Embedding(5, 4, padding_idx=1)
    for ours in (nn.Embedding(5, 4, padding_idx=1), nn.Embedding(5, 4)):
        nn.from_torch(ours, theirs.state_dict())
        np.testing.assert_array_equal(p(ours.weight), theirs.weight.detach().numpy())


def test_compiled_step_with_padding_idx_replays_as_eager(numpy_backend: str) -> None:
    """A compiled training step through Embedding(padding_idx=...) replays (the gradient row
    is zeroed by a recorded array operation) and gives the eager run's weights bit for bit
    after 5 steps, the padding row still zero."""
    ids = sg.tensor(np.array([[0, 2, 3], [3, 3, 1]]))
    states = []
    for compiled in (False, True):
        model = nn.Embedding(5, 4, padding_idx=3, generator=gen())
        opt, grads = sg.optim.Adam(model, lr=0.1), model.alloc_grads()

        def step(x: Any, model: Any = model, opt: Any = opt, grads: Any = grads) -> Any:
            grads.zero()
            loss = ((model(x.trace(grads)) - 1.0) ** 2).mean()  # a nonzero gradient at the padding row's ids
            loss.backward()
            opt.update(model, grads)
            return loss

        run = sg.compile(step) if compiled else step
        for _ in range(5):
            run(ids)
        if compiled:
            assert run.eager_reason is None
            (recording,) = run.recordings
            assert recording.replays == 4
        states.append(p(model.weight))
    eager, replayed = states
    np.testing.assert_array_equal(replayed, eager)
    np.testing.assert_array_equal(replayed[3], np.zeros(4))
    assert not np.array_equal(replayed[0], p(nn.Embedding(5, 4, padding_idx=3, generator=gen()).weight)[0])


class _Private(nn.Module, checked=False):
    """Sub-modules and parameters under private names, and a private cache."""

    def __init__(self) -> None:
        self._enc = nn.Linear[L[4], L[4]](generator=sg.Generator(0))
        self._drop = nn.Dropout(0.5)
        self._blocks = [nn.Linear[L[4], L[4]](generator=sg.Generator(1)), sg.zeros(4)]
        self._scale = nn.parameter(sg.ones(4))
        self._cache = sg.zeros(4)  # a plain tensor under a private name: a cache, not state
        self.head = nn.Linear[L[4], L[1]](generator=sg.Generator(2))

    def __call__(self, x: Any) -> Any:
        return self.head(self._drop(self._blocks[0](self._enc(x))) * self._scale + self._cache)


def test_private_attributes_hold_sub_modules_and_parameters_as_pytorch(numpy_backend: str) -> None:
    """A module or parameter under a ``_`` name was never seen: not trained (its gradient
    dropped), not switched by eval(), not in state_dict, silently. PyTorch registers it."""
    torch = pytest.importorskip("torch")

    class TorchPrivate(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self._enc = torch.nn.Linear(4, 4)
            self._drop = torch.nn.Dropout(0.5)
            self._blocks = torch.nn.ModuleList([torch.nn.Linear(4, 4)])
            self._scale = torch.nn.Parameter(torch.ones(4))
            self.head = torch.nn.Linear(4, 1)

    model = _Private()
    expected = sorted(TorchPrivate().state_dict())  # PyTorch lists its own parameters first
    assert sorted(model.state_dict()) == expected
    assert sorted(n for n, _ in model.named_parameters()) == expected
    assert [n for n, _ in model.named_modules()] == ["", "_enc", "_drop", "_blocks.0", "head"]
    before = {n: t.numpy().copy() for n, t in model.named_parameters()}
    grads = model.alloc_grads()
    opt = sg.optim.Sgd(model, lr=0.1)
    model(sg.randn(8, 4).trace(grads)).sum().backward()
    opt.update(model, grads)
    assert all(not np.array_equal(before[n], t.numpy()) for n, t in model.named_parameters())
    model.eval()
    assert not model._drop.training
    x = sg.randn(8, 4)
    np.testing.assert_array_equal(model(x).numpy(), model(x).numpy())
    # the library's own private attributes stay private: a generator, a comm, a mode string
    assert list(nn.Dropout(0.5, generator=sg.Generator(0)).named_children()) == [("p", 0.5)]
    # a private back-reference made the child contain its parent: refused, not walked for ever
    model._enc._owner = model
    with pytest.raises(
        sg.ShapegradError, match=r"the Linear\[4, 4\] at '_owner\._enc' is also a module above that path: a cycle"
    ):
        model._enc.state_dict()
    model._enc._owner = weakref.ref(model)
    assert sorted(model.state_dict()) == expected
    for layer in (
        nn.RNN[L[2], L[3]](),
        nn.LSTM[L[2], L[3]](num_layers=2, dropout=0.5),
        nn.SyncBatchNorm1d[L[3]](comm=object()),
    ):
        assert not [n for n, _ in layer.named_children() if n.startswith("_")]


def test_a_tied_weight_is_selected_by_any_of_its_paths(numpy_backend: str) -> None:
    """freeze("b") froze b.bias only when b.weight is a.weight (its first path): the shared
    weight went on training, silently. PyTorch: freezing b's parameters freezes it."""

    class Tied(nn.Module, checked=False):
        def __init__(self) -> None:
            self.a = nn.Linear[L[4], L[4]]()
            self.b = nn.Linear[L[4], L[4]]()
            self.b.weight = self.a.weight

    model = Tied().freeze("b")
    assert [n for n, _ in model.named_parameters(trainable_only=True)] == ["a.bias"]
    model.unfreeze("b.weight")
    assert [n for n, _ in model.named_parameters(trainable_only=True)] == ["a.weight", "a.bias"]


@pytest.mark.parametrize("sizes", [(8, 8), (10, 4)])
def test_tying_a_linear_weight_to_an_embedding_s_as_pytorch_is_refused(sizes: tuple[int, int]) -> None:
    """PyTorch's word_language_model ties decoder.weight = encoder.weight: both (vocab, width)
    there. Linear.weight is (in, out) here, so the tie multiplied by the embedding itself where
    PyTorch multiplies by its transpose: logits 19 off, silently with vocab == width (attack
    round 14). Refused when assigned, naming the layouts and the transposed use."""
    vocab, width = sizes
    encoder, decoder = nn.Embedding(vocab, width), nn.Linear(width, vocab)
    kept = decoder.weight
    with pytest.raises(sg.ParameterError, match=r"kept as \(in, out\).*\(out, in\).*self\.embed\.weight\.T"):
        decoder.weight = encoder.weight
    assert decoder.weight is kept
    decoder.weight = nn.Linear(width, vocab).weight  # the same layout: tied as before
    decoder.weight = nn.parameter(sg.zeros(width, vocab))  # a new parameter states no layout
    head = nn.Linear(4, 16)
    with pytest.raises(sg.ParameterError, match="PyTorch's layout"):
        head.weight = nn.LSTM(16, 4).weight_ih_l0  # (16, 16): a recurrent weight, (out, in)


def test_two_tensors_at_one_dotted_path_are_refused(numpy_backend: str) -> None:
    """{0: Linear, "0": Linear} named two parameters "heads.0.weight": state_dict kept one and
    a strict load left the other unloaded, silently."""

    class Heads(nn.Module, checked=False):
        def __init__(self) -> None:
            self.heads = {0: nn.Linear[L[2], L[2]](), "0": nn.Linear[L[2], L[2]]()}

    with pytest.raises(
        sg.ShapegradError, match=r"two different values of the dict at 'heads' have the dotted path heads\.0"
    ):
        Heads().state_dict()
    shared = nn.Linear[L[2], L[2]]()
    model = Heads()
    model.heads = {0: shared, "0": shared}  # one tensor under one path twice: no conflict
    assert list(model.state_dict()) == ["heads.0.weight", "heads.0.bias"]


def test_inputs_of_other_ranks_to_conv1d_and_attention_are_refused_by_name(numpy_backend: str) -> None:
    """These layers said so with NumPy's bare 'not enough values to unpack' (no layer, no
    shape). Now a ShapeError names the layer, the expected axes and the shape (Conv1d takes
    PyTorch's unbatched ``(C, L)`` too: tests/test_migration_layers.py; attention batches only)."""
    with pytest.raises(
        sg.ShapeError,
        match=r"Conv1d expects input \(batch, channels, length\) or unbatched \(channels, length\), found shape \(5,\)",
    ):
        nn.Conv1d(3, in_channels=2, out_channels=3)(sg.ones(5))
    with pytest.raises(
        sg.ShapeError, match=r"MultiHeadAttention expects query \(batch, length, embed_dim\), found shape \(3, 4\)"
    ):
        nn.MultiHeadAttention(2, 4)(sg.ones(3, 4))


def test_a_model_holding_a_traced_state_tensor_still_moves(numpy_backend: str) -> None:
    """A stateful RNN keeping its last hidden state (traced) as an attribute: model.to() raised
    TapeError ('tensor() of a traced tensor') once sg.tensor refused traced tensors."""

    class Stateful(nn.Module, checked=False):
        def __init__(self) -> None:
            self.fc = nn.Linear[L[2], L[2]]()
            self.h = sg.zeros(1, 2)

    model = Stateful()
    model.h = model.fc(sg.ones(1, 2).trace(model.alloc_grads()))
    model.to(dtype="float64")
    assert model.h.backend_dtype_name() == "float64"


def test_bitwise_functions_of_two_numbers_are_refused_by_name(numpy_backend: str) -> None:
    """sg.bitwise_and(1, 2) raised AttributeError ('int' object has no attribute '_backend')."""
    with pytest.raises(sg.DTypeError, match="bitwise_and expects at least one Tensor operand"):
        sg.bitwise_and(1, 2)  # type: ignore[call-overload]
    with pytest.raises(sg.DTypeError, match="bitwise_not expects a Tensor"):
        sg.bitwise_not(5)  # type: ignore[arg-type]


def test_identity_is_its_input_in_a_configured_block(backend: str) -> None:
    """PyTorch's nn.Identity, as ports use it: a projection chosen by configuration. The
    layer returns the same tensor (tape and all), takes and ignores PyTorch's arguments,
    holds no state, and the block's gradients are those of the block written without it."""

    class Block(nn.Module):
        def __init__(self, width_in: int, width_out: int) -> None:
            self.fc = nn.Linear(width_in, width_out, generator=sg.Generator(1))
            self.proj = nn.Linear(width_in, width_out) if width_in != width_out else nn.Identity(54, unused=0.1)

        def __call__(self, x: Any) -> Any:
            return self.fc(x).relu() + self.proj(x)

    block = Block(4, 4)
    assert block.state_dict().keys() == {"fc.weight", "fc.bias"}
    x = sg.tensor(np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32))
    grads = block.alloc_grads()
    traced = x.trace(grads, keep_grad=True)
    assert block.proj(traced) is traced
    block(traced).sum().backward()
    twin = nn.Linear(4, 4, generator=sg.Generator(1))
    twin_grads = twin.alloc_grads()
    twin_traced = x.trace(twin_grads, keep_grad=True)
    (twin(twin_traced).relu() + twin_traced).sum().backward()
    np.testing.assert_allclose(grads[block.fc.weight].numpy(), twin_grads[twin.weight].numpy(), rtol=1e-6)
    np.testing.assert_allclose(grads[traced].numpy(), twin_grads[twin_traced].numpy(), rtol=1e-6)
