"""In-place arithmetic (``x += y``, ``p -= lr * g``) and assignment of values that carry a
gradient, as PyTorch's: a write into memory where the operands are untraced, a new traced
tensor where one is traced, and a clear error where the two would differ."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import nn

torch = pytest.importorskip("torch")


def _linear() -> Any:
    return nn.Linear(3, 2, generator=sg.Generator(0))


def test_a_manual_update_loop_under_no_grad_changes_the_weights_as_pytorch_s() -> None:
    model = _linear()
    twin = torch.nn.Linear(3, 2)
    with torch.no_grad():
        twin.weight.copy_(torch.from_numpy(model.weight.numpy().T.copy()))
        twin.bias.copy_(torch.from_numpy(model.bias.numpy()))
    x_np = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    for _ in range(3):
        grads = model.alloc_grads()
        (model(sg.tensor(x_np).trace(grads)) ** 2).sum().backward()
        with sg.no_grad():
            for p in model.parameters():
                p -= 0.1 * grads[p]
        twin.zero_grad()
        (twin(torch.from_numpy(x_np)) ** 2).sum().backward()
        with torch.no_grad():
            for p in twin.parameters():
                p -= 0.1 * p.grad
    np.testing.assert_allclose(model.weight.numpy(), twin.weight.detach().numpy().T, rtol=1e-5)
    np.testing.assert_allclose(model.bias.numpy(), twin.bias.detach().numpy(), rtol=1e-5)


def test_every_name_and_view_of_an_untraced_tensor_sees_the_write() -> None:
    y = sg.zeros(2, 3)
    same = y
    row = y[0]
    row += 1.0  # through a view into y
    y *= 2.0
    assert y.tolist() == [[2.0, 2.0, 2.0], [0.0, 0.0, 0.0]]
    assert same is y and row.tolist() == [2.0, 2.0, 2.0]
    col = sg.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    col[:, 1] += 10.0  # x[index] += v: read, add, write back
    col[sg.tensor(np.array([0, 1])), 0] -= 1.0  # an advanced index: a copy, added to, written back
    assert col.tolist() == [[-1.0, 11.0, 2.0], [2.0, 14.0, 5.0]]


@pytest.mark.parametrize(
    ("name", "op", "x", "y"),
    [
        ("+", operator.iadd, [1.0, 2.0], [0.5, 0.5]),
        ("-", operator.isub, [1.0, 2.0], [0.5, 0.5]),
        ("*", operator.imul, [1.0, 2.0], [3.0, 3.0]),
        ("/", operator.itruediv, [1.0, 2.0], [4.0, 4.0]),
        ("//", operator.ifloordiv, [7, -7], [2, 2]),
        ("%", operator.imod, [7, -7], [3, 3]),
        ("**", operator.ipow, [2.0, 3.0], [2.0, 2.0]),
        ("&", operator.iand, [True, True], [True, False]),
        ("|", operator.ior, [False, True], [True, False]),
        ("^", operator.ixor, [True, True], [True, False]),
    ],
)
def test_each_in_place_operator_writes_what_pytorch_s_writes(name: str, op: Any, x: list[Any], y: list[Any]) -> None:
    ours = sg.tensor(np.array(x))
    alias = ours
    result = op(ours, sg.tensor(np.array(y)))
    theirs = torch.tensor(x)
    op(theirs, torch.tensor(y))
    assert result is alias, name
    assert alias.tolist() == theirs.tolist(), name


def test_a_matrix_product_in_place_keeps_the_square_matrix() -> None:
    m = sg.tensor(np.eye(2, dtype=np.float32))
    alias = m
    m @= sg.tensor(np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32))
    assert alias.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_a_write_into_a_tensor_an_op_saved_is_seen_by_the_backward_pass() -> None:
    grads = sg.Gradients()
    scale = sg.tensor(np.full(3, 2.0, dtype=np.float32))
    loss = (sg.ones(3).trace(grads) * scale).sum()  # mul saves scale for x's gradient
    scale += 1.0
    with pytest.raises(sg.TapeError, match="written in place"):
        loss.backward()


def test_a_parameter_updated_in_place_outside_no_grad_is_refused_and_unchanged() -> None:
    model = _linear()
    before = model.weight.numpy().copy()
    weight = model.weight
    with pytest.raises(sg.TapeError, match=r"sg\.no_grad\(\)"):
        weight -= 0.1 * sg.ones(3, 2)
    np.testing.assert_array_equal(model.weight.numpy(), before)


def test_a_traced_operand_makes_a_new_tensor_with_pytorch_s_gradient() -> None:
    x_np = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    grads = sg.Gradients()
    x = sg.tensor(x_np).trace(grads, keep_grad=True)
    out = x * x
    kept = out
    out += x  # a residual added in place, as torchvision's BasicBlock writes it
    total = sg.zeros(())
    total += out.sum()  # a loss accumulated into an untraced zero
    total.backward()
    tx = torch.tensor(x_np, requires_grad=True)
    t_out = tx * tx
    t_out += tx
    t_out.sum().backward()
    assert out is not kept and out.traced and total.traced
    np.testing.assert_allclose(grads[x].numpy(), tx.grad.numpy(), rtol=1e-6)


def test_a_traced_operand_into_a_view_is_refused_where_pytorch_would_write_through(numpy_backend: str) -> None:
    # NumPy's (and CuPy's) arrays say which memory they view; the emulated CuPy's do not.
    grads = sg.Gradients()
    y = sg.ones(2, 3).trace(grads) * 2.0
    row = y[0]
    with pytest.raises(sg.TapeError, match="view of another tensor"):
        row += 1.0


def test_a_result_of_another_shape_or_kind_is_refused_as_pytorch_refuses_it() -> None:
    x = sg.zeros(3)
    with pytest.raises(sg.ShapeError, match=r"broadcasts it to \(2, 3\)"):
        x += sg.ones(2, 3)
    ids = sg.tensor(np.array([1, 2, 3]))
    with pytest.raises(sg.DTypeError, match="int64"):
        ids += 0.5
    assert x.tolist() == [0.0, 0.0, 0.0] and ids.tolist() == [1, 2, 3]
    halves = sg.zeros(2, dtype="float32")
    halves += sg.tensor(np.array([0.25, 0.5]))  # float64 into float32: same kind, as PyTorch
    assert halves.dtype == np.float32 and halves.tolist() == [0.25, 0.5]


def test_a_write_into_read_only_memory_is_a_shapegrad_error(numpy_backend: str) -> None:
    # Device memory is always writable: the read-only arrays are NumPy's.
    frozen = np.ones(3, dtype=np.float32)
    frozen.flags.writeable = False
    x = sg.asarray(frozen)
    with pytest.raises(sg.ShapegradError, match="read-only"):
        x += 1.0
    wide = sg.zeros(3).broadcast_to(2, 3)
    with pytest.raises(sg.ShapegradError, match="read-only"):
        wide[0] = 1.0


def test_assigning_a_value_that_carries_a_gradient_is_refused_not_cut() -> None:
    grads = sg.Gradients()
    x = sg.ones(3).trace(grads)
    buffer = sg.zeros(2, 3)
    with pytest.raises(sg.TapeError, match=r"x\.at\[index\]\.set"):
        buffer[0] = x * 2.0
    model = _linear()
    with pytest.raises(sg.TapeError, match="gradient would stop"):
        buffer[...] = model.weight.T  # computed from a parameter outside no_grad
    assert buffer.tolist() == [[0.0] * 3] * 2
    buffer[0] = (x * 2.0).detach()  # the numbers alone, said so
    with sg.no_grad():
        buffer[1] = model.weight.T[0]
    model.weight[...] = model.weight * 0.5  # a parameter written: an update, no path wanted
    assert buffer.tolist()[0] == [2.0, 2.0, 2.0]
