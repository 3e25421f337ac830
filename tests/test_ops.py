"""Every row of the op table (``op_table.py``): forward against NumPy and gradient against
central differences in float64, over shapes that include broadcasting and size-1 dims, on
every backend; and every public op has a row."""

from __future__ import annotations

import numpy as np
import pytest
from support.gradcheck import assert_gradients_match
from support.op_table import NOT_OPS, OPS, OpInfo, draw

import shapegrad as sg
from shapegrad._opspec import NOT_OPS as INTERNAL, OPS as SPEC_OPS


@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
def test_forward_matches_numpy(op: OpInfo, backend: str) -> None:
    arrays = draw(op, 1)
    found = op.fn(*[sg.tensor(a) for a in arrays])
    expected = op.ref(*arrays)
    assert found.shape == np.shape(expected)
    np.testing.assert_allclose(np.asarray(found.numpy(), dtype=np.float64), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("op", [op for op in OPS if op.differentiable], ids=lambda op: op.name)
def test_gradient_matches_finite_differences(op: OpInfo, backend: str) -> None:
    arrays = draw(op, 2)
    if op.name == "astype":  # float64 -> float32 -> float64: finite differences need float64 throughout
        pytest.skip("the float32 round trip makes central differences meaningless; its rule is the identity")
    assert_gradients_match(op.fn, arrays)


@pytest.mark.parametrize(
    "op", [o for o in OPS if len(o.shapes) == 1 and o.domain == "any" and o.differentiable], ids=lambda o: o.name
)
def test_float32_is_kept(op: OpInfo, numpy_backend: str) -> None:
    x = sg.tensor(draw(op, 3)[0].astype(np.float32))
    assert op.fn(x).dtype == np.float32


def _public_ops() -> set[str]:
    """Every op of the op table (shapegrad/_opspec.py) that computes from tensors: creation
    ops and losses are checked in their own files (test_backends/test_sampling, test_losses)."""
    return {op.name for op in SPEC_OPS if op.kind not in ("creation", "sizes", "loss")}


def test_every_public_op_has_a_row_in_the_op_table() -> None:
    covered = {name for op in OPS for name in op.covers}
    missing = sorted(_public_ops() - covered - set(NOT_OPS))
    assert not missing, f"public ops without a row in tests/support/op_table.py: {missing}"
    stale = sorted((covered | set(NOT_OPS)) - _public_ops() - set(INTERNAL))  # internal ops may have rows too
    assert not stale, f"op table names that are no public op: {stale}"


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


def test_clone_is_a_copy_in_new_memory_both_ways(backend: str) -> None:
    x = sg.tensor([[1.0, 2.0], [3.0, 4.0]])
    copy = x.clone()
    assert copy.tolist() == x.tolist() and copy.shape == x.shape and copy.dtype == x.dtype
    copy[0, 0] = 9.0
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    x[1, 1] = 7.0
    assert copy.tolist() == [[9.0, 2.0], [3.0, 4.0]]
    view = x[0]
    row = sg.clone(view)  # of a view: the copy owns its memory, the view's base is untouched by it
    row += 1.0
    assert x.tolist() == [[1.0, 2.0], [3.0, 7.0]] and row.tolist() == [2.0, 3.0]
    ids = sg.tensor(np.array([1, 2], dtype=np.int64)).clone()
    assert ids.backend_dtype_name() == "int64"


def test_clone_keeps_the_tape_and_passes_the_gradient_through_as_pytorch_s(numpy_backend: str) -> None:
    torch = pytest.importorskip("torch")
    values = np.array([[1.0, -2.0], [3.0, 0.5]])
    grads = sg.Gradients()
    x = sg.tensor(values).trace(grads)
    copy = x.clone()
    assert copy.traced
    (copy * x.exp()).sum().backward()
    twin = torch.tensor(values, requires_grad=True)
    (twin.clone() * twin.exp()).sum().backward()
    assert twin.grad is not None
    np.testing.assert_allclose(grads[x].numpy(), twin.grad.numpy())
    assert not x.detach().clone().traced  # PyTorch's x.detach().clone(): an untraced copy
    layer = sg.nn.Linear(2, 2)
    model_grads = layer.alloc_grads()
    inputs = sg.tensor(values.astype(np.float32)).trace(model_grads)
    (inputs @ layer.weight.clone()).sum().backward()  # a parameter's copy: the gradient reaches it
    np.testing.assert_allclose(model_grads[layer.weight].numpy(), np.repeat(values.sum(0)[:, None], 2, axis=1))


def test_iterating_a_tensor_yields_its_rows(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]).trace(grads)
    rows = list(x)
    assert [r.tolist() for r in rows] == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    sg.backward(*[(r * float(i)).sum() for i, r in enumerate(rows)])
    assert grads[x].tolist() == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]


def test_the_readme_op_list_is_the_op_table_s() -> None:
    """Regenerate with ``python tests/support/op_table.py --write``."""
    from pathlib import Path

    from support.op_table import readme_op_list

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    assert readme_op_list() in readme, "README's op list is stale: python tests/support/op_table.py --write"


@pytest.mark.parametrize("values", [[2.0, 0.0, 3.0, 0.0, 5.0], [0.0, 2.0, 3.0], [2.0, 3.0, 0.0]], ids=str)
def test_product_gradients_at_exact_zeros(values: list[float], backend: str) -> None:
    """At a zero the gradient is the product of the others (PyTorch's values, by hand)."""
    grads = sg.Gradients()
    x = sg.tensor(values, dtype="float64").trace(grads)
    weights = sg.tensor([1.0, 2.0, 3.0, 4.0, 5.0][: len(values)], dtype="float64")
    (sg.cumprod(x, 0) * weights).sum().backward()
    expected = []
    for i in range(len(values)):
        total = 0.0
        for j in range(i, len(values)):
            others = 1.0
            for k in range(j + 1):
                others *= 1.0 if k == i else values[k]
            total += float(weights.tolist()[j]) * others
        expected.append(total)
    np.testing.assert_allclose(grads[x].numpy(), expected)
    grads = sg.Gradients()
    y = sg.tensor(values, dtype="float64").trace(grads)
    sg.prod(y).backward()
    np.testing.assert_allclose(
        grads[y].numpy(), [float(np.prod([v for k, v in enumerate(values) if k != i])) for i in range(len(values))]
    )


@pytest.mark.parametrize("dtype, tolerance", [("float32", 2e-7), ("float64", 1e-15)])
def test_the_reference_erf_is_accurate_in_each_dtype(dtype: str, tolerance: float) -> None:
    """The xp math behind erf (what runs without SciPy/cupyx): float32 uses a shorter series."""
    import math

    from shapegrad.ops.math import erf_values

    x = np.linspace(-6, 6, 4001).astype(dtype)
    found = erf_values(np, x).astype(np.float64)
    expected = np.array([math.erf(float(v)) for v in x])
    assert found.dtype == np.float64 and np.max(np.abs(found - expected)) <= tolerance


def test_the_numpy_float32_erf_kernel_matches_the_reference() -> None:
    """The NumPy backend's float32 "erf" kernel (a rational approximation, faster than SciPy's
    double-precision one) against math.erf and the reference xp math, tails included."""
    import math

    from shapegrad._backend import fused_kernel, get_backend
    from shapegrad.ops.math import erf_values

    x = np.linspace(-7, 7, 20001).astype(np.float32)
    kernel = fused_kernel(get_backend("numpy"), "erf", np.dtype(np.float32))
    assert kernel is not None
    found = kernel(x)
    assert found.dtype == np.float32
    expected = np.array([math.erf(float(v)) for v in x])
    assert np.max(np.abs(found.astype(np.float64) - expected)) <= 5e-7
    assert np.max(np.abs(found - erf_values(np, x))) <= 5e-7
    small = np.float32([1e-30, 1e-8, -1e-4])  # relative accuracy near 0, where erf(x) ≈ 2x/√π
    np.testing.assert_allclose(kernel(small), [2 / math.sqrt(math.pi) * float(v) for v in small], rtol=1e-6)
    exact = sg.gelu(sg.tensor(x), approximate="none").numpy()
    reference = x * 0.5 * (1 + erf_values(np, x / np.float32(math.sqrt(2.0))))
    np.testing.assert_allclose(exact, reference, atol=5e-7 * 7)


def test_masked_softmax_gives_masked_scores_no_gradient_even_in_a_fully_masked_row() -> None:
    """As where(mask, x, -1e9) then softmax: weight 0 where masked, uniform weights (not NaN)
    in a row with nothing allowed, and no gradient to any masked score."""
    grads = sg.Gradients()
    x = sg.tensor(np.arange(6, dtype=np.float32).reshape(2, 3)).trace(grads)
    mask = sg.tensor(np.array([[True, False, True], [False, False, False]]))
    y = sg.softmax(x, scale=2.0, mask=mask)
    np.testing.assert_allclose(y.numpy()[1], [1 / 3] * 3, rtol=1e-6)
    assert y.numpy()[0, 1] == 0.0
    (y * sg.tensor(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32))).sum().backward()
    g = grads[x].numpy()
    assert g[0, 1] == 0.0 and np.all(g[1] == 0.0) and g[0, 0] != 0.0
    with pytest.raises(sg.ShapeError, match="softmax mask"):
        sg.softmax(x, mask=sg.tensor(np.ones((2, 2), dtype=bool)))


def test_repeat_refuses_fewer_counts_than_axes_and_negative_counts_as_pytorch(backend: str) -> None:
    """issue #25: ``sg.repeat`` is PyTorch's ``Tensor.repeat``, whose counts cover every axis;
    ``sg.tile`` keeps NumPy's padding of short counts."""
    x = sg.ones(2, 3)
    with pytest.raises(sg.ShapeError, match=r"one non-negative count per axis of shape \(2, 3\).*found \(2,\)"):
        sg.repeat(x, 2)
    with pytest.raises(sg.ShapeError, match=r"found \(2, -1\)"):
        x.repeat(2, -1)
    assert sg.tile(x, (2,)).shape == (2, 6)
    assert sg.repeat(x, (2, 1, 1)).shape == x.repeat(2, 1, 1).shape == (2, 2, 3)


def test_einsum_trace_of_a_matrix_with_infinities_off_the_diagonal_is_finite(backend: str) -> None:
    """issue #25: a repeated letter picks the diagonal, as torch.einsum: values off it (a
    mask's -inf) neither reach the trace nor make its gradient NaN."""
    grads = sg.Gradients()
    a = sg.tensor(np.array([[1.0, -np.inf], [np.inf, 2.0]])).trace(grads)
    trace = sg.einsum("ii->", a)
    assert trace.item() == 3.0
    trace.backward()
    np.testing.assert_array_equal(grads[a].numpy(), np.eye(2))


def test_einsum_refuses_an_output_that_repeats_or_invents_a_letter(numpy_backend: str) -> None:
    """issue #25: the output names each input letter at most once (torch.einsum refuses too)."""
    for spec in ("i->ii", "i->j"):
        with pytest.raises(sg.ShapeError, match="output letter 'i' appears 2 times|output letter 'j' names no axis"):
            sg.einsum(spec, sg.ones(3))
