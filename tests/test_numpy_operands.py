"""NumPy values as operands (either side of an operator), NumPy ufuncs and conversion of traced
tensors, and what copies and what shares memory.

Each test once showed a wrong answer with no error (issue #12); it fails on the code before
its fix. Behaviour that can differ by backend runs on every backend (``backend`` fixture).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import nn


def _grad_list(grads: Any, x: Any) -> list[Any]:
    return grads[x].tolist()


@pytest.mark.parametrize(
    "left",
    [np.float64(0.1), np.sqrt(4.0), np.float32(3.0), np.int64(2)],
    ids=["float64", "sqrt", "float32", "int64"],
)
def test_numpy_scalar_on_the_left_keeps_the_tape(backend: str, left: Any) -> None:
    grads = sg.Gradients()
    t = sg.tensor([1.0, 2.0]).trace(grads)
    product = left * t
    assert isinstance(product, sg.Tensor) and product.traced
    assert product.backend_dtype_name() == "float32"  # a NumPy scalar does not promote, as in PyTorch
    (product.sum() + (t * 0.0).sum()).backward()
    assert np.allclose(_grad_list(grads, t), [float(left)] * 2)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (lambda a, t: a * t, [3.0, 4.0]),
        (lambda a, t: a + t, [1.0, 1.0]),
        (lambda a, t: a - t, [-1.0, -1.0]),
        (lambda a, t: a / t, [-3.0, -1.0]),
        (lambda a, t: a**t, [3.0 * np.log(3.0), 16.0 * np.log(4.0)]),
    ],
    ids=["mul", "add", "sub", "div", "pow"],
)
def test_numpy_array_on_the_left_gives_a_traced_tensor(backend: str, expression: Any, expected: Any) -> None:
    grads = sg.Gradients()
    t = sg.tensor([1.0, 2.0]).trace(grads)
    result = expression(np.array([3.0, 4.0], dtype=np.float32), t)
    assert isinstance(result, sg.Tensor) and result.traced
    result.sum().backward()
    assert np.allclose(_grad_list(grads, t), expected, rtol=1e-5)


def test_weight_decay_term_written_with_numpy_counts(numpy_backend: str) -> None:
    grads = sg.Gradients()
    w = sg.tensor([1.0, -2.0]).trace(grads)
    decay = np.float64(0.1) * (w * w).sum()
    (decay + w.sum()).backward()
    assert np.allclose(_grad_list(grads, w), [1.0 + 0.2, 1.0 - 0.4])


def test_numpy_comparisons_and_matmul_with_a_tensor_on_the_right(numpy_backend: str) -> None:
    t = sg.tensor([1.0, 5.0])
    assert (np.array([2.0, 2.0]) < t).tolist() == [False, True]
    grads = sg.Gradients()
    v = sg.tensor([1.0, 2.0]).trace(grads)
    (np.ones((2, 2), dtype=np.float32) @ v).sum().backward()
    assert _grad_list(grads, v) == [2.0, 2.0]


def test_numpy_ufunc_on_a_traced_tensor_says_to_use_the_shapegrad_op(numpy_backend: str) -> None:
    t = sg.tensor([1.0]).trace(sg.Gradients())
    with pytest.raises(sg.TapeError, match=r"numpy.exp on a traced tensor would drop its tape.*sg.exp"):
        np.exp(t)
    assert np.exp(sg.tensor([0.0])).tolist() == [1.0]  # untraced: plain NumPy, as before


def test_implicit_conversion_of_a_traced_tensor_is_refused(numpy_backend: str) -> None:
    t = sg.tensor([1.0, 2.0]).trace(sg.Gradients())
    with pytest.raises(sg.TapeError, match=r"implicit conversion of a traced tensor.*t.detach\(\).numpy\(\)"):
        np.asarray(t)
    assert t.detach().numpy().tolist() == [1.0, 2.0]


def test_tensor_copies_a_numpy_buffer(backend: str) -> None:
    buffer = np.array([2.0], dtype=np.float32)
    grads = sg.Gradients()
    t = sg.tensor([1.0]).trace(grads)
    loss = (t * sg.tensor(buffer)).sum()
    buffer[0] = 20.0  # a data loader refilling its buffer after the forward pass
    loss.backward()
    assert _grad_list(grads, t) == [2.0]


def test_tensor_of_a_tensor_is_a_copy(backend: str) -> None:
    source = sg.tensor([1.0, 2.0])
    copy = sg.tensor(source)
    layer, other = nn.Linear(2, 2), nn.Linear(2, 2)
    other_weight = sg.tensor(layer.weight)
    source.data[...] = 5.0 if backend != "strict" else source.data
    assert copy.tolist() == [1.0, 2.0]
    assert other_weight.data is not layer.weight.data
    del other


def test_asarray_and_from_numpy_share_memory_on_numpy(numpy_backend: str) -> None:
    buffer = np.zeros(3, dtype=np.float32)
    shared, from_numpy = sg.asarray(buffer), sg.from_numpy(buffer)
    buffer[1] = 7.0
    assert shared.tolist() == [0.0, 7.0, 0.0] == from_numpy.tolist()
    with pytest.raises(sg.DTypeError, match="from_numpy expects a numpy.ndarray"):
        sg.from_numpy([1.0])  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType] -- the mistake under test


def test_np_asarray_of_a_parameter_is_read_only(numpy_backend: str) -> None:
    layer = nn.Linear(2, 2)
    view = np.asarray(layer.weight)
    with pytest.raises(ValueError, match="read-only"):
        view[0, 0] = 100.0
    assert np.asarray(layer.weight, copy=True).flags.writeable
