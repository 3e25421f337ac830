"""``~``, ``&``, ``|`` and ``^`` as PyTorch's: logical on boolean masks (``~causal``,
``pad & causal``), bitwise on integers, refused on floats; untraced, broadcasting, with a
Python bool or int on either side. Compared with NumPy and, where installed, PyTorch."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import shapegrad as sg

try:
    import torch
except ImportError:  # the PyTorch comparisons skip without it
    torch = None  # type: ignore[assignment]

BINARY: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("and", operator.and_),
    ("or", operator.or_),
    ("xor", operator.xor),
]
RNG = np.random.default_rng(0)
A = RNG.random((2, 3, 4)) > 0.5
B = RNG.random((3, 4)) > 0.5
COLUMN = RNG.random((3, 1)) > 0.5
INTS = RNG.integers(-50, 50, (3, 4)).astype(np.int64)
OTHER_INTS = RNG.integers(-50, 50, (4,)).astype(np.int64)


def _check(found: Any, expected: np.ndarray[Any, Any]) -> None:
    assert isinstance(found, sg.Tensor) and not found.traced
    assert found.backend_dtype_name() == str(expected.dtype)
    np.testing.assert_array_equal(found.numpy(), expected)


@pytest.mark.parametrize(("name", "op"), BINARY)
@pytest.mark.parametrize(("left", "right"), [(A, B), (B, A), (B, COLUMN), (COLUMN, A), (B, B)])
def test_masks_combine_logically_with_broadcasting(
    name: str, op: Callable[[Any, Any], Any], left: Any, right: Any, backend: str
) -> None:
    _check(op(sg.tensor(left), sg.tensor(right)), op(left, right))


@pytest.mark.parametrize(("name", "op"), BINARY)
@pytest.mark.parametrize("number", [True, False])
def test_a_python_bool_on_either_side(name: str, op: Callable[[Any, Any], Any], number: bool, backend: str) -> None:
    mask = sg.tensor(B)
    _check(op(mask, number), op(B, number))
    _check(op(number, mask), op(number, B))


def test_invert_is_logical_not_of_a_mask(backend: str) -> None:
    _check(~sg.tensor(A), ~A)
    _check(~sg.tensor(A), np.logical_not(A))
    _check(sg.bitwise_not(sg.tensor(B)), ~B)


def test_the_function_and_method_forms_are_the_operators(numpy_backend: str) -> None:
    a, b = sg.tensor(A), sg.tensor(B)
    _check(sg.bitwise_and(a, b), A & B)
    _check(a.bitwise_or(b), A | B)
    _check(b.bitwise_xor(a), B ^ A)
    _check(b.bitwise_not(), ~B)
    _check(sg.bitwise_and(True, b), True & B)


@pytest.mark.parametrize(("name", "op"), BINARY)
def test_integers_are_combined_bitwise(name: str, op: Callable[[Any, Any], Any], backend: str) -> None:
    a, b = sg.tensor(INTS), sg.tensor(OTHER_INTS)
    _check(op(a, b), op(INTS, OTHER_INTS))
    _check(op(a, 6), op(INTS, 6))
    _check(op(6, a), op(6, INTS))
    # a boolean with integers is integers (PyTorch's promotion), on any backend
    _check(op(sg.tensor(B), a), op(B.astype(np.int64), INTS))
    _check(op(a, sg.tensor(B)), op(INTS, B.astype(np.int64)))
    _check(op(sg.tensor(B), 1), op(B.astype(np.int64), 1))
    _check(op(a, True), op(INTS, 1))


def test_invert_of_integers_is_bitwise_not(backend: str) -> None:
    _check(~sg.tensor(INTS), ~INTS)
    small = np.array([0, 1, 200], dtype=np.uint8)
    _check(~sg.tensor(small), ~small)


@pytest.mark.parametrize(
    ("call", "operator_name", "fix"),
    [
        (lambda x: ~x, "~", "sg.logical_not(x)"),
        (lambda x: x & sg.tensor(B), "&", "sg.logical_and(a, b)"),
        (lambda x: sg.tensor(B) | x, "|", "sg.logical_or(a, b)"),
        (lambda x: x ^ True, "^", "sg.logical_xor(a, b)"),
    ],
)
def test_floats_are_refused_naming_the_dtype_and_the_fixes(
    call: Callable[[Any], Any], operator_name: str, fix: str, backend: str
) -> None:
    x = sg.tensor(np.ones((3, 4), dtype=np.float32))
    with pytest.raises(sg.DTypeError) as info:
        call(x)
    message = str(info.value)
    assert message.startswith(operator_name), message
    assert "float32" in message and "(3, 4)" in message and "x > 0" in message and fix in message, message


def test_a_python_float_is_refused(numpy_backend: str) -> None:
    with pytest.raises(sg.DTypeError, match=r"the number 1\.5"):
        sg.tensor(B) & 1.5
    with pytest.raises(sg.DTypeError, match=r"the number 0\.5"):
        0.5 | sg.tensor(B)


def test_shapes_that_do_not_broadcast_are_a_shape_error(numpy_backend: str) -> None:
    with pytest.raises(sg.ShapeError, match="do not broadcast"):
        sg.tensor(B) & sg.ones(5, dtype="bool")


def test_masks_of_traced_tensors_are_untraced_and_mask_a_traced_tensor(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor(np.linspace(-1.0, 1.0, 12).reshape(3, 4)).trace(grads)
    inside = (x > -0.5) & (x < 0.5)
    assert not inside.traced and not (~inside).traced and not (x > 0).__xor__(True).traced
    y = x.masked_fill(~inside, 0.0).sum()
    y.backward()
    np.testing.assert_array_equal(grads[x].numpy(), inside.numpy().astype(np.float64))


def test_causal_masking_as_written_in_pytorch(numpy_backend: str) -> None:
    causal = sg.tril(sg.ones(4, 4, dtype="bool"))
    scores = sg.tensor(RNG.standard_normal((2, 4, 4)))
    masked = scores.masked_fill(~causal, float("-inf")).numpy()
    expected = np.where(np.tril(np.ones((4, 4), dtype=bool)), scores.numpy(), -np.inf)
    np.testing.assert_array_equal(masked, expected)


def test_numpy_arrays_on_the_left_give_tensors(numpy_backend: str) -> None:
    found = B & sg.tensor(B)  # NumPy hands the operator to the tensor (__array_ufunc__)
    assert isinstance(found, sg.Tensor)
    _check(found, B & B)
    _check(sg.tensor(B) ^ A, B ^ A)


def test_truthiness_is_unchanged(numpy_backend: str) -> None:
    # ``not x`` and ``and``/``or`` still ask __bool__ (one element only); ``~`` is element-wise.
    one = sg.tensor([True])
    assert (not one) is False and (~one).tolist() == [False]
    with pytest.raises(sg.ShapeError, match="ambiguous"):
        bool(sg.tensor(B))


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_results_and_dtypes_match_pytorch(numpy_backend: str) -> None:
    assert torch is not None
    ta, tb, ti = torch.from_numpy(A), torch.from_numpy(B), torch.from_numpy(INTS)
    sa, sb, si = sg.tensor(A), sg.tensor(B), sg.tensor(INTS)
    pairs = [
        (~sa, ~ta),
        (sa & sb, ta & tb),
        (sb | sa, tb | ta),
        (sa ^ True, ta ^ True),
        (False | sb, False | tb),
        (~si, ~ti),
        (si & 12, ti & 12),
        (sb | si, tb | ti),
        (sb ^ 1, tb ^ 1),
    ]
    for ours, theirs in pairs:
        assert ours.backend_dtype_name() == str(theirs.dtype).removeprefix("torch."), (ours, theirs)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(NotImplementedError):
        torch.ones(2) & torch.ones(2)  # PyTorch refuses floats too
    with pytest.raises(TypeError):
        ~torch.ones(2)


def test_any_and_all_methods_take_an_axis_as_pytorch_s_dim(backend: str) -> None:
    """``sel.any(axis=-1)`` (PyTorch's ``sel.any(dim=-1)``) raised TypeError: the methods took
    no axis. Along an axis they give sg.any/sg.all's untraced booleans; without one, a bool."""
    values = np.array([[True, False, False], [False, False, False]])
    selected = sg.tensor(values)
    assert selected.any(axis=-1).tolist() == [True, False]
    assert selected.all(0).tolist() == [False, False, False]
    assert selected.any(0, keepdims=True).shape == (1, 3)
    assert selected.any() is True and selected.all() is False
    traced = sg.tensor([[1.0, -1.0], [2.0, 3.0]]).trace(sg.Gradients())
    assert (traced > 0).all(axis=1).tolist() == [False, True]
