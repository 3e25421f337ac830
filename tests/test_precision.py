"""Precision and dtypes: PyTorch's values at the singular points of pow, relative precision of
sigmoid/softplus, float16 far out, leaf gradient dtypes, mixed float dtypes refused, integer ids,
dropout masks in the tensor's dtype.

Each test once showed a wrong answer with no error (issue #12); it fails on the code before
its fix. Behaviour that can differ by backend runs on every backend (``backend`` fixture).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import nn


def _grad_list(grads: Any, x: Any) -> list[Any]:
    return grads[x].tolist()


def _exact_sigmoid(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.longdouble)
    return (1 / (1 + np.exp(-x))).astype(np.float64)


def test_polynomial_gradient_at_zero_is_pytorch_s(backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor(0.0).trace(grads)
    coefficients = [3.0, 5.0, 7.0]
    total = sum((c * x**i for i, c in enumerate(coefficients)), start=sg.tensor(0.0))
    total.backward()
    assert grads[x].item() == 5.0  # d/dx (3 + 5x + 7x²) at 0; x**0 contributes 0, not NaN


def test_tensor_power_at_zero_base_and_exponent(backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([0.0, 0.0, 2.0]).trace(grads)
    y = sg.tensor([0.0, 2.0, 0.0]).trace(grads)
    (x**y).sum().backward()
    # PyTorch: d/dx = 0 where y = 0; d/dy = 0 where x = 0; d/dy = log(2) at (2, 0).
    assert np.allclose(_grad_list(grads, x), [0.0, 0.0, 0.0])
    assert np.allclose(_grad_list(grads, y), [0.0, 0.0, np.log(2.0)])


def test_scalar_base_power_at_zero_base(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0, 2.0]).trace(grads)
    (0.0**x).sum().backward()
    assert _grad_list(grads, x) == [0.0, 0.0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sigmoid_keeps_relative_precision_for_negative_inputs(backend: str, dtype: str) -> None:
    values = np.linspace(-80, 80, 641)
    got = sg.sigmoid(sg.tensor(values, dtype=dtype)).numpy().astype(np.float64)
    exact = _exact_sigmoid(values)
    assert np.max(np.abs(got - exact) / exact) <= (1e-6 if dtype == "float32" else 1e-13)
    deep = sg.sigmoid(sg.tensor([-40.0], dtype="float64")).item()
    assert deep > 0 and abs(deep - 4.248354255291589e-18) / 4.248354255291589e-18 < 1e-12


def test_softplus_gradient_and_log_sigmoid_are_precise(backend: str) -> None:
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


def test_float16_gelu_gradient_is_finite_far_out(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([-1000.0, -700.0, -3.0, 0.5, 700.0, 1000.0], dtype="float16").trace(grads)
    sg.gelu(x).sum().backward()
    slope = grads[x].numpy()
    assert np.all(np.isfinite(slope))
    assert slope[0] == 0 and slope[-1] == 1


def test_a_leaf_s_gradient_has_the_leaf_s_dtype(backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0, 2.0], dtype="float32").trace(grads)
    target = sg.tensor([0.5, 0.5], dtype="float64")
    # Activations with fused CuPy backward kernels see float64 gradients through the
    # float64 target; each node's gradient is cast to its own dtype.
    loss = ((sg.sigmoid(x) + sg.tanh(x) + sg.relu(x) + sg.gelu(x) + sg.softplus(x)) * target).sum()
    assert loss.backend_dtype_name() == "float64"
    loss.backward()
    assert grads[x].backend_dtype_name() == "float32"


def test_float64_data_into_float32_weights_is_refused_by_name(numpy_backend: str) -> None:
    layer = nn.Linear(3, 2)
    with pytest.raises(sg.DTypeError, match=r"linear: input is float64 \(4, 3\) but weight is float32.*astype"):
        layer(sg.tensor(np.zeros((4, 3))))
    with pytest.raises(sg.DTypeError, match="matmul: left is float32"):
        sg.matmul(sg.zeros(2, 3), sg.zeros(3, 2, dtype="float64"))


def test_traced_integer_ids_carry_the_tape_and_say_they_get_no_gradient(backend: str) -> None:
    embedding = nn.Embedding(5, 3, generator=sg.Generator(0))
    grads = sg.Gradients()
    ids = sg.tensor([1, 4]).trace(grads, keep_grad=True)
    out = embedding(ids)
    assert out.traced
    out.sum().backward()
    with pytest.raises(sg.TapeError, match="integer tensors .* never receive a gradient"):
        grads[ids]


def test_a_number_to_the_power_of_a_tensor(backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0, 3.0]).trace(grads)
    (2.0**x).sum().backward()
    assert np.allclose(_grad_list(grads, x), [2.0 * np.log(2.0), 8.0 * np.log(2.0)])


def test_dropout_draws_its_mask_in_the_tensor_s_dtype(numpy_backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
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
