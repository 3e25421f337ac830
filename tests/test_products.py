"""``a @ bᵀ`` through whichever of BLAS's two equivalent calls this machine runs faster
(``shapegrad._products``): measured once per shape, taken only where it gives the direct
call's bits, so no result depends on which way the timing went."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import shapegrad as sg
import shapegrad._products as products
from shapegrad.ops.linalg import linear


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[Any, bool]]:
    """No shape measured yet (the process's own decisions are put back after)."""
    decided: dict[Any, bool] = {}
    monkeypatch.setattr(products, "_decided", decided)
    yield decided


def _swapped_when_the_bits_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """The swapped call as the faster one, as on OpenBLAS's SkylakeX kernels."""
    monkeypatch.setattr(products, "_faster_swapped", lambda a, b: True)


def _swapped(monkeypatch: pytest.MonkeyPatch) -> None:
    """The swapped call taken at every measured shape, whatever this BLAS's kernels sum: the
    layers' own handling of it, on any machine (values then agree to rounding)."""
    _swapped_when_the_bits_agree(monkeypatch)
    monkeypatch.setattr(products, "_same_bits", lambda direct, swapped: True)


def _rows(rng: np.random.Generator, *shape: int, dtype: Any = np.float32) -> Any:
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_swapped_call_gives_the_direct_calls_bits_in_c_order(
    fresh: dict[Any, bool], monkeypatch: pytest.MonkeyPatch, dtype: Any
) -> None:
    _swapped_when_the_bits_agree(monkeypatch)
    rng = np.random.default_rng(0)
    g, w = _rows(rng, 32, 384, dtype=dtype), _rows(rng, 128, 384, dtype=dtype)
    found = products.times_transposed(np, g, w)
    np.testing.assert_array_equal(found, g @ w.T)
    assert found.flags.c_contiguous
    (key,) = fresh
    assert key[:3] == (32, 384, 128)
    # taken only where the probe gave the same bits both ways (this BLAS's kernel for the shape)
    a, b = products.probe_operands(key)
    assert fresh[key] == bool(np.array_equal(a @ b.T, (b @ a.T).T))


def test_a_call_that_sums_in_another_order_is_never_taken(
    fresh: dict[Any, bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    _swapped_when_the_bits_agree(monkeypatch)
    real = np.ascontiguousarray

    def other_order(array: Any) -> Any:  # the swapped call's result, one ulp off somewhere
        out = real(array)
        out.flat[0] = np.nextafter(out.flat[0], np.inf)
        return out

    monkeypatch.setattr(products.np, "ascontiguousarray", other_order)
    rng = np.random.default_rng(1)
    g, w = _rows(rng, 16, 256), _rows(rng, 256, 256)
    np.testing.assert_array_equal(products.times_transposed(np, g, w), g @ w.T)
    assert list(fresh.values()) == [False]


def test_each_shape_is_measured_once(fresh: dict[Any, bool], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(products, "_same_bits", lambda direct, swapped: True)
    measured: list[tuple[int, ...]] = []

    def faster(a: Any, b: Any) -> bool:
        measured.append((*a.shape, *b.shape))
        return True

    monkeypatch.setattr(products, "_faster_swapped", faster)
    rng = np.random.default_rng(2)
    w = _rows(rng, 128, 384)
    for _ in range(3):
        products.times_transposed(np, _rows(rng, 32, 384), w)
    products.times_transposed(np, _rows(rng, 16, 384), w)
    assert measured == [(32, 384, 128, 384), (16, 384, 128, 384)]
    assert list(fresh.values()) == [True, True]


@pytest.mark.parametrize(
    ("rows", "inner", "columns", "dtype"),
    [
        (2, 1024, 1024, np.float32),  # one or two rows: a vector's product
        (256, 1024, 1024, np.float32),  # many rows: BLAS's paths agree in speed
        (8, 64, 64, np.float32),  # microseconds either way
        (32, 384, 128, np.float16),  # no BLAS
        (32, 384, 128, np.int64),
    ],
)
def test_products_outside_the_measured_shapes_take_the_direct_call(
    fresh: dict[Any, bool], monkeypatch: pytest.MonkeyPatch, rows: int, inner: int, columns: int, dtype: Any
) -> None:
    _swapped_when_the_bits_agree(monkeypatch)
    rng = np.random.default_rng(3)
    g, w = _rows(rng, rows, inner, dtype=dtype), _rows(rng, columns, inner, dtype=dtype)
    np.testing.assert_array_equal(products.times_transposed(np, g, w), g @ w.T)
    assert fresh == {}


def test_a_device_array_takes_the_direct_call(fresh: dict[Any, bool], monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import emulated_cupy_backend

    _swapped_when_the_bits_agree(monkeypatch)
    rng = np.random.default_rng(4)
    g_np, w_np = _rows(rng, 32, 384), _rows(rng, 128, 384)
    with sg.use_backend(emulated_cupy_backend()):
        grads = sg.Gradients()
        g, w = sg.tensor(g_np).trace(grads), sg.tensor(w_np)
        out = g @ w.T  # forward and backward both a @ bᵀ
        out.sum().backward()
        found, gradient = out.numpy(), grads[g].numpy()
    np.testing.assert_allclose(found, g_np @ w_np.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gradient, np.ones((32, 128), np.float32) @ w_np, rtol=1e-5, atol=1e-5)
    assert fresh == {}


def test_layers_give_the_same_values_and_gradients_either_way(
    fresh: dict[Any, bool], monkeypatch: pytest.MonkeyPatch, numpy_backend: str
) -> None:
    """A linear layer's input gradient, a matmul's, and ``x @ W.T`` forward (PyTorch's layout):
    the values of the direct call (to rounding: the swapped call is forced here, where this
    BLAS may sum in another order)."""
    rng = np.random.default_rng(5)
    x_np, w_np, v_np, u_np = _rows(rng, 32, 384), _rows(rng, 384, 128), _rows(rng, 256, 384), _rows(rng, 128, 384)

    def run() -> list[Any]:
        grads = sg.Gradients()
        x, w, v, u = (sg.tensor(a).trace(grads) for a in (x_np, w_np, v_np, u_np))
        out = linear(x, w)  # backward: g (32×128) @ wᵀ
        # x @ vᵀ forward (32×384 by 384×256); g (32×384) @ uᵀ in sg.matmul's backward
        total = out.sum() + (x @ v.T).sum() + (sg.matmul(out, u) * x).sum()  # x: a gradient of full strides
        total.backward()
        return [total.numpy(), *(grads[t].numpy() for t in (x, w, v, u))]

    with monkeypatch.context() as direct:
        direct.setattr(products, "_swaps", lambda *layout: False)
        expected = run()
    _swapped(monkeypatch)
    found = run()
    assert sorted(key[:3] for key in fresh) == [(32, 128, 384), (32, 384, 128), (32, 384, 256)], fresh
    for f, e in zip(found, expected, strict=True):
        np.testing.assert_allclose(f, e, rtol=1e-5, atol=1e-4)


def test_a_compiled_step_replays_the_swapped_call(fresh: dict[Any, bool], monkeypatch: pytest.MonkeyPatch) -> None:
    _swapped(monkeypatch)
    rng = np.random.default_rng(6)
    w_np = _rows(rng, 128, 384)

    def step(x: Any, w: Any) -> Any:
        grads = sg.Gradients()
        x = x.trace(grads)
        h = x
        for _ in range(4):
            h = (h @ w).tanh() @ w.T  # x @ W.T forward, g @ W.T backward
        h.sum().backward()
        return h.detach(), grads[x]

    with sg.use_backend("numpy"):
        compiled = sg.compile(step)
        for s in range(3):
            x = sg.tensor(_rows(np.random.default_rng(s), 32, 128))
            w = sg.tensor(w_np)
            for got, want in zip(compiled(x, w), step(x, w), strict=True):
                np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert compiled.eager_reason is None and compiled.recordings[0].replays == 2
    assert fresh and all(fresh.values())
