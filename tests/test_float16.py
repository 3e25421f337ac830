"""float16 keeps the promises the wider floats make: no constant that overflows it turns
a finite result into NaN."""

from __future__ import annotations

import numpy as np
import pytest

import shapegrad as sg


def _half_or_skip(backend: str) -> None:
    if backend == "strict":
        pytest.skip("the array API standard (array-api-strict) has no float16")


def test_softmax_of_a_fully_masked_float16_row_is_uniform(backend: str) -> None:
    """issue #24 item 6: -1e9 overflows float16 to -inf, and -inf - max(-inf) was NaN."""
    _half_or_skip(backend)
    scores = np.array([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [-5.0, 0.0, 5.0, 60000.0]])
    allowed = np.array([[True, True, False, True], [False] * 4, [True, True, True, False]])
    grads = sg.Gradients()
    x = sg.tensor(scores, dtype="float16").trace(grads)
    y = sg.softmax(x, mask=sg.tensor(allowed))
    (y * sg.tensor(np.arange(12.0).reshape(3, 4), dtype="float16")).sum().backward()
    got = y.numpy()
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got[1], np.full(4, 0.25, dtype=np.float16))
    reference = sg.softmax(sg.tensor(scores, dtype="float32"), mask=sg.tensor(allowed)).numpy()
    np.testing.assert_allclose(got, reference, atol=1e-3)
    slope = grads[x].numpy()
    assert np.all(np.isfinite(slope))
    assert np.all(slope[~allowed] == 0)  # masked scores get no gradient, a masked row none at all


@pytest.mark.parametrize("op", ["erf", "gelu_exact"])
def test_erf_and_exact_gelu_keep_float16(backend: str, op: str) -> None:
    """SciPy's erf (the NumPy backend's kernel) computes float16 in float64: the result was
    float64, where PyTorch keeps float16."""
    _half_or_skip(backend)
    grads = sg.Gradients()
    x = sg.tensor([-1.5, -0.25, 0.0, 0.3, 2.0], dtype="float16").trace(grads)
    out = sg.erf(x) if op == "erf" else sg.gelu(x, approximate="none")
    assert out.dtype == np.float16
    out.sum().backward()
    assert grads[x].dtype == np.float16
    reference = sg.erf(x.astype("float32")) if op == "erf" else sg.gelu(x.astype("float32"), approximate="none")
    np.testing.assert_allclose(out.numpy().astype(np.float32), reference.numpy(), atol=2e-3)
