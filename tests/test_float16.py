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


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "logsumexp", "cross_entropy"])
def test_a_float16_row_as_wide_as_a_vocabulary_sums_its_exponentials_without_overflow(backend: str, op: str) -> None:
    """100,000 exponentials near 1 summed in float16 passed 65,504 to inf: softmax gave a row
    of zeros, log_softmax and logsumexp infinities. They are summed in float32 (as PyTorch
    accumulates half precision), the result kept in float16."""
    _half_or_skip(backend)
    rng = np.random.default_rng(0)
    logits = (0.01 * rng.standard_normal((2, 100_000))).astype(np.float16)
    wide = logits.astype(np.float64)
    log_total = np.log(np.exp(wide).sum(axis=-1, keepdims=True))
    x = sg.tensor(logits)
    if op == "softmax":
        got, expected = sg.softmax(x).numpy(), np.exp(wide - log_total)
        np.testing.assert_allclose(got.astype(np.float64).sum(axis=-1), [1.0, 1.0], rtol=1e-3)
    elif op == "log_softmax":
        got, expected = sg.log_softmax(x).numpy(), wide - log_total
    elif op == "logsumexp":
        got, expected = sg.logsumexp(x, axis=-1).numpy(), log_total[:, 0]
    else:
        labels = np.array([3, 99_999])
        got = sg.losses.cross_entropy(x, sg.tensor(labels)).numpy()
        expected = np.mean([log_total[i, 0] - wide[i, labels[i]] for i in range(2)])
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=2e-3, atol=1e-7)


def test_the_mean_cross_entropy_of_a_large_float16_batch_is_finite(backend: str) -> None:
    """The batch's losses were summed in float16: 40,000 rows at a loss of about 2.3 pass
    65,504, and the mean loss was inf."""
    _half_or_skip(backend)
    logits = sg.tensor(np.zeros((40_000, 10)), dtype="float16")
    loss = sg.losses.cross_entropy(logits, sg.tensor(np.zeros(40_000, dtype=np.int64)))
    assert abs(float(loss.numpy()) - np.log(10)) < 1e-2


def test_clipping_float16_gradients_sums_their_squares_without_overflow(backend: str) -> None:
    """The squares of float16 gradients summed in float16 overflow at a norm of 256: the norm
    came back inf and every gradient was scaled to 0 (PyTorch: 768, scaled to 1/32)."""
    _half_or_skip(backend)
    model = sg.nn.Linear(4, 4, dtype="float16", generator=sg.Generator(0))
    grads = model.alloc_grads()
    model(sg.tensor(np.full((1, 4), 96.0), dtype="float16").trace(grads)).sum().backward()
    # weight gradient: 96 everywhere (16 entries), bias: 1 everywhere: norm sqrt(16·96² + 4)
    expected = float(np.sqrt(16 * 96.0**2 + 4))
    norm = sg.optim.clip_grad_norm(grads, 1.0)
    assert abs(norm - expected) < 1e-2 * expected
    clipped = grads[model.weight].numpy().astype(np.float64)
    np.testing.assert_allclose(clipped, 96.0 / expected, rtol=1e-2)
