"""Finite-difference gradient checking, shared by the op, layer and loss tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import shapegrad as sg


def _values(t: Any) -> np.ndarray:
    return np.asarray(t.numpy(), dtype=np.float64)


def numeric_gradients(
    fn: Callable[..., Any], arrays: Sequence[np.ndarray], weights: np.ndarray, eps: float = 1e-6
) -> list[np.ndarray]:
    """Central differences of ``sum(weights * fn(*arrays))`` with respect to each array."""
    grads: list[np.ndarray] = []
    for i, array in enumerate(arrays):
        grad = np.zeros_like(array, dtype=np.float64)
        flat = grad.reshape(-1)
        for j in range(array.size):
            plus = [a.copy() for a in arrays]
            minus = [a.copy() for a in arrays]
            plus[i].reshape(-1)[j] += eps
            minus[i].reshape(-1)[j] -= eps
            f_plus = np.sum(weights * _values(fn(*[sg.tensor(a) for a in plus])))
            f_minus = np.sum(weights * _values(fn(*[sg.tensor(a) for a in minus])))
            flat[j] = (f_plus - f_minus) / (2 * eps)
        grads.append(grad)
    return grads


def analytic_gradients(fn: Callable[..., Any], arrays: Sequence[np.ndarray], weights: np.ndarray) -> list[np.ndarray]:
    """Gradients of ``sum(weights * fn(*arrays))`` from one shapegrad backward pass."""
    grads = sg.Gradients()
    traced = [sg.tensor(a).trace(grads) for a in arrays]
    out = fn(*traced)
    loss = (out * sg.tensor(weights)).sum() if out.ndim else out * float(weights)
    loss.backward()
    return [np.asarray(grads[t].numpy(), dtype=np.float64) for t in traced]


def assert_gradients_match(
    fn: Callable[..., Any], arrays: Sequence[np.ndarray], rtol: float = 1e-5, atol: float = 1e-7, seed: int = 0
) -> None:
    """Analytic gradients of ``fn`` equal central differences, in float64."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    out_shape = tuple(fn(*[sg.tensor(a) for a in arrays]).shape)
    weights = np.random.default_rng(seed).standard_normal(out_shape)
    expected = numeric_gradients(fn, arrays, weights)
    found = analytic_gradients(fn, arrays, weights)
    for i, (e, f) in enumerate(zip(expected, found, strict=False)):
        assert f.shape == e.shape, f"input {i}: gradient shape {f.shape}, expected {e.shape}"
        np.testing.assert_allclose(f, e, rtol=rtol, atol=atol, err_msg=f"gradient of input {i}")
