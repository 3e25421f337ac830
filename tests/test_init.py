"""``sg.nn.init``: PyTorch's in-place initialisers; their statistics match the formula, a
generator reproduces them, orthogonal is orthogonal (issue #25)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import shapegrad as sg
from shapegrad.nn import init

# (name, call, expected mean, expected std) on a Linear weight (in=400, out=300) layout
FAN_IN, FAN_OUT = 400, 300
U = 1 / math.sqrt(3)  # the std of U(-1, 1)
CASES: list[tuple[str, Callable[[Any, sg.Generator], Any], float, float]] = [
    ("normal_", lambda t, g: init.normal_(t, 0.5, 2.0, generator=g), 0.5, 2.0),
    ("uniform_", lambda t, g: init.uniform_(t, -3.0, 1.0, generator=g), -1.0, 2 * U),
    ("xavier_uniform_", lambda t, g: init.xavier_uniform_(t, gain=2.0, generator=g), 0.0, 2 * math.sqrt(2 / 700)),
    ("xavier_normal_", lambda t, g: init.xavier_normal_(t, generator=g), 0.0, math.sqrt(2 / 700)),
    (
        "kaiming_uniform_",
        lambda t, g: init.kaiming_uniform_(t, nonlinearity="relu", generator=g),
        0.0,
        math.sqrt(2 / FAN_IN),
    ),
    (
        "kaiming_normal_",
        lambda t, g: init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu", generator=g),
        0.0,
        math.sqrt(2 / FAN_OUT),
    ),
    (
        "kaiming_normal_ leaky",
        lambda t, g: init.kaiming_normal_(t, a=0.2, generator=g),
        0.0,
        math.sqrt(2 / 1.04 / FAN_IN),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_statistics_match_the_formula(case: tuple[str, Any, float, float], backend: str) -> None:
    """issue #25: mean and std of 120 000 draws within 2 % of the formula's (fans from
    shapegrad's (in, out) Linear layout), in place, the tensor returned."""
    _, call, mean, std = case
    layer = sg.nn.Linear(FAN_IN, FAN_OUT)
    assert call(layer.weight, sg.Generator(0)) is layer.weight
    drawn = layer.weight.numpy().astype(np.float64)
    assert layer.weight.backend_dtype_name() == "float32"
    assert abs(drawn.mean() - mean) < 0.02 * std
    assert abs(drawn.std() - std) < 0.02 * std


def test_kaiming_on_a_linear_weight_matches_pytorch_on_its_linear(numpy_backend: str) -> None:
    """issue #25: our Linear weight is PyTorch's transposed; fan_in is the same number for
    both (in_features), so the distributions agree."""
    torch = pytest.importorskip("torch", reason="PyTorch is the oracle here")
    theirs = torch.nn.Linear(FAN_IN, FAN_OUT).weight
    torch.nn.init.kaiming_uniform_(theirs, nonlinearity="relu", generator=torch.Generator().manual_seed(0))
    ours = init.kaiming_uniform_(sg.nn.Linear(FAN_IN, FAN_OUT).weight, nonlinearity="relu", generator=sg.Generator(0))
    bound = math.sqrt(6 / FAN_IN)
    assert abs(float(theirs.detach().abs().max()) - bound) < 1e-3
    assert abs(float(np.abs(ours.numpy()).max()) - bound) < 1e-3


def test_convolution_fans_follow_pytorch(numpy_backend: str) -> None:
    """issue #25: an (out, in, kh, kw) weight has fan_in = in·kh·kw, as PyTorch."""
    conv = sg.nn.Conv2d(5, in_channels=16, out_channels=64)
    init.kaiming_normal_(conv.weight, nonlinearity="relu", generator=sg.Generator(1))
    assert abs(conv.weight.numpy().std() - math.sqrt(2 / (16 * 25))) < 0.02 * math.sqrt(2 / (16 * 25))


def test_pytorch_layout_weights_have_pytorch_s_fans(numpy_backend: str) -> None:
    """Recurrent weights (gates·H, in) and Embedding.weight (V, D) are stored in PyTorch's
    layout: their fans were read as Linear's (in, out), a silently other std (LSTM weight_ih:
    0.044 for PyTorch's 0.25). Each init is compared with PyTorch's on the same shape."""
    torch = pytest.importorskip("torch", reason="PyTorch is the oracle here")
    torch.manual_seed(0)
    inits: list[tuple[str, Callable[[Any, Any], Any], Callable[[Any], Any]]] = [
        ("kaiming_normal_", lambda t, g: init.kaiming_normal_(t, nonlinearity="relu", generator=g), lambda t: torch.nn.init.kaiming_normal_(t, nonlinearity="relu")),
        ("kaiming_uniform_ fan_out", lambda t, g: init.kaiming_uniform_(t, mode="fan_out", generator=g), lambda t: torch.nn.init.kaiming_uniform_(t, mode="fan_out")),
        ("xavier_uniform_", lambda t, g: init.xavier_uniform_(t, generator=g), lambda t: torch.nn.init.xavier_uniform_(t)),
    ]  # fmt: skip
    layers: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
        ("LSTM.weight_ih_l0", lambda: sg.nn.LSTM(32, 256).weight_ih_l0, lambda: torch.nn.LSTM(32, 256).weight_ih_l0),
        ("GRU.weight_hh_l0", lambda: sg.nn.GRU(32, 128).weight_hh_l0, lambda: torch.nn.GRU(32, 128).weight_hh_l0),
        ("RNN.weight_ih_l1_reverse", lambda: sg.nn.RNN(8, 64, 2, bidirectional=True).weight_ih_l1_reverse, lambda: torch.nn.RNN(8, 64, 2, bidirectional=True).weight_ih_l1_reverse),
        ("Embedding.weight", lambda: sg.nn.Embedding(1000, 64).weight, lambda: torch.nn.Embedding(1000, 64).weight),
        ("Linear.weight", lambda: sg.nn.Linear(32, 256).weight, lambda: torch.nn.Linear(32, 256).weight),
    ]  # fmt: skip
    for init_name, ours_init, torch_init in inits:
        for layer_name, ours_weight, torch_weight in layers:
            ours = ours_init(ours_weight(), sg.Generator(0))
            with torch.no_grad():
                theirs = torch_init(torch_weight())
            expected, found = float(theirs.detach().std()), float(ours.numpy().std())
            assert abs(found - expected) < 0.03 * expected, (
                f"{init_name} on {layer_name}: {found} vs PyTorch's {expected}"
            )


def test_pytorch_layout_fans_survive_to_and_deepcopy_and_own_parameters_keep_linear_s(numpy_backend: str) -> None:
    import copy

    lstm = copy.deepcopy(sg.nn.LSTM(16, 256).to(dtype="float64"))
    init.kaiming_normal_(lstm.weight_ih_l0, generator=sg.Generator(0))
    assert abs(lstm.weight_ih_l0.numpy().std() - math.sqrt(2 / 16)) < 0.03 * math.sqrt(2 / 16)

    class Own(sg.nn.Module, checked=False):
        def __init__(self) -> None:
            self.w = sg.nn.parameter(sg.zeros(400, 300))

    own = Own().w
    init.kaiming_normal_(own, generator=sg.Generator(0))  # (in, out), as documented: fan_in = 400
    assert abs(own.numpy().std() - math.sqrt(2 / 400)) < 0.03 * math.sqrt(2 / 400)


def test_generator_makes_it_reproducible(backend: str) -> None:
    """issue #25: the same seed gives the same values; another seed, others."""
    draw = [init.xavier_normal_(sg.zeros(30, 20), generator=sg.Generator(s)).numpy() for s in (7, 7, 8)]
    np.testing.assert_array_equal(draw[0], draw[1])
    assert not np.allclose(draw[0], draw[2])
    q = [init.orthogonal_(sg.zeros(6, 9), generator=sg.Generator(s)).numpy() for s in (7, 7)]
    np.testing.assert_array_equal(q[0], q[1])


@pytest.mark.parametrize("shape", [(8, 8), (12, 5), (5, 12), (4, 3, 2, 2)])
def test_orthogonal_is_orthogonal(shape: tuple[int, ...], backend: str) -> None:
    """issue #25: the fewer of rows and columns of the (shape[0], rest) matrix are
    orthonormal, times gain."""
    w = init.orthogonal_(sg.zeros(*shape, dtype="float64"), gain=1.5, generator=sg.Generator(0)).numpy()
    m = w.reshape(shape[0], -1) / 1.5
    gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(gram, np.eye(gram.shape[0]), atol=1e-12)


def test_constant_fills_and_every_init_invalidates_a_pending_backward(numpy_backend: str) -> None:
    """issue #25: zeros_/ones_ fill in place, and an in-place init is a write the backward
    pass checks, as any other."""
    layer = sg.nn.Linear(3, 2)
    assert init.ones_(layer.weight).numpy().tolist() == [[1.0, 1.0]] * 3
    grads = layer.alloc_grads()
    loss = layer(sg.ones(4, 3).trace(grads)).sum()
    init.zeros_(layer.bias)
    assert layer.bias.numpy().tolist() == [0.0, 0.0]
    with pytest.raises(sg.TapeError):
        loss.backward()


def test_refusals_name_what_was_expected(numpy_backend: str) -> None:
    """issue #25: an integer tensor, a 1-D tensor for a fan-based init, an unknown mode or
    nonlinearity, and a generator of another backend are refused, nothing written."""
    with pytest.raises(sg.DTypeError, match="expects a floating-point tensor, found dtype int64"):
        init.normal_(sg.zeros(3, dtype="int64"))
    bias = sg.ones(4)
    with pytest.raises(sg.ShapeError, match=r"2 or more axes, found shape \(4,\)"):
        init.xavier_uniform_(bias)
    assert bias.numpy().tolist() == [1.0] * 4
    with pytest.raises(sg.HyperparameterError, match="mode must be 'fan_in' or 'fan_out', found 'fan'"):
        init.kaiming_normal_(sg.ones(2, 2), mode="fan")  # type: ignore[arg-type]
    with pytest.raises(sg.HyperparameterError, match="unknown nonlinearity 'swish'"):
        init.kaiming_normal_(sg.ones(2, 2), nonlinearity="swish")
    with pytest.raises(sg.BackendError, match="generator draws 'strict' arrays, the tensor is on 'numpy'"):
        init.normal_(sg.ones(2), generator=sg.Generator(0, backend="strict"))


def test_apply_initialises_a_model_by_layer_type(numpy_backend: str) -> None:
    """issue #25: Module.apply with init, the PyTorch idiom."""

    def reset(m: sg.nn.Module) -> None:
        if isinstance(m, sg.nn.Linear):
            init.xavier_uniform_(m.weight, generator=sg.Generator(0))
            if m.bias is not None:
                init.zeros_(m.bias)

    model = sg.nn.Sequential(sg.nn.Linear(3, 4), sg.nn.ReLU(), sg.nn.Sequential(sg.nn.Linear(4, 2)))
    model.apply(reset)
    for path, p in model.named_parameters():
        if path.endswith("bias"):
            assert not p.numpy().any(), path
    assert np.abs(model[0].weight.numpy()).max() <= math.sqrt(6 / 7)
