"""Property tests (hypothesis): the algebra gradients must obey, on drawn shapes and values."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import shapegrad as sg

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
floats = st.floats(-3, 3, allow_nan=False, allow_infinity=False, width=64)


@st.composite
def broadcastable_pair(draw: Any) -> tuple[np.ndarray, np.ndarray]:
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4))
    a = draw(hnp.arrays(np.float64, shapes.input_shapes[0], elements=floats))
    b = draw(hnp.arrays(np.float64, shapes.input_shapes[1], elements=floats))
    return a, b


def grads_of(fn: Any, *arrays: np.ndarray) -> list[np.ndarray]:
    grads = sg.Gradients()
    traced = [sg.tensor(a).trace(grads) for a in arrays]
    fn(*traced).backward()
    return [grads[t].numpy() if t in grads else np.zeros(t.shape) for t in traced]


@SETTINGS
@given(broadcastable_pair())
def test_broadcast_gradients_take_each_operand_s_shape(pair: tuple[np.ndarray, np.ndarray]) -> None:
    a, b = pair
    ga, gb = grads_of(lambda x, y: (x * y + x - y).sum(), a, b)
    assert ga.shape == a.shape and gb.shape == b.shape
    out_shape = np.broadcast_shapes(a.shape, b.shape)
    # d/db sum(x*y - y) = sum over broadcast axes of (x - 1): check the total mass
    np.testing.assert_allclose(gb.sum(), (np.broadcast_to(a, out_shape) - 1).sum(), rtol=1e-9, atol=1e-9)


@SETTINGS
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), elements=floats))
def test_backward_of_a_sum_is_the_sum_of_backwards(x: np.ndarray) -> None:
    f = lambda t: (t.tanh() * t).sum()  # noqa: E731
    g = lambda t: (t * t).mean()  # noqa: E731
    (together,) = grads_of(lambda t: f(t) + g(t), x)
    (first,) = grads_of(f, x)
    (second,) = grads_of(g, x)
    np.testing.assert_allclose(together, first + second, rtol=1e-10, atol=1e-12)
    multi = sg.Gradients()
    t = sg.tensor(x).trace(multi)
    sg.backward(f(t), g(t))
    np.testing.assert_allclose(multi[t].numpy(), together, rtol=1e-10, atol=1e-12)


@SETTINGS
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), elements=floats), floats, floats)
def test_gradients_are_linear(x: np.ndarray, alpha: float, beta: float) -> None:
    f = lambda t: (t.sigmoid() * t).sum()  # noqa: E731
    g = lambda t: t.exp().mean()  # noqa: E731
    (combined,) = grads_of(lambda t: f(t) * alpha + g(t) * beta, x)
    (gf,) = grads_of(f, x)
    (gg,) = grads_of(g, x)
    np.testing.assert_allclose(combined, alpha * gf + beta * gg, rtol=1e-9, atol=1e-9)


@SETTINGS
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=3, max_side=4), elements=floats))
def test_reducing_all_axes_equals_reducing_axis_by_axis(x: np.ndarray) -> None:
    (whole,) = grads_of(lambda t: (t * t).sum(), x)

    def stepwise(t: Any) -> Any:
        y = t * t
        while y.ndim:
            y = y.sum(axis=0)
        return y

    (stepped,) = grads_of(stepwise, x)
    np.testing.assert_allclose(whole, stepped, rtol=1e-12)
    np.testing.assert_allclose(whole, 2 * x, rtol=1e-12)


@SETTINGS
@given(
    hnp.arrays(np.float64, (3,), elements=floats),
    hnp.arrays(np.float64, (3,), elements=floats),
    hnp.arrays(np.float64, (3,), elements=floats),
)
def test_tape_merging_is_order_independent(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    results = []
    for first, second in ((0, 1), (2, 0), (1, 2)):
        grads = [sg.Gradients() for _ in range(3)]
        tensors = [sg.tensor(v).trace(g) for v, g in zip((a, b, c), grads, strict=False)]
        third = 3 - first - second
        # The same function, a·b·c, with the three tapes merged in a different order.
        product = (tensors[first] * tensors[second]) * tensors[third]
        product.tanh().sum().backward()
        seen_by = grads[third]  # any of the three sees the merged result
        results.append([seen_by[t].numpy() for t in tensors])
    for other in results[1:]:
        for mine, theirs in zip(results[0], other, strict=False):
            np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-15)
