"""``//`` and ``%`` as PyTorch's (``sg.floor_divide``, ``sg.remainder``): floor division and
the remainder with the divisor's sign, on integers and floats, broadcasting, a Python number
on either side; two booleans and an integer division by zero refused; gradients as
PyTorch's (0 for ``//``; 1 and ``-floor(a / b)`` for ``%``). Compared with NumPy and, where
installed, PyTorch."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from support.gradcheck import assert_gradients_match

import shapegrad as sg

try:
    import torch
except ImportError:  # the PyTorch comparisons skip without it
    torch = None  # type: ignore[assignment]

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is the oracle here")

OPS: list[tuple[str, Callable[[Any, Any], Any]]] = [("floordiv", operator.floordiv), ("mod", operator.mod)]
FUNCTIONS = {"floordiv": sg.floor_divide, "mod": sg.remainder}
RNG = np.random.default_rng(0)
INTS = RNG.integers(-20, 20, (2, 3, 4)).astype(np.int64)
DIVISORS = np.array([-7, -3, 2, 5], np.int64)  # no zero: the last axis
COLUMN = np.array([[4], [-3], [9]], np.int32)
FLOATS = RNG.standard_normal((3, 4)) * 5
FLOAT_DIVISORS = np.array([-2.5, -0.7, 0.3, 1.75])


def _check(found: Any, expected: Any) -> None:
    assert isinstance(found, sg.Tensor)
    assert found.backend_dtype_name() == str(expected.dtype)
    np.testing.assert_array_equal(found.numpy(), expected)


def _torch_check(found: Any, expected: Any) -> None:
    np.testing.assert_allclose(found.numpy(), expected.numpy(), rtol=1e-12, atol=0)


@pytest.mark.parametrize(("name", "op"), OPS)
@pytest.mark.parametrize(
    ("left", "right"),
    [(INTS, DIVISORS), (DIVISORS, INTS[..., :1] + 21), (INTS[0], COLUMN), (FLOATS, FLOAT_DIVISORS), (FLOATS, DIVISORS)],
    ids=["int, vector", "vector, int", "int64, int32 column", "float", "float, int"],
)
def test_forward_with_broadcasting_as_numpy(name: str, op: Any, left: Any, right: Any, backend: str) -> None:
    if backend == "strict" and left.dtype.kind != right.dtype.kind:
        pytest.skip("the strict Array API backend mixes no dtype kinds, for + neither")
    _check(op(sg.tensor(left), sg.tensor(right)), op(left, right))
    _check(FUNCTIONS[name](sg.tensor(left), sg.tensor(right)), op(left, right))


@needs_torch
@pytest.mark.parametrize(("name", "op"), OPS)
@pytest.mark.parametrize(
    ("left", "right"),
    [(INTS, DIVISORS), (INTS[0], COLUMN.astype(np.int64)), (FLOATS, FLOAT_DIVISORS), (-FLOATS, -FLOAT_DIVISORS)],
    ids=["int", "int column", "float", "negated"],
)
def test_forward_as_pytorch(name: str, op: Any, left: Any, right: Any) -> None:
    found = op(sg.tensor(left), sg.tensor(right))
    expected = op(torch.tensor(left), torch.tensor(right))
    assert found.backend_dtype_name() == str(expected.dtype).removeprefix("torch.")
    _torch_check(found, expected)


@pytest.mark.parametrize(("name", "op"), OPS)
@pytest.mark.parametrize("number", [3, -4, 2.5, -0.75, True])
def test_a_python_number_on_either_side(name: str, op: Any, number: Any, backend: str) -> None:
    strict = backend == "strict"  # the strict Array API mixes a bool only with bools, a float with floats
    if not (strict and type(number) is bool):
        floats = sg.tensor(FLOAT_DIVISORS)
        _check(op(floats, number), op(FLOAT_DIVISORS, number))
        _check(op(number, floats), op(number, FLOAT_DIVISORS))
    if not (strict and type(number) is not int):
        ints = sg.tensor(DIVISORS)
        # integers with a Python float are PyTorch's default float32 (NumPy: float64)
        as_numbers = DIVISORS.astype(np.float32) if type(number) is float else DIVISORS
        _check(op(ints, number), op(as_numbers, number))
        _check(op(number, ints), op(number, as_numbers))


@needs_torch
@pytest.mark.parametrize(("name", "op"), OPS)
@pytest.mark.parametrize("number", [3, -4, 2.5, -0.75])
def test_numbers_as_pytorch(name: str, op: Any, number: Any) -> None:
    for tensor in (DIVISORS, FLOAT_DIVISORS):
        _torch_check(op(sg.tensor(tensor), number), op(torch.tensor(tensor), number))
        _torch_check(op(number, sg.tensor(tensor)), op(number, torch.tensor(tensor)))


def test_dtypes_follow_pytorch_as_the_other_binary_ops(numpy_backend: str) -> None:
    """An int32 tensor with a Python int stays int32, a float32 one float32; an integer
    tensor with a Python float is PyTorch's default float32 (NumPy's would be float64), as
    ``+`` gives; a boolean with a number is the number's kind, as PyTorch's."""
    i32 = sg.tensor(np.array([7, -7], np.int32))
    assert (i32 // 2).backend_dtype_name() == "int32" and (i32 % 2).tolist() == [1, 1]
    assert (sg.tensor(np.array([7.0], np.float32)) % 2).backend_dtype_name() == "float32"
    assert (i32 // 2.0).backend_dtype_name() == (i32 + 2.0).backend_dtype_name() == "float32"
    mask = sg.tensor([True, False])
    assert (mask // 2).tolist() == [0, 0] and (mask % 2).tolist() == [1, 0]
    assert (5 // sg.tensor([1, 2])).tolist() == [5, 2]


def test_idioms_of_pytorch_code(backend: str) -> None:
    idx = sg.arange(12)
    assert (idx // 4).tolist() == [0] * 4 + [1] * 4 + [2] * 4
    assert (idx % 4).tolist() == [0, 1, 2, 3] * 3
    assert ((idx // 4) * 4 + idx % 4).tolist() == list(range(12))
    assert idx.floor_divide(5).tolist() == sg.floor_divide(idx, 5).tolist() == [i // 5 for i in range(12)]
    assert idx.remainder(-5).tolist() == [i % -5 for i in range(12)]


@pytest.mark.parametrize(("name", "op"), OPS)
def test_numpy_arrays_on_the_left_go_to_the_same_op(name: str, op: Any, numpy_backend: str) -> None:
    _check(op(INTS, sg.tensor(DIVISORS)), op(INTS, DIVISORS))
    grads = sg.Gradients()
    x = sg.tensor(FLOAT_DIVISORS).trace(grads)
    out = op(FLOATS, x)
    assert isinstance(out, sg.Tensor) and out.traced


@pytest.mark.parametrize(("name", "op"), OPS)
def test_two_booleans_are_refused_as_pytorch_does(name: str, op: Any, backend: str) -> None:
    mask = sg.tensor([True, False])
    for left, right in ((mask, mask), (mask, True), (False, mask)):
        with pytest.raises(sg.DTypeError, match="not defined for two booleans, as in PyTorch"):
            op(left, right)
    if torch is not None:
        with pytest.raises(NotImplementedError):
            op(torch.tensor([True]), torch.tensor([True]))


@pytest.mark.parametrize(("name", "op"), OPS)
def test_an_integer_division_by_zero_raises(name: str, op: Any, backend: str) -> None:
    """PyTorch raises (RuntimeError: ZeroDivisionError); NumPy would give 0 and a warning."""
    ints = sg.tensor(DIVISORS)
    with_zero = sg.tensor(np.array([[3, 0, 1, 2]], np.int64))
    for left, right in ((ints, with_zero), (ints, 0), (7, with_zero), (ints, False), (ints > 0, with_zero)):
        with pytest.raises(sg.DTypeError, match="integer division by zero") as error:
            op(left, right)
        assert "astype('float32')" in str(error.value)
    if torch is not None:
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            op(torch.tensor([1]), 0)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's divide by zero
@pytest.mark.parametrize(("name", "op"), OPS)
def test_a_float_division_by_zero_gives_inf_and_nan_as_pytorch(name: str, op: Any, numpy_backend: str) -> None:
    values = np.array([-3.0, 0.0, 2.5])
    found = op(sg.tensor(values), 0.0).numpy()
    np.testing.assert_array_equal(found, op(values, 0.0))
    if torch is not None:
        np.testing.assert_array_equal(found, op(torch.tensor(values), 0.0).numpy())
    np.testing.assert_array_equal(op(sg.tensor(DIVISORS), sg.tensor(np.zeros(4))).numpy(), op(DIVISORS, np.zeros(4)))


# --------------------------------------------------------------------------- gradients
A = np.array([[3.5, -2.25, 7.1, -0.4], [1.3, -5.6, 0.45, 2.2], [-8.3, 4.4, -1.1, 6.05]])  # a / b off integers
B = np.array([2.0, 1.5, -0.7, -1.9])


def test_remainder_gradients_are_one_and_minus_the_floor(backend: str) -> None:
    grads = sg.Gradients()
    a, b = sg.tensor(A).trace(grads), sg.tensor(B).trace(grads)
    (a % b).sum().backward()
    np.testing.assert_array_equal(grads[a].numpy(), np.ones_like(A))
    np.testing.assert_allclose(grads[b].numpy(), -np.floor(A / B).sum(axis=0))


def test_floor_divide_gradients_are_zero(backend: str) -> None:
    grads = sg.Gradients()
    a, b = sg.tensor(A).trace(grads), sg.tensor(B).trace(grads)
    (a // b * 3.0 + a).sum().backward()
    np.testing.assert_array_equal(grads[a].numpy(), np.ones_like(A))
    np.testing.assert_array_equal(grads[b].numpy(), np.zeros_like(B))


@pytest.mark.parametrize(
    "fn",
    [
        lambda a, b: a % b,
        lambda a, b: a // b,
        lambda a, b: (a % 0.9) * (2.3 % b),
        lambda a, b: (a // 0.9) + (2.3 // b) * a,
        lambda a, b: sg.remainder(b, a),
    ],
    ids=["mod", "floordiv", "mod numbers", "floordiv numbers", "mod reversed"],
)
def test_gradients_match_finite_differences(fn: Any, backend: str) -> None:
    assert_gradients_match(fn, [A, B])


def _full(b: Any, value: float) -> Any:
    return torch.full_like(b, value)  # PyTorch's Scalar % Tensor and Scalar // Tensor have no backward


@needs_torch
@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (lambda a, b: a % b, lambda a, b: torch.remainder(a, b)),
        (lambda a, b: b % a, lambda a, b: b % a),
        (lambda a, b: a // b, lambda a, b: torch.div(a, b, rounding_mode="floor")),
        (lambda a, b: (a % 1.3) + (4.0 % b), lambda a, b: (a % 1.3) + (_full(b, 4.0) % b)),
        (
            lambda a, b: (a // 1.3) * (4.0 // b) + a,
            lambda a, b: (
                torch.div(a, 1.3, rounding_mode="floor") * torch.div(_full(b, 4.0), b, rounding_mode="floor") + a
            ),
        ),
    ],
    ids=["mod", "mod reversed", "floordiv", "mod numbers", "floordiv numbers"],
)
def test_gradients_as_pytorch(ours: Any, theirs: Any) -> None:
    grads = sg.Gradients()
    a, b = sg.tensor(A).trace(grads), sg.tensor(B).trace(grads)
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (A, B))
    out, t_out = ours(a, b), theirs(ta, tb)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-12)
    weights = RNG.standard_normal(A.shape)
    (out * sg.tensor(weights)).sum().backward()
    (t_out * torch.tensor(weights)).sum().backward()
    for mine, theirs_ in ((a, ta), (b, tb)):
        expected = theirs_.grad.numpy() if theirs_.grad is not None else np.zeros(theirs_.shape)
        found = grads[mine].numpy() if mine in grads else np.zeros(mine.shape)
        np.testing.assert_allclose(found, expected, rtol=1e-12, atol=1e-12)


def test_a_compiled_step_checks_the_divisor_at_every_replay(numpy_backend: str) -> None:
    """Recorded with a divisor free of zeros and replayed with one holding a zero, a compiled
    step raises eager's DTypeError (NumPy's replay would give 0 silently)."""

    def step(idx: Any, n: Any) -> Any:
        return (idx // n + idx % n).sum()

    compiled = sg.compile(step)
    idx = sg.tensor(np.arange(6, dtype=np.int64))
    good, bad = sg.tensor(np.array([1, 2, 3, 4, 5, 6])), sg.tensor(np.array([1, 2, 0, 4, 5, 6]))
    assert compiled(idx, good).item() == step(idx, good).item()
    with pytest.raises(sg.DTypeError) as eager:
        step(idx, bad)
    with pytest.raises(sg.DTypeError) as replayed:
        compiled(idx, bad)
    assert str(replayed.value) == str(eager.value)
    assert compiled(idx, good).item() == step(idx, good).item()
    assert len(compiled.recordings) == 1 and compiled.recordings[0].replays == 2  # the zero found by a replay
