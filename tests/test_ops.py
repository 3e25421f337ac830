"""The op table: every op's forward against NumPy and its gradient against central
differences in float64, over shapes that include broadcasting and size-1 dims, on every
backend."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from gradcheck import assert_gradients_match

import shapegrad as sg


@dataclass(frozen=True)
class Op:
    name: str
    fn: Callable[..., Any]
    ref: Callable[..., Any]
    shapes: list[tuple[int, ...]]
    domain: str = "any"  # any | positive | away_from_zero
    extra: dict[str, Any] = field(default_factory=dict)


def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def _lse(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    m = x.max(axis=axis, keepdims=True)
    out = np.log(np.exp(x - m).sum(axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


LABELS = np.array([[2, 0, 1], [1, 1, 3]])

OPS: list[Op] = [
    # binary, with broadcasting
    Op("add", lambda a, b: a + b, np.add, [(3, 4), (3, 4)]),
    Op("add_bias", lambda a, b: sg.add(a, b), np.add, [(3, 4), (4,)]),
    Op("add_broadcast_both", lambda a, b: a + b, np.add, [(2, 1, 4), (3, 1)]),
    Op("add_rank0", lambda a, b: a + b, np.add, [(3, 4), ()]),
    Op("sub", lambda a, b: a - b, np.subtract, [(3, 4), (1, 4)]),
    Op("mul", lambda a, b: a * b, np.multiply, [(2, 3, 4), (3, 1)]),
    Op("div", lambda a, b: a / b, np.divide, [(3, 4), (4,)], "positive"),
    Op("pow_tensor", lambda a, b: sg.pow(a, 1.0) ** b if False else a**b, np.power, [(3, 4), (3, 4)], "positive"),
    Op("maximum", lambda a, b: sg.maximum(a, b), np.maximum, [(3, 4), (4,)]),
    Op("minimum", lambda a, b: sg.minimum(a, b), np.minimum, [(3, 4), (3, 4)]),
    # with Python scalars, on either side
    Op("add_scalar", lambda a: 2.0 + a, lambda a: 2.0 + a, [(3,)]),
    Op("rsub_scalar", lambda a: 2.0 - a, lambda a: 2.0 - a, [(3,)]),
    Op("mul_scalar", lambda a: a * 3.0, lambda a: a * 3.0, [(2, 2)]),
    Op("rdiv_scalar", lambda a: 3.0 / a, lambda a: 3.0 / a, [(2, 2)], "positive"),
    Op("div_scalar", lambda a: a / 4.0, lambda a: a / 4.0, [(2, 2)]),
    Op("square", lambda a: a**2, lambda a: a**2, [(3, 2)]),
    Op("cube", lambda a: a**3, lambda a: a**3, [(3, 2)]),
    Op("maximum_scalar", lambda a: sg.maximum(a, 0.1), lambda a: np.maximum(a, 0.1), [(4,)], "away_from_zero"),
    # unary
    Op("neg", lambda a: -a, np.negative, [(3, 4)]),
    Op("exp", sg.exp, np.exp, [(3, 4)]),
    Op("log", sg.log, np.log, [(3, 4)], "positive"),
    Op("sqrt", sg.sqrt, np.sqrt, [(3, 4)], "positive"),
    Op("abs", sg.abs, np.abs, [(3, 4)], "away_from_zero"),
    Op("tanh", sg.tanh, np.tanh, [(3, 4)]),
    Op("sigmoid", sg.sigmoid, lambda a: 1 / (1 + np.exp(-a)), [(3, 4)]),
    Op("relu", sg.relu, lambda a: np.maximum(a, 0), [(3, 4)], "away_from_zero"),
    Op(
        "leaky_relu", lambda a: sg.leaky_relu(a, 0.1), lambda a: np.where(a > 0, a, 0.1 * a), [(3, 4)], "away_from_zero"
    ),
    Op("gelu", sg.gelu, _gelu, [(3, 4)]),
    Op("softplus", sg.softplus, lambda a: np.log1p(np.exp(a)), [(3, 4)]),
    Op("clamp", lambda a: sg.clamp(a, -0.5, 0.5), lambda a: np.clip(a, -0.5, 0.5), [(3, 4)], "away_from_bounds"),
    Op(
        "where",
        lambda a, b: sg.where(a > 0, a, b),
        lambda a, b: np.where(a > 0, a, b),
        [(3, 4), (3, 4)],
        "away_from_zero",
    ),
    # reductions
    Op("sum_all", lambda a: a.sum(), lambda a: a.sum(), [(3, 4)]),
    Op("sum_last", lambda a: a.sum(axis=-1), lambda a: a.sum(axis=-1), [(2, 3, 4)]),
    Op("sum_first_keep", lambda a: a.sum(axis=0, keepdims=True), lambda a: a.sum(axis=0, keepdims=True), [(2, 3, 4)]),
    Op("sum_tuple", lambda a: sg.sum(a, axis=(0, 2)), lambda a: a.sum(axis=(0, 2)), [(2, 3, 4)]),
    Op("mean", lambda a: a.mean(axis=1), lambda a: a.mean(axis=1), [(2, 3, 4)]),
    Op("mean_all", sg.mean, np.mean, [(2, 1, 4)]),
    Op("max", lambda a: a.max(axis=-1), lambda a: a.max(axis=-1), [(3, 5)]),
    Op("min_keep", lambda a: a.min(axis=0, keepdims=True), lambda a: a.min(axis=0, keepdims=True), [(3, 5)]),
    Op("var", lambda a: a.var(axis=-1), lambda a: a.var(axis=-1), [(3, 5)]),
    Op("var_unbiased", lambda a: a.var(axis=0, correction=1.0), lambda a: a.var(axis=0, ddof=1), [(4, 3)]),
    Op("logsumexp", lambda a: a.logsumexp(axis=-1), lambda a: _lse(a, axis=-1), [(3, 5)]),
    Op("logsumexp_all", lambda a: sg.logsumexp(a), _lse, [(2, 3)]),
    Op("softmax", lambda a: a.softmax(), _softmax, [(3, 5)]),
    Op("softmax_axis0", lambda a: sg.softmax(a, axis=0), lambda a: _softmax(a, 0), [(3, 5)]),
    Op("log_softmax", lambda a: a.log_softmax(), lambda a: np.log(_softmax(a)), [(2, 3, 5)]),
    # matmul
    Op("matmul_2d", lambda a, b: a @ b, np.matmul, [(3, 4), (4, 5)]),
    Op("matmul_vec_vec", lambda a, b: sg.matmul(a, b), np.matmul, [(4,), (4,)]),
    Op("matmul_vec_mat", lambda a, b: a @ b, np.matmul, [(4,), (4, 5)]),
    Op("matmul_mat_vec", lambda a, b: a @ b, np.matmul, [(2, 3, 4), (4,)]),
    Op("matmul_batched_2d", lambda a, b: a @ b, np.matmul, [(2, 3, 4), (4, 5)]),
    Op("matmul_batched_broadcast", lambda a, b: a @ b, np.matmul, [(2, 1, 3, 4), (3, 4, 2)]),
    # shape
    Op("reshape", lambda a: a.reshape(4, 3), lambda a: a.reshape(4, 3), [(3, 4)]),
    Op("reshape_infer", lambda a: sg.reshape(a, (2, -1)), lambda a: a.reshape(2, -1), [(3, 4)]),
    Op("flatten", sg.flatten, lambda a: a.reshape(a.shape[0], -1), [(2, 3, 4)]),
    Op("transpose", lambda a: a.transpose(), lambda a: a.T, [(3, 4)]),
    Op("permute", lambda a: a.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1), [(2, 3, 4)]),
    Op("mT", lambda a: a.mT, lambda a: np.swapaxes(a, -1, -2), [(2, 3, 4)]),
    Op("swapaxes", lambda a: a.swapaxes(0, 2), lambda a: np.swapaxes(a, 0, 2), [(2, 3, 4)]),
    Op("expand_dims", lambda a: a.expand_dims(0), lambda a: a[None], [(3,)]),
    Op("squeeze", lambda a: a.squeeze(1), lambda a: a.squeeze(1), [(3, 1, 2)]),
    Op("broadcast_to", lambda a: a.broadcast_to(2, 3, 4), lambda a: np.broadcast_to(a, (2, 3, 4)), [(3, 1)]),
    Op("concat", lambda a, b: sg.concat([a, b], axis=1), lambda a, b: np.concatenate([a, b], 1), [(2, 3), (2, 2)]),
    Op("stack", lambda a, b: sg.stack([a, b], axis=-1), lambda a, b: np.stack([a, b], -1), [(2, 3), (2, 3)]),
    # indexing
    Op("slice", lambda a: a[1:, ::2], lambda a: a[1:, ::2], [(3, 4)]),
    Op("int_index", lambda a: a[1], lambda a: a[1], [(3, 4)]),
    Op("fancy_repeat", lambda a: a[sg.tensor([0, 2, 0])], lambda a: a[[0, 2, 0]], [(3, 4)]),
    Op("bool_mask", lambda a: a[a > 0], lambda a: a[a > 0], [(3, 4)], "away_from_zero"),
    Op(
        "take_along_axis",
        lambda a: a.take_along_axis(sg.tensor(LABELS)),
        lambda a: np.take_along_axis(a, LABELS, -1),
        [(2, 4)],
    ),
    Op("gather", lambda a: sg.gather(a, sg.tensor(LABELS)), lambda a: a[LABELS], [(4, 2)]),
]


def _draw(op: Op, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for shape in op.shapes:
        a = rng.standard_normal(shape)
        if op.domain == "positive":
            a = np.abs(a) + 0.5
        elif op.domain == "away_from_zero":
            a = np.sign(a) * (np.abs(a) + 0.2)
            a[a == 0] = 0.3
        elif op.domain == "away_from_bounds":
            a = np.where(np.abs(np.abs(a) - 0.5) < 0.1, a + 0.25, a)
        arrays.append(np.asarray(a))
    return arrays


@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
def test_forward_matches_numpy(op: Op, backend: str) -> None:
    arrays = _draw(op, 1)
    found = op.fn(*[sg.tensor(a) for a in arrays])
    expected = op.ref(*arrays)
    assert found.shape == np.shape(expected)
    np.testing.assert_allclose(np.asarray(found.numpy(), dtype=np.float64), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
def test_gradient_matches_finite_differences(op: Op, backend: str) -> None:
    assert_gradients_match(op.fn, _draw(op, 2))


@pytest.mark.parametrize("op", [o for o in OPS if len(o.shapes) == 1 and o.domain == "any"], ids=lambda o: o.name)
def test_float32_is_kept(op: Op, numpy_backend: str) -> None:
    x = sg.tensor(_draw(op, 3)[0].astype(np.float32))
    assert op.fn(x).dtype == np.float32


def test_every_public_op_is_in_the_table() -> None:
    covered = {op.name.split("_")[0] for op in OPS}
    for name in [
        "add",
        "sub",
        "mul",
        "div",
        "exp",
        "log",
        "sqrt",
        "abs",
        "tanh",
        "sigmoid",
        "relu",
        "gelu",
        "softplus",
        "clamp",
        "maximum",
        "minimum",
        "where",
        "sum",
        "mean",
        "max",
        "min",
        "var",
        "logsumexp",
        "softmax",
        "log",
        "matmul",
        "reshape",
        "transpose",
        "permute",
        "swapaxes",
        "expand",
        "squeeze",
        "broadcast",
        "concat",
        "stack",
        "gather",
        "take",
        "flatten",
        "neg",
    ]:
        assert name in covered, name


def test_comparisons_are_untraced_booleans(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0, -1.0, 2.0]).trace(grads)
    for result in (x > 0, x >= 0, x < 0, x <= 0, x == 1.0, x != 1.0):
        assert not result.traced
        assert result.backend_dtype_name() == "bool"
    assert (x > 0).tolist() == [True, False, True]


def test_detach_stops_the_gradient(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0, 2.0]).trace(grads)
    y = (x * x.detach()).sum()
    y.backward()
    assert grads[x].tolist() == [1.0, 2.0]


def test_iterating_a_tensor_yields_its_rows(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]).trace(grads)
    rows = list(x)
    assert [r.tolist() for r in rows] == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    sg.backward(*[(r * float(i)).sum() for i, r in enumerate(rows)])
    assert grads[x].tolist() == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
