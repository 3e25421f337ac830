"""The NumPy backend's numba kernels (the ``fast`` extra) against the reference xp math."""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import pytest

import shapegrad as sg
from shapegrad.ops.math import erf_values, gelu_exact_backward

numba_kernels = pytest.importorskip("shapegrad_backends.numba_kernels")
pytest.importorskip("numba")


def _reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    cdf = 0.5 * (1.0 + erf_values(np, x.astype(np.float64) / math.sqrt(2.0)))
    return x.astype(np.float64) * cdf, cdf


def test_gelu_exact_kernel_matches_the_reference_tails_included() -> None:
    x = np.linspace(-9, 9, 40001).astype(np.float32)
    kernel = numba_kernels.kernel("gelu_exact", np.float32)
    assert kernel is not None
    out, cdf, density = kernel(x)
    expected_out, expected_cdf = _reference(x)
    assert out.dtype == cdf.dtype == density.dtype == np.float32
    assert np.max(np.abs(cdf - expected_cdf)) <= 5e-7
    assert np.max(np.abs(out - expected_out)) <= 5e-7 * 9
    np.testing.assert_allclose(density, np.exp(-0.5 * x.astype(np.float64) ** 2), rtol=1e-5, atol=1e-30)


def test_gelu_exact_backward_kernel_matches_the_reference_rule() -> None:
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((7, 33)) * 3).astype(np.float32)
    g = rng.standard_normal((7, 33)).astype(np.float32)
    _, cdf, density = numba_kernels.kernel("gelu_exact", np.float32)(x)
    found = numba_kernels.kernel("gelu_exact_backward", np.float32)(g, x, cdf, density)
    (expected,) = gelu_exact_backward(np, g.astype(np.float64), x.astype(np.float64), cdf.astype(np.float64), None)
    np.testing.assert_allclose(found, expected, rtol=2e-6, atol=1e-6)


def test_kernels_take_strided_views_and_keep_shapes() -> None:
    x = np.arange(-24, 24, dtype=np.float32).reshape(4, 12)[:, ::3] / 4
    out, cdf, _ = numba_kernels.kernel("gelu_exact", np.float32)(x)
    assert out.shape == cdf.shape == (4, 4)
    np.testing.assert_allclose(out, _reference(np.ascontiguousarray(x))[0], atol=5e-6)


def test_only_float32_and_only_with_numba(monkeypatch: pytest.MonkeyPatch) -> None:
    assert numba_kernels.kernel("gelu_exact", np.float64) is None
    assert numba_kernels.kernel("no_such_kernel", np.float32) is None
    monkeypatch.setattr(numba_kernels, "_numba", False)
    assert numba_kernels.kernel("gelu_exact", np.float32) is None


def test_gelu_layer_gradient_through_the_kernel_matches_float64() -> None:
    """End to end: float32 exact GELU (kernels) against float64 (the reference math)."""
    rng = np.random.default_rng(1)
    data = rng.standard_normal((5, 6)) * 2
    grads32, grads64 = sg.Gradients(), sg.Gradients()
    x32 = sg.tensor(data.astype(np.float32)).trace(grads32)
    x64 = sg.tensor(data, dtype="float64").trace(grads64)
    (sg.gelu(x32, approximate="none") * x32).sum().backward()
    (sg.gelu(x64, approximate="none") * x64).sum().backward()
    np.testing.assert_allclose(grads32[x32].numpy(), grads64[x64].numpy(), rtol=2e-5, atol=2e-6)


def _reference_pool(x: np.ndarray, kernel: tuple[int, int], stride: tuple[int, int], padding: tuple[int, int]):
    """The xp path of ``max_pool2d``: values and the saved winner index."""
    from shapegrad.ops import conv

    with pytest.MonkeyPatch.context() as patch, sg.use_backend("numpy"):
        patch.setattr(conv, "fused_kernel", lambda *_: None)
        traced = sg.tensor(x, dtype=str(x.dtype)).trace(sg.Gradients())
        pooled = conv.max_pool2d(traced, kernel, stride, padding)
    return pooled


POOLS = [((2, 2), (2, 2), (0, 0)), ((3, 3), (2, 2), (1, 1)), ((2, 3), (1, 2), (1, 0)), ((3, 1), (3, 1), (0, 0))]


@pytest.mark.parametrize(("kernel", "stride", "padding"), POOLS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool_kernels_match_the_reference_ties_included(kernel, stride, padding, dtype) -> None:
    from shapegrad.ops import conv

    rng = np.random.default_rng(2)
    x = rng.integers(-2, 3, (3, 4, 9, 8)).astype(dtype)  # small integers: many tied windows
    g_shape = _reference_pool(x, kernel, stride, padding).shape
    out = (g_shape[2], g_shape[3])
    forward = numba_kernels.kernel("max_pool2d", dtype)
    values, index = forward(x, kernel, stride, padding, out)
    reference = _reference_pool(x, kernel, stride, padding)
    np.testing.assert_array_equal(values, reference.numpy())
    expected_index, padded_shape = reference._node.saved[0], reference._node.saved[1]
    np.testing.assert_array_equal(index, expected_index)
    g = rng.standard_normal(values.shape).astype(dtype)
    backward = numba_kernels.kernel("max_pool2d_backward", dtype)
    found = backward(g, index, padded_shape, kernel, stride, padding, out)
    (expected,) = conv.max_pool2d_backward(np, g, expected_index, padded_shape, kernel, stride, padding, out)
    np.testing.assert_allclose(found, expected, rtol=1e-6, atol=1e-6)
    assert found.dtype == dtype and found.shape == x.shape


def test_max_pool_kernel_takes_strided_input_and_propagates_nan() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3, 8, 8)).astype(np.float32).transpose(1, 0, 2, 3)  # a conv's layout
    x[1, 2, 5, 6] = np.nan
    values, _ = numba_kernels.kernel("max_pool2d", np.float32)(x, (2, 2), (2, 2), (0, 0), (4, 4))
    reference = _reference_pool(np.ascontiguousarray(x), (2, 2), (2, 2), (0, 0)).numpy()
    np.testing.assert_array_equal(values, reference)  # NaN at the same place, equal elsewhere
    assert np.isnan(values[1, 2, 2, 3]) and np.isnan(values).sum() == 1


def test_relu_backward_kernel_matches_the_reference_overflow_kept() -> None:
    from shapegrad.ops.elementwise import relu_backward

    x = np.array([-1.0, 0.0, 2.0, np.nan, -3.0, 4.0], dtype=np.float32)
    g = np.array([1.0, 2.0, 3.0, 4.0, np.inf, np.inf], dtype=np.float32)
    with np.errstate(invalid="ignore"):
        found = numba_kernels.kernel("relu_backward", np.float32)(g, x)
        (expected,) = relu_backward(np, g, x)
    np.testing.assert_array_equal(found, expected)  # an infinite g where x <= 0 gives NaN, as g·mask
    assert np.isnan(found[4]) and found[5] == np.inf


class _Plain:  # NumPy without kernels: an optimizer runs its reference math
    xp = np


def _optimizer_case(optimizer: Any, dtype: Any, strided: bool) -> None:
    rng = np.random.default_rng(4)
    host = {name: rng.standard_normal((6, 5)).astype(dtype) for name in ("p", "g", "m")}
    host["v"] = np.abs(rng.standard_normal((6, 5))).astype(dtype)
    states = {"adam": ("exp_avg", "exp_avg_sq"), "sgd": ("momentum",)}
    kind = "adam" if isinstance(optimizer, sg.optim.Adam) else "sgd"

    def run(backend: Any) -> dict[str, np.ndarray]:
        arrays = {k: v.copy() for k, v in host.items()}
        state = dict(zip(states[kind], (arrays["m"], arrays["v"]), strict=False))
        g = np.asfortranarray(arrays["g"]) if strided else arrays["g"]
        for step in (1, 2, 3):
            optimizer._apply(backend, arrays["p"], g, state, 0.01, step)
        return arrays

    expected, found = run(_Plain()), run(sg.get_backend("numpy"))
    for name in ("p", "m") + (("v",) if kind == "adam" else ()):
        np.testing.assert_allclose(found[name], expected[name], rtol=2e-6, atol=1e-7, err_msg=name)


@pytest.mark.parametrize("strided", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "make",
    [
        lambda m: sg.optim.Adam(m, lr=0.01),
        lambda m: sg.optim.SGD(m, lr=0.01, momentum=0.9),
        lambda m: sg.optim.SGD(m, lr=0.01, momentum=0.9, nesterov=True),
    ],
    ids=["adam", "sgd_momentum", "sgd_nesterov"],
)
def test_optimizer_kernels_match_the_reference_math(make: Any, dtype: Any, strided: bool) -> None:
    """One compiled pass per parameter (or, for a strided gradient, the NumPy fallback)
    gives the optimizer's own xp math, step after step."""
    optimizer = make(sg.nn.Linear[Literal[2], Literal[3]]())
    assert numba_kernels.kernel(optimizer._kernel if hasattr(optimizer, "_kernel") else "adam", dtype) is not None
    _optimizer_case(optimizer, dtype, strided)
