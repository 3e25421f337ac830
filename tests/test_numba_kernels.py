"""The NumPy backend's numba kernels (the ``fast`` extra) against the reference xp math."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import pytest

import shapegrad as sg
from shapegrad.ops.activations import gelu_exact_backward
from shapegrad.ops.math import erf_values

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
    assert cdf is None and density is None  # nothing but x is kept for the backward pass
    expected_out, _ = _reference(x)
    assert out.dtype == np.float32
    assert np.max(np.abs(out - expected_out)) <= 5e-7 * 9


def test_gelu_exact_backward_kernel_matches_the_reference_rule_tails_included() -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate([(rng.standard_normal(231) * 3), np.linspace(-40, 40, 401)]).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    found = numba_kernels.kernel("gelu_exact_backward", np.float32)(g, x, None, None)
    x64 = x.astype(np.float64)
    (expected,) = gelu_exact_backward(np, g.astype(np.float64), x64, _reference(x)[1], np.exp(-0.5 * x64 * x64))
    assert found.dtype == np.float32
    np.testing.assert_allclose(found, expected, rtol=2e-6, atol=1e-6)


def test_the_gelu_gradient_kernel_is_float32_exact_to_underflow() -> None:
    """Φ(x) + x·φ(x), φ's exp(-x²/2) as a squared series, against float64 on a fine grid."""
    x = np.linspace(-14, 14, 200001).astype(np.float32)
    found = numba_kernels.kernel("gelu_exact_backward", np.float32)(np.ones_like(x), x)
    x64 = x.astype(np.float64)
    expected = _reference(x)[1] + x64 * np.exp(-0.5 * x64 * x64) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(found, expected, rtol=1e-6, atol=5e-7)


def test_kernels_take_strided_views_and_keep_shapes() -> None:
    x = np.arange(-24, 24, dtype=np.float32).reshape(4, 12)[:, ::3] / 4
    out, _, _ = numba_kernels.kernel("gelu_exact", np.float32)(x)
    assert out.shape == (4, 4)
    np.testing.assert_allclose(out, _reference(np.ascontiguousarray(x))[0], atol=5e-6)
    g = np.ones((4, 12), dtype=np.float32)[:, ::3]
    assert numba_kernels.kernel("gelu_exact_backward", np.float32)(g, x).shape == (4, 4)


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


POOLS = [
    ((2, 2), (2, 2), (0, 0)),
    ((2, 2), (2, 2), (1, 1)),
    ((3, 3), (2, 2), (1, 1)),
    ((2, 3), (1, 2), (1, 0)),
    ((3, 1), (3, 1), (0, 0)),
]


@pytest.mark.parametrize(("kernel", "stride", "padding"), POOLS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [(9, 8), (8, 6)])
def test_max_pool_kernels_match_the_reference_ties_included(kernel, stride, padding, dtype, size) -> None:
    from shapegrad.ops import conv

    rng = np.random.default_rng(2)
    x = rng.integers(-2, 3, (3, 4, *size)).astype(dtype)  # small integers: many tied windows
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


@pytest.mark.parametrize(("kernel", "stride", "padding"), POOLS)
def test_max_pool_kernels_keep_a_convolutions_channels_last_layout(kernel, stride, padding) -> None:
    """A (B, C, H, W) input laid out as (B, H, W, C), as conv2d's result is: the same values,
    winners and gradient as the reference, and results laid out channels-last too."""
    from shapegrad.ops import conv

    rng = np.random.default_rng(4)
    x = rng.integers(-2, 3, (3, 9, 8, 5)).astype(np.float32).transpose(0, 3, 1, 2)  # ties included
    x[1, 2, 4, 3] = np.nan
    reference = _reference_pool(np.ascontiguousarray(x), kernel, stride, padding)
    out = (reference.shape[2], reference.shape[3])
    values, index = numba_kernels.kernel("max_pool2d", np.float32)(x, kernel, stride, padding, out)
    np.testing.assert_array_equal(values, reference.numpy())
    expected_index, padded_shape = reference._node.saved[0], reference._node.saved[1]
    np.testing.assert_array_equal(index, expected_index)
    g = rng.standard_normal(values.shape).astype(np.float32)
    found = numba_kernels.kernel("max_pool2d_backward", np.float32)(
        g, index, padded_shape, kernel, stride, padding, out
    )
    (expected,) = conv.max_pool2d_backward(np, g, expected_index, padded_shape, kernel, stride, padding, out)
    np.testing.assert_allclose(found, expected, rtol=1e-6, atol=1e-6)
    for array in (values, index, found):
        assert array.transpose(0, 2, 3, 1).flags.c_contiguous


WINDOWS = [  # kernel, stride, padding, dilation, groups
    ((3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((3, 2), (2, 1), (0, 2), (1, 1), 1),
    ((2, 3), (1, 2), (1, 0), (2, 1), 2),
    ((3, 3), (2, 2), (2, 1), (1, 2), 4),
    ((3, 3), (2, 3), (2, 4), (2, 2), 1),  # padding wider than a window's reach: whole rows of zeros
    ((1, 1), (1, 1), (0, 0), (1, 1), 1),
]


@pytest.mark.parametrize(("kernel", "stride", "padding", "dilation", "groups"), WINDOWS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("channels_last", [True, False])
def test_window_kernels_match_the_reference_gathering_and_its_adjoint(
    kernel, stride, padding, dilation, groups, dtype, channels_last
) -> None:
    """The convolution's im2col and col2im (backends/numba_conv.py) against conv.py's
    strided slices: the same columns, bit for bit, and the same image summed back."""
    from shapegrad.ops import conv

    rng = np.random.default_rng(5)
    b, c, h, w = 2, 4, 9, 8
    x = rng.standard_normal((b, h, w, c) if channels_last else (b, c, h, w)).astype(dtype)
    image = x if channels_last else x.transpose(0, 2, 3, 1)  # strided: the kernel copies it
    out = conv._windows_fitting((h, w), kernel, stride, padding, dilation)
    found = numba_kernels.kernel("im2col", dtype)(image, kernel, stride, padding, dilation, groups, out)
    expected = conv._gather_windows(np, image, kernel, stride, padding, dilation, groups, out)
    assert found.dtype == dtype and found.shape == expected.shape == (
        b * out[0] * out[1],
        groups,
        kernel[0] * kernel[1] * c // groups,
    )
    np.testing.assert_array_equal(found, expected)
    if groups == 1:  # channels-first: the same columns, a row per tap; channels-last: refused
        planes = numba_kernels.kernel("im2col_planes", dtype)(
            image.transpose(0, 3, 1, 2), kernel, stride, padding, dilation, out
        )
        if channels_last:
            assert planes is None
        else:
            assert planes is not None and planes.dtype == dtype
            np.testing.assert_array_equal(planes, expected[:, 0, :].T)
    cols = rng.standard_normal(expected.shape).astype(dtype)
    strided = np.concatenate([cols, cols], axis=2)[:, :, : cols.shape[2]]  # any strides taken
    back = numba_kernels.kernel("col2im", dtype)(strided, b, (h, w), kernel, stride, padding, dilation, out)
    reference = conv._scatter_windows(np, cols, b, (h, w), kernel, stride, padding, dilation, out)
    assert back.shape == (b, h, w, c) and back.dtype == dtype
    np.testing.assert_allclose(back, reference, rtol=1e-6 if dtype == np.float32 else 1e-12, atol=1e-6)


def test_im2col_appends_the_biass_column_of_ones() -> None:
    from shapegrad.ops import conv

    image = np.random.default_rng(7).standard_normal((2, 5, 6, 3)).astype(np.float32)
    args = ((3, 3), (1, 1), (1, 1), (1, 1), 1, (5, 6))
    plain = numba_kernels.kernel("im2col", np.float32)(image, *args)
    with_ones = numba_kernels.kernel("im2col", np.float32)(image, *args, True)
    np.testing.assert_array_equal(with_ones[:, :, :-1], conv._gather_windows(np, image, *args))
    np.testing.assert_array_equal(with_ones[:, :, :-1], plain)
    np.testing.assert_array_equal(with_ones[:, :, -1], 1)
    planes = numba_kernels.kernel("im2col_planes", np.float32)(
        np.ascontiguousarray(image.transpose(0, 3, 1, 2)), *args[:4], args[5], True
    )
    np.testing.assert_array_equal(planes, with_ones[:, 0, :].T)


@pytest.mark.parametrize("weight_trained", [True, False])
@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d_through_the_kernels_matches_the_reference_bias_gradient_included(
    groups: int, weight_trained: bool
) -> None:
    """The bias rides in the product with one group (a column of ones), its gradient the
    weight product's last row, or a column sum when the weight is frozen."""
    from shapegrad.ops import conv

    rng = np.random.default_rng(8)
    x_np = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
    w_np = rng.standard_normal((6, 4 // groups, 3, 3)).astype(np.float32)
    b_np = rng.standard_normal(6).astype(np.float32)
    g_np = rng.standard_normal((2, 6, 4, 3)).astype(np.float32)

    def run() -> list[np.ndarray]:
        grads = sg.Gradients()
        x, b = sg.tensor(x_np).trace(grads), sg.tensor(b_np).trace(grads)
        w = sg.tensor(w_np).trace(grads) if weight_trained else sg.tensor(w_np)
        y = conv.conv2d(x, w, b, (2, 2), (1, 1), (1, 1), groups)
        (y * sg.tensor(g_np)).sum().backward()
        return [y.numpy(), grads[x].numpy(), grads[b].numpy()] + ([grads[w].numpy()] if weight_trained else [])

    found = run()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(conv, "fused_kernel", lambda *_: None)
        expected = run()
    for f, e in zip(found, expected, strict=True):
        np.testing.assert_allclose(f, e, rtol=1e-5, atol=1e-5)


def test_a_convolutions_result_is_channels_last_and_pooling_keeps_it(numpy_backend: str) -> None:
    """conv2d's result is its (B·Ho·Wo, O) matrix product viewed as (B, O, Ho, Wo): the next
    element-wise op, pooling and convolution read it without a transposing copy. (A layout
    of the NumPy backend's arrays: another backend's .numpy() is a host copy.)"""
    rng = np.random.default_rng(6)
    x = sg.tensor(rng.standard_normal((2, 3, 8, 8)).astype(np.float32))
    w = sg.tensor(rng.standard_normal((5, 3, 3, 3)).astype(np.float32))
    y = sg.nn.conv2d(x, w, padding=1).relu()
    pooled = sg.nn.MaxPool2d(2)(y)
    for t in (y, pooled):
        assert t.numpy().transpose(0, 2, 3, 1).flags.c_contiguous


def test_relu_backward_kernel_matches_the_reference_selecting() -> None:
    """issue #24 item 4: an infinite or NaN g where x <= 0 (or x is NaN) gives 0, as
    PyTorch's threshold_backward, in the kernel as in the reference rule."""
    from shapegrad.ops.activations import relu_backward

    x = np.array([-1.0, 0.0, 2.0, np.nan, -3.0, 4.0, -2.0], dtype=np.float32)
    g = np.array([1.0, 2.0, 3.0, 4.0, np.inf, np.inf, np.nan], dtype=np.float32)
    with np.errstate(invalid="ignore"):  # the compiled comparison with a NaN x sets the flag
        found = numba_kernels.kernel("relu_backward", np.float32)(g, x)
    (expected,) = relu_backward(np, g, x)
    np.testing.assert_array_equal(found, expected)
    np.testing.assert_array_equal(found, [0.0, 0.0, 3.0, 0.0, 0.0, np.inf, 0.0])


def test_sigmoid_kernel_is_the_reference_bit_for_bit() -> None:
    """The fused select after NumPy's exp rounds as the reference's passes: the same bits for
    every sign, size, ±0, ±inf and NaN (a GRU's losses must not move)."""
    from shapegrad.ops._toolkit import stable_sigmoid

    x = (np.random.default_rng(5).standard_normal(4099) * 30).astype(np.float32)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 88.7]
    with np.errstate(invalid="ignore", over="ignore"):
        found = numba_kernels.kernel("sigmoid", np.float32)(x)
        expected = stable_sigmoid(np, x)
    np.testing.assert_array_equal(found.view(np.int32), expected.view(np.int32))


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


SOFTMAX_MASKS = {
    "none": None,
    "causal (S, S)": np.tril(np.ones((5, 5), dtype=bool)),
    "padding (B, 1, 1, S)": np.array([[True] * 5, [True, True, False, False, False]]).reshape(2, 1, 1, 5),
    "a fully masked row": np.tril(np.ones((5, 5), dtype=bool), k=-1),
}


@pytest.mark.parametrize("mask_name", list(SOFTMAX_MASKS))
def test_softmax_kernels_match_the_reference(mask_name: str) -> None:
    from shapegrad.ops.reductions import MASKED, softmax_backward

    mask = SOFTMAX_MASKS[mask_name]
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((2, 3, 5, 5)) * 4).astype(np.float32)
    z = np.where(mask, x * 0.5, MASKED) if mask is not None else x * 0.5
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    expected = e / e.sum(axis=-1, keepdims=True)
    y = numba_kernels.kernel("softmax", np.float32)(x, 0.5, mask)
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-7)
    if mask is not None:
        assert np.all(y[..., ~np.broadcast_to(mask, x.shape)[0, 0]] >= 0)
    g = rng.standard_normal(x.shape).astype(np.float32)
    found = numba_kernels.kernel("softmax_backward", np.float32)(g, y, np.float32(-1), np.float32(0.5), mask)
    (reference,) = softmax_backward(np, g, y, -1, 0.5, mask)
    np.testing.assert_allclose(found, reference, rtol=1e-5, atol=1e-6)
    if mask_name == "a fully masked row":  # uniform weights, and no gradient to masked scores
        np.testing.assert_allclose(y[:, :, 0], 0.2, rtol=1e-6)
        assert np.all(found[:, :, 0] == 0)


def test_softmax_kernels_take_strided_input_and_another_axis_in_the_backward() -> None:
    from shapegrad.ops.reductions import softmax_backward

    rng = np.random.default_rng(6)
    x = rng.standard_normal((6, 4)).astype(np.float32).T  # not contiguous
    y = numba_kernels.kernel("softmax", np.float32)(x, 1.0, None)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=-1, keepdims=True), rtol=1e-6)
    # The backward kernel is bound for every softmax of this dtype: axis 0 runs the reference.
    y0 = np.exp(x) / np.exp(x).sum(axis=0, keepdims=True)
    g = rng.standard_normal(x.shape).astype(np.float32)
    found = numba_kernels.kernel("softmax_backward", np.float32)(g, y0, np.float32(0))
    np.testing.assert_allclose(found, softmax_backward(np, g, y0, 0)[0], rtol=1e-6)


@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_kernels_match_the_reference(affine: bool) -> None:
    from shapegrad.ops.normalization import layer_norm_backward

    rng = np.random.default_rng(7)
    x = (rng.standard_normal((3, 4, 7)) * 3 + 2).astype(np.float32)
    w = rng.standard_normal(7).astype(np.float32) if affine else None
    b = rng.standard_normal(7).astype(np.float32) if affine else None
    out, xhat, rstd = numba_kernels.kernel("layer_norm", np.float32)(x, w, b, 1e-5)
    x64 = x.astype(np.float64)
    expected_hat = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(xhat, expected_hat, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out, expected_hat * w + b if affine else expected_hat, rtol=1e-5, atol=1e-5)
    assert rstd.shape == (3, 4, 1)
    g = rng.standard_normal(x.shape).astype(np.float32)
    need = (True, affine, affine)
    found = numba_kernels.kernel("layer_norm_backward", np.float32)(g, xhat, rstd, w, need, np.float32(affine))
    reference = layer_norm_backward(np, g, xhat, rstd, w, need, affine)
    found = found if isinstance(found, tuple) else (found,)
    assert len(found) == len(reference)
    for f, r in zip(found, reference, strict=True):
        np.testing.assert_allclose(f, r, rtol=1e-4, atol=1e-5)


def test_attention_gradients_through_the_kernels_match_float64() -> None:
    """End to end: float32 masked softmax and layer norm (kernels) against float64 (reference)."""
    rng = np.random.default_rng(8)
    data, weight = rng.standard_normal((2, 4, 6)), rng.standard_normal(6)
    causal = np.tril(np.ones((4, 4), dtype=bool))
    results = []
    for dtype in ("float32", "float64"):
        grads = sg.Gradients()
        x = sg.tensor(data.astype(dtype)).trace(grads)
        w = sg.tensor(weight.astype(dtype)).trace(grads)
        h = sg.layer_norm(x, w, sg.zeros(6, dtype=dtype))
        scores = h @ h.swapaxes(-1, -2)
        (sg.softmax(scores, scale=0.4, mask=sg.tensor(causal)) @ h).square().sum().backward()
        results.append((grads[x].numpy(), grads[w].numpy()))
    for found, expected in zip(results[0], results[1], strict=True):
        np.testing.assert_allclose(found, expected, rtol=2e-4, atol=2e-5)


def test_scatter_add_rows_matches_add_at_repeats_and_negative_indices_included() -> None:
    rng = np.random.default_rng(10)
    target = rng.standard_normal((6, 2, 3)).astype(np.float32)
    indices = np.array([0, 5, 0, -1, 2, 2, 2])
    values = rng.standard_normal((7, 2, 3)).astype(np.float32)
    expected = target.copy()
    np.add.at(expected, indices, values)
    assert numba_kernels.kernel("scatter_add_rows", np.float32)(target, indices, values)
    np.testing.assert_allclose(target, expected, rtol=1e-6)
    # An index out of range changes nothing; arguments it does not take are left to add.at.
    before = target.copy()
    with pytest.raises(IndexError):
        numba_kernels.kernel("scatter_add_rows", np.float32)(target, np.array([1, 6]), values[:2])
    np.testing.assert_array_equal(target, before)
    assert not numba_kernels.kernel("scatter_add_rows", np.float32)(target, (indices,), values)


def test_embedding_gradient_through_the_row_scatter_matches_float64() -> None:
    rng = np.random.default_rng(11)
    table, ids = rng.standard_normal((5, 3)), np.array([[0, 4, 4], [1, 0, 4]])
    results = []
    for dtype in ("float32", "float64"):
        grads = sg.Gradients()
        t = sg.tensor(table.astype(dtype)).trace(grads)
        (sg.gather(t, sg.tensor(ids)) * sg.tensor(np.arange(18.0).reshape(2, 3, 3).astype(dtype))).sum().backward()
        results.append(grads[t].numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)
    np.testing.assert_allclose(results[1][4], np.arange(18.0).reshape(6, 3)[[1, 2, 5]].sum(axis=0))


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("per_row", [False, True])
def test_cross_entropy_kernels_match_the_reference(smoothing: float, per_row: bool) -> None:
    from shapegrad.losses import cross_entropy_backward

    rng = np.random.default_rng(12)
    logits = (rng.standard_normal((3, 4, 7)) * 5).astype(np.float32)
    labels = rng.integers(0, 7, (3, 4))
    logp, rows = numba_kernels.kernel("cross_entropy", np.float32)(logits, labels, smoothing)
    x = logits.astype(np.float64)
    shifted = x - x.max(-1, keepdims=True)
    expected_logp = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    expected_rows = -np.take_along_axis(expected_logp, labels[..., None], -1)[..., 0]
    expected_rows = (1 - smoothing) * expected_rows - smoothing * expected_logp.mean(-1)
    np.testing.assert_allclose(logp, expected_logp, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rows, expected_rows, rtol=1e-5, atol=1e-5)
    g = rng.standard_normal((3, 4)).astype(np.float32) if per_row else np.asarray(1.5, dtype=np.float32)
    ids = labels[..., None]
    found, none = numba_kernels.kernel("cross_entropy_backward", np.float32)(
        g, logp, ids, np.float32(smoothing), np.float32(per_row), np.float32(12)
    )
    expected, _ = cross_entropy_backward(np, g, logp, ids, smoothing, per_row, 12)
    assert none is None and found.shape == logits.shape
    np.testing.assert_allclose(found, expected, rtol=1e-5, atol=1e-6)


def test_cross_entropy_kernel_refuses_a_label_out_of_range() -> None:
    with pytest.raises(IndexError, match="label"):
        numba_kernels.kernel("cross_entropy", np.float32)(np.zeros((2, 3), np.float32), np.array([0, 3]), 0.0)


def test_kernels_compile_without_a_writable_cache_location(monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-only install without a home directory: numba finds nowhere to keep compiled
    code and refuses cache=True; the kernels are then compiled for the process alone."""
    caching = pytest.importorskip("numba.core.caching")
    monkeypatch.setattr(caching.CacheImpl, "_locator_classes", [])
    monkeypatch.setattr(numba_kernels, "_built", {})
    monkeypatch.setattr(numba_kernels, "_cache", True)
    adam = numba_kernels.kernel("adam", np.float64)
    assert adam is not None and numba_kernels._cache is False
    p, m, v = np.ones(5), np.zeros(5), np.zeros(5)
    assert adam(np.full(5, 0.5), *(np.float64(c) for c in (0.1, 0.9, 0.999, 1e-8, 1.0)), p, m, v)
    np.testing.assert_allclose(m, 0.05)
    assert numba_kernels.kernel("gelu_exact", np.float32) is not None  # ufuncs too


# issue #24 item 7: a compiled kernel gives the reference path's result for extreme and
# non-finite inputs at every length (a vectorised loop handles 8 float32 lanes at a time,
# and a remainder of fewer in scalar code, so lengths 1, 7, 8, 33 and 1000 take both).
EXTREMES = {
    "1e6": 1e6,
    "-1e6": -1e6,
    "1e-30": 1e-30,
    "-1e-30": -1e-30,
    "inf": np.inf,
    "-inf": -np.inf,
    "nan": np.nan,
    "0": 0.0,
    "-0": -0.0,
}


def _gelu_case(x: np.ndarray, ordinary: np.ndarray) -> list[Any]:
    grads = sg.Gradients()
    t = sg.tensor(x).trace(grads)
    y = sg.gelu(t, approximate="none")
    (y * sg.tensor(x[::-1].copy())).sum().backward()
    return [y.numpy(), grads[t].numpy()]


def _relu_case(x: np.ndarray, ordinary: np.ndarray) -> list[Any]:
    grads = sg.Gradients()
    t = sg.tensor(x).trace(grads)
    y = sg.relu(t)
    (y * sg.tensor(x[::-1].copy())).sum().backward()
    signs = np.signbit(sg.relu(sg.tensor(-np.abs(x))).numpy()).astype(np.float32)  # -0.0 and below: +0.0
    return [y.detach().numpy(), grads[t].numpy(), signs]


def _sigmoid_case(x: np.ndarray, ordinary: np.ndarray) -> list[Any]:
    grads = sg.Gradients()
    t = sg.tensor(x).trace(grads)
    y = sg.sigmoid(t)
    (y * sg.tensor(ordinary)).sum().backward()
    return [y.detach().numpy(), grads[t].numpy()]


def _softmax_case(x: np.ndarray, ordinary: np.ndarray) -> list[Any]:
    found: list[Any] = []
    for mask in (None, sg.tensor((ordinary > -0.5)[None])):
        grads = sg.Gradients()
        t = sg.tensor(np.stack([x, ordinary])).trace(grads)
        y = sg.softmax(t, scale=0.5, mask=mask)
        (y * sg.tensor(np.stack([ordinary, x]))).sum().backward()
        found += [y.numpy(), grads[t].numpy()]
    return found


def _cross_entropy_case(x: np.ndarray, ordinary: np.ndarray) -> list[Any]:
    found: list[Any] = []
    for smoothing, reduction in ((0.0, "mean"), (0.1, "none")):
        grads = sg.Gradients()
        t = sg.tensor(np.stack([x, ordinary, x[::-1].copy()])).trace(grads)
        labels = sg.tensor(np.array([0, len(x) - 1, len(x) // 2]))
        loss = sg.losses.cross_entropy(t, labels, label_smoothing=smoothing, reduction=reduction)
        (loss * sg.tensor(np.float32(1.5) if reduction == "mean" else ordinary[:3].copy())).sum().backward()
        found += [loss.numpy(), grads[t].numpy()]
    return found


def _layer_norm_case(x: np.ndarray, ordinary: np.ndarray) -> list[Any]:
    found: list[Any] = []
    for affine in (True, False):
        grads = sg.Gradients()
        t = sg.tensor(np.stack([x, ordinary])).trace(grads)
        w, b = (
            (sg.tensor(ordinary).trace(grads), sg.tensor(ordinary[::-1].copy()).trace(grads))
            if affine
            else (None, None)
        )
        y = sg.layer_norm(t, w, b)
        (y * sg.tensor(np.stack([ordinary, x]))).sum().backward()
        found += [y.numpy(), grads[t].numpy()]
        if w is not None and b is not None:
            found += [grads[w].numpy(), grads[b].numpy()]
    return found


def _max_pool_case(x: np.ndarray, ordinary: np.ndarray) -> list[Any]:
    from shapegrad.ops.conv import max_pool2d

    found: list[Any] = []
    # (1, 1, 2, 2n): each 2×2 window is (ordinary, extreme) over two larger values, so a NaN
    # comes before the maximum (which does not win: the reference's maximum is NaN from there).
    plane = np.stack([np.stack([ordinary, x], axis=-1).reshape(-1), np.repeat(ordinary + 3, 2)])[None, None]
    for kernel, stride, padding in (((2, 2), (2, 2), (0, 0)), ((2, 3), (1, 2), (1, 1))):
        grads = sg.Gradients()
        t = sg.tensor(plane).trace(grads)
        y = max_pool2d(t, kernel, stride, padding)
        g = np.resize(np.concatenate([x, ordinary]), y.shape).astype(np.float32)
        (y * sg.tensor(g)).sum().backward()
        found += [y.numpy(), grads[t].numpy()]
    return found


def _conv_case(x: np.ndarray, ordinary: np.ndarray) -> list[Any]:
    from shapegrad.ops.conv import conv2d

    found: list[Any] = []
    # (1, 2, 3, n): the extremes in the middle row of the first channel, a window's taps over
    # them; then in the result's gradient, which col2im sums back.
    image = np.stack([np.stack([ordinary, x, ordinary[::-1]]), np.stack([ordinary[::-1], ordinary, x])])[None]
    weight = np.linspace(-1, 1, 2 * 2 * 3 * 3, dtype=np.float32).reshape(2, 2, 3, 3)
    for groups, weight_shape in ((1, (2, 2, 3, 3)), (2, (2, 1, 3, 3))):
        for spiked, given in ((image, ordinary), (np.resize(ordinary, image.shape), x)):
            grads = sg.Gradients()
            t = sg.tensor(spiked.astype(np.float32)).trace(grads)
            k = sg.tensor(np.resize(weight, weight_shape)).trace(grads)
            y = conv2d(t, k, None, (1, 1), (1, 1), (1, 1), groups)
            g = np.resize(np.concatenate([given, ordinary]), y.shape).astype(np.float32)
            (y * sg.tensor(g)).sum().backward()
            found += [y.numpy(), grads[t].numpy()]
    return found


def _scatter_rows_case(x: np.ndarray, ordinary: np.ndarray) -> list[Any]:
    grads = sg.Gradients()
    table = sg.tensor(np.stack([ordinary] * 4)).trace(grads)
    ids = np.array([0, 3, 0, 1, 0])
    g = np.stack([x, ordinary, x[::-1], x, ordinary[::-1]])
    (sg.gather(table, sg.tensor(ids)) * sg.tensor(g)).sum().backward()
    return [grads[table].numpy()]


def _optimizer_run(optimizer: Any, x: np.ndarray, ordinary: np.ndarray) -> list[Any]:
    backend = sg.get_backend("numpy")
    found: list[Any] = []
    for p0, g in ((ordinary, x), (x, ordinary)):  # extremes in the gradient, then in the parameter
        p = p0.copy()
        state = optimizer._init_state(np, p, optimizer)
        for step in (1, 2, 3):  # SGD's momentum kernel runs from the second step
            optimizer._apply(backend, p, g, state, 0.01, step)
        found += [p, *state.values()]
    return found


def _optimizer_extremes(make: Callable[[Any], Any]) -> Callable[[np.ndarray, np.ndarray], list[Any]]:
    def case(x: np.ndarray, ordinary: np.ndarray) -> list[Any]:
        return _optimizer_run(make(sg.nn.Linear[Literal[2], Literal[3]]()), x, ordinary)

    return case


def _recurrence_extremes(cell: str) -> Callable[[np.ndarray, np.ndarray], list[Any]]:
    """issue #25: the recurrence op (forward and rule) with the extremes, one place at a time,
    in the input projection, in the initial states and in the result's gradient; the hidden
    size is the length, so every gate block has vector lanes and a remainder."""
    from shapegrad.ops.recurrent import CELL_GATES, recurrence

    def case(x: np.ndarray, ordinary: np.ndarray) -> list[Any]:
        n = len(x)
        width = CELL_GATES[cell] * n
        count = 2 if cell == "lstm" else 1
        rng = np.random.default_rng(n)
        w_hh = (rng.standard_normal((width, n)) / (2 * math.sqrt(n))).astype(np.float32)
        b_hh = rng.standard_normal(width).astype(np.float32)
        plain = rng.standard_normal((2, 2, width)).astype(np.float32)
        spiked = plain.copy()
        spiked[1, 0] = np.resize(x, width)  # the second step of the first sequence
        states = [np.stack([ordinary, ordinary[::-1]]) for _ in range(count)]
        found: list[Any] = []
        for where in ("input", "state", "gradient"):
            given = [s.copy() for s in states]
            if where == "state":
                given[-1][0] = x  # c0 for an LSTM (h0 also feeds W_hh's product: below), h0 otherwise
                given[0][1] = x
            grads = sg.Gradients()
            xproj = sg.tensor(spiked if where == "input" else plain).trace(grads)
            w, b = sg.tensor(w_hh).trace(grads), sg.tensor(b_hh).trace(grads)
            initial = tuple(sg.tensor(s).trace(grads) for s in given)
            for reverse in (False, True):
                result = recurrence(cell, xproj, w, b, initial, reverse)
                weight = np.resize(np.concatenate([ordinary, x if where == "gradient" else ordinary]), result.shape)
                (result * sg.tensor(weight.astype(np.float32))).sum().backward()
                found.append(result.numpy())
            found += [grads[t].numpy() for t in (xproj, *initial)]
            # W_hh's and b_hh's gradients are sums over the steps of xproj's gradient (compared
            # above) times h_prev: where their terms cancel, they turn the gates' last-ulp
            # differences into any relative error (|h_prev| is 1e6 here), so only where they
            # are NaN or infinite is compared.
            found += [np.where(np.isfinite(grads[t].numpy()), 0, grads[t].numpy()) for t in (w, b)]
        return found

    return case


# Every kernel numba_kernels builds, through the op, loss or optimizer that uses it.
KERNEL_CASES: dict[str, Callable[[np.ndarray, np.ndarray], list[Any]]] = {
    "gelu_exact + backward": _gelu_case,
    "relu + backward": _relu_case,
    "sigmoid": _sigmoid_case,
    "softmax + backward": _softmax_case,
    "cross_entropy + backward": _cross_entropy_case,
    "layer_norm + backward": _layer_norm_case,
    "max_pool2d + backward": _max_pool_case,
    "im2col im2col_planes col2im": _conv_case,  # a channels-first image: the planes' gather
    "scatter_add_rows": _scatter_rows_case,
    "adam": _optimizer_extremes(lambda m: sg.optim.Adam(m, lr=0.01)),
    "sgd_momentum": _optimizer_extremes(lambda m: sg.optim.SGD(m, lr=0.01, momentum=0.9)),
    "sgd_nesterov": _optimizer_extremes(lambda m: sg.optim.SGD(m, lr=0.01, momentum=0.9, nesterov=True)),
    **{f"{cell}_sequence + backward": _recurrence_extremes(cell) for cell in ("lstm", "gru", "rnn_tanh", "rnn_relu")},
}


def test_every_kernel_has_an_extreme_values_case() -> None:
    covered = {name for case in KERNEL_CASES for name in case.replace(" + backward", "").split()}
    covered |= {f"{name}_backward" for name in covered}
    assert set(numba_kernels._BUILDERS) <= covered


def _reference_results(case: Callable[[np.ndarray, np.ndarray], list[Any]], x: np.ndarray, ordinary: np.ndarray):
    """``case`` on the SHAPEGRAD_NUMBA=0 path: no compiled kernel, looked up afresh."""
    from shapegrad import _backend

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(numba_kernels, "_numba", False)
        patch.setattr(_backend, "_kernels", {})
        patch.setattr(_backend, "_bound", {})
        return case(x, ordinary)


@pytest.mark.parametrize("length", [1, 7, 8, 33, 1000])
@pytest.mark.parametrize("value", list(EXTREMES))
@pytest.mark.parametrize("kernel_name", list(KERNEL_CASES))
def test_kernels_give_the_reference_result_for_extreme_values_at_every_length(
    kernel_name: str, value: str, length: int
) -> None:
    rng = np.random.default_rng(length)
    ordinary = rng.standard_normal(length).astype(np.float32)
    x = ordinary.copy()
    x[::3] = EXTREMES[value]  # every third element: in the vector lanes and in the remainder
    case = KERNEL_CASES[kernel_name]
    with np.errstate(all="ignore"), sg.use_backend("numpy"):
        found = case(x, ordinary)
        expected = _reference_results(case, x, ordinary)
    assert len(found) == len(expected)
    for i, (f, e) in enumerate(zip(found, expected, strict=True)):
        f, e = np.asarray(f), np.asarray(e)
        where = f"{kernel_name} result {i} for {value} at length {length}"
        np.testing.assert_array_equal(np.isnan(f), np.isnan(e), err_msg=f"NaN places differ: {where}")
        np.testing.assert_array_equal(np.isposinf(f), np.isposinf(e), err_msg=f"+inf places differ: {where}")
        np.testing.assert_array_equal(np.isneginf(f), np.isneginf(e), err_msg=f"-inf places differ: {where}")
        # Rounding differs (fused multiply-adds, a row's sum reordered) by float32's epsilon of
        # the row's largest terms, which a row holding 1e6 turns into more than 1e-6 elsewhere.
        finite = np.isfinite(e)
        rows = np.where(finite, np.abs(e), 0).max(axis=-1, keepdims=True, initial=1.0) if e.ndim else 1.0
        scale = np.broadcast_to(rows, e.shape)[finite]
        np.testing.assert_array_less(
            np.abs(f[finite] - e[finite]), 1e-5 * np.abs(e[finite]) + 1e-6 * scale, err_msg=where
        )


def test_kernels_give_the_reference_result_for_extreme_values_on_a_baseline_cpu(tmp_path: Any) -> None:
    """issue #24 item 7: the test above with the kernels compiled for a CPU without FMA or
    AVX (numba's "generic": 4-wide SSE2 lanes), where gelu(-1e6) was -0.03 from 4 values on
    and -0.0 in shorter arrays; in a fresh process, as numba reads its target at import."""
    env = {**os.environ, "NUMBA_CPU_NAME": "generic", "NUMBA_CACHE_DIR": str(tmp_path)}
    test = "test_kernels_give_the_reference_result_for_extreme_values_at_every_length"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"{__file__}::{test}"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("cell", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
def test_recurrence_kernels_match_the_reference_loop(cell: str, reverse: bool, dtype: Any) -> None:
    """issue #25: the fused sequence (forward and rule) equals ``ops.recurrent``'s reference."""
    from shapegrad.ops import recurrent

    rng = np.random.default_rng(0)
    steps, batch, hidden = 5, 3, 4
    width = recurrent.CELL_GATES[cell] * hidden
    xproj = rng.standard_normal((steps, batch, width)).astype(dtype)
    w_hh = (rng.standard_normal((width, hidden)) / 2).astype(dtype)
    b_hh = rng.standard_normal(width).astype(dtype)
    states = tuple(rng.standard_normal((batch, hidden)).astype(dtype) for _ in range(2 if cell == "lstm" else 1))
    forward = numba_kernels.kernel(f"{cell}_sequence", dtype)
    backward = numba_kernels.kernel(f"{cell}_sequence_backward", dtype)
    assert forward is not None and backward is not None
    result, gates = forward(xproj, w_hh, b_hh, states, reverse)
    expected_result, expected_gates = recurrent.sequence_forward(np, cell, xproj, w_hh, b_hh, states, reverse)
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-13}
    assert result.dtype == dtype and result.shape == expected_result.shape
    np.testing.assert_allclose(result, expected_result, **tol)
    if expected_gates is not None:
        np.testing.assert_allclose(gates, expected_gates, **tol)
    g = rng.standard_normal(result.shape).astype(dtype)
    found = backward(g, result, gates, w_hh, *states, dtype(reverse))  # numbers arrive as the dtype
    expected = recurrent.RULES[cell](np, g, result, gates, w_hh, *states, reverse)
    assert len(found) == len(expected)
    for i, (f, e) in enumerate(zip(found, expected, strict=True)):
        np.testing.assert_allclose(f, e, **tol, err_msg=f"gradient {i}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_recurrences_tanh_is_within_a_few_ulp_and_keeps_nan_infinities_and_zeros(dtype: Any) -> None:
    """issue #25: the recurrence kernels' vectorisable tanh (a rational approximation for
    float32, argument halving for float64) against NumPy's, and exactly its special values."""
    numba = pytest.importorskip("numba")
    from shapegrad_backends import numba_recurrent

    numba_kernels.available()
    numba_recurrent._register()

    @numba.njit
    def apply(x: Any, out: Any) -> None:
        for i in range(x.size):
            out[i] = numba_recurrent._tanh(x[i])

    info = np.finfo(dtype)
    sweep = np.concatenate(
        [np.linspace(-25, 25, 1_000_001), np.geomspace(1e-30, 25, 100_001), -np.geomspace(1e-30, 25, 100_001)]
    ).astype(dtype)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e6, -1e6, info.tiny, info.smallest_subnormal], dtype)
    x = np.concatenate([sweep, special])
    found = np.empty_like(x)
    apply(x, found)
    expected = np.tanh(x)
    ulp = np.abs(found[: sweep.size] - expected[: sweep.size]) / np.spacing(np.abs(expected[: sweep.size]))
    assert ulp.max() <= (6 if dtype == np.float32 else 8), f"{ulp.max()} ulp at {sweep[np.argmax(ulp)]}"
    np.testing.assert_array_equal(found[sweep.size :], expected[sweep.size :])
    assert np.signbit(found[-5])  # tanh(-0) = -0


_DOUBLING_LOOP = """def fused(a0, o0):
    rows, cols = o0.shape
    for i in range(rows):
        for j in range(cols):
            o0[i, j] = a0[i, j] * np.float32(2.0)"""


def _fresh_loops(monkeypatch: pytest.MonkeyPatch, directory: Any) -> Any:
    """``numba_loops`` as a new process finds it, its cache in ``directory``."""
    numba_loops = pytest.importorskip("shapegrad_backends.numba_loops")
    monkeypatch.setenv(numba_loops.CACHE_ENV_VAR, str(directory))
    monkeypatch.setattr(numba_loops, "_loops", {})
    monkeypatch.setattr(numba_loops, "_directory", [])
    return numba_loops


def test_a_generated_loop_is_compiled_once_and_loaded_from_disk_after(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """sg.compile's fused loops are kept in SHAPEGRAD_CACHE_DIR: a later process (here: the
    in-memory table emptied, so the source is loaded and compiled again) takes the machine
    code from numba's on-disk cache instead of compiling it, and computes the same."""
    import numba

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    numba_loops = _fresh_loops(monkeypatch, tmp_path)
    first = numba_loops.loop(numba, _DOUBLING_LOOP, "fused")
    out = np.empty_like(x)
    first(x, out)
    np.testing.assert_array_equal(out, 2 * x)
    assert not first.stats.cache_hits and first.stats.cache_misses
    (kept,) = (tmp_path / "loops").glob("sg_loop_*.py")
    assert kept.with_suffix(".lock").exists()  # numba saved the machine code under the lock
    if os.name == "posix" and os.umask(os.umask(0)) & 0o044 == 0:
        assert kept.stat().st_mode & 0o044 == 0o044  # readable by others, as open() writes
    assert numba_loops.loop(numba, _DOUBLING_LOOP, "fused") is first  # one compiled function per source

    numba_loops = _fresh_loops(monkeypatch, tmp_path)
    again = numba_loops.loop(numba, _DOUBLING_LOOP, "fused")
    assert again is not first
    out = np.empty_like(x)
    again(x, out)
    np.testing.assert_array_equal(out, 2 * x)
    assert again.stats.cache_hits and not again.stats.cache_misses

    # a file whose text is not the loop's (truncated, altered) is not what runs
    (kept,) = (tmp_path / "loops").glob("sg_loop_*.py")
    kept.write_text(kept.read_text().replace("2.0", "3.0"))
    numba_loops = _fresh_loops(monkeypatch, tmp_path)
    out = np.empty_like(x)
    numba_loops.loop(numba, _DOUBLING_LOOP, "fused")(x, out)
    np.testing.assert_array_equal(out, 2 * x)


def test_without_a_writable_cache_directory_loops_compile_in_memory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """A cache path that cannot be a directory (here: a file) leaves the loops compiled per
    process, as before the cache."""
    import numba

    blocked = tmp_path / "file"
    blocked.write_text("")
    numba_loops = _fresh_loops(monkeypatch, blocked)
    loop = numba_loops.loop(numba, _DOUBLING_LOOP, "fused")
    x = np.ones((2, 2), np.float32)
    out = np.empty_like(x)
    loop(x, out)
    np.testing.assert_array_equal(out, 2 * x)
    assert numba_loops.cache_directory() is None
