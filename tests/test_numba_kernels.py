"""The NumPy backend's numba kernels (the ``fast`` extra) against the reference xp math."""

from __future__ import annotations

import math

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
