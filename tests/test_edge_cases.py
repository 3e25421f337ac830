"""Edge cases that must give PyTorch's answer or a named error: empty axes and batches, negative
index tensors, complex data, out-of-range indices and labels on every backend, a plain tensor
assigned over a parameter, a kept loss releasing its step.

Each test once showed a wrong answer with no error (issue #12); it fails on the code before
its fix. Behaviour that can differ by backend runs on every backend (``backend`` fixture).
"""

from __future__ import annotations

import gc
import weakref
from typing import Any, Literal as L

import numpy as np
import pytest
from support.tiny_models import Decoder, Encoder

import shapegrad as sg
from shapegrad import nn


def _grad_list(grads: Any, x: Any) -> list[Any]:
    return grads[x].tolist()


def test_a_plain_tensor_assigned_over_a_parameter_is_refused(numpy_backend: str) -> None:
    model = Decoder()
    with pytest.raises(sg.ParameterError, match=r"Linear.*weight is a parameter.*sg.nn.parameter"):
        model.fc.weight = sg.tensor(np.zeros((4, 2), dtype=np.float32))
    with pytest.raises(TypeError):  # PyTorch's exception type, for code that catches it
        model.fc.weight = model.fc.weight.to("strict")
    model.fc.weight = nn.parameter(sg.zeros(4, 2))  # the way that keeps it trained
    assert "fc.weight" in dict(model.named_parameters())


def test_a_kept_loss_releases_the_step_s_activations_when_the_tape_ends(numpy_backend: str) -> None:
    model = Encoder()
    grads = model.alloc_grads()
    history: list[Any] = []
    refs: list[Any] = []
    for _ in range(3):
        grads.zero()
        hidden = model(sg.ones(64, 3).trace(grads))
        refs.append(weakref.ref(hidden._data))
        loss = (hidden * hidden).sum()
        del hidden
        loss.backward()
        history.append(loss)
    grads.zero()
    gc.collect()
    assert all(ref() is None for ref in refs)
    assert [round(loss.item(), 3) for loss in history] == [round(history[0].item(), 3)] * 3


def test_flatten_of_an_empty_batch_keeps_its_features(backend: str) -> None:
    assert nn.Flatten()(sg.zeros(0, 2, 3, 3)).shape == (0, 18)


def test_softmax_family_over_an_empty_axis_is_pytorch_s(backend: str) -> None:
    empty = sg.zeros(2, 0)
    assert sg.softmax(empty).shape == (2, 0)
    assert sg.log_softmax(empty).shape == (2, 0)
    assert sg.logsumexp(empty, axis=-1).tolist() == [-np.inf, -np.inf]


def test_attention_over_an_empty_sequence(backend: str) -> None:
    attention = nn.MultiHeadAttention[L[8]](num_heads=2, generator=sg.Generator(0))
    assert attention(sg.zeros(2, 0, 8)).shape == (2, 0, 8)
    assert attention(sg.zeros(2, 3, 8), sg.zeros(2, 0, 8), sg.zeros(2, 0, 8)).shape == (2, 3, 8)


def test_kl_div_of_an_empty_batch_is_nan(backend: str) -> None:
    assert np.isnan(sg.losses.kl_div(sg.zeros(0, 3), sg.zeros(0, 3)).item())


def test_negative_index_tensors_count_from_the_end(backend: str) -> None:
    grads = sg.Gradients()
    v = sg.tensor([1.0, 2.0, 3.0]).trace(grads)
    picked = v[sg.tensor([-1, 0, -1])]
    assert picked.tolist() == [3.0, 1.0, 3.0]
    picked.sum().backward()
    assert _grad_list(grads, v) == [1.0, 0.0, 2.0]


@pytest.mark.parametrize(
    ("fast", "general"),
    [
        ((1, slice(None, 2)), (np.int64(1), slice(None, np.int64(2)))),
        ((slice(None), None, -1), (slice(None), None, np.int64(-1))),
        ((Ellipsis, slice(1, None, 2)), (Ellipsis, slice(np.int64(1), None, np.int64(2)))),
        (2, np.int64(2)),
    ],
    ids=["int-and-slice", "new-axis", "ellipsis", "int"],
)
def test_plain_int_and_slice_indexes_pick_and_route_gradients_as_the_general_path(
    numpy_backend: str, fast: Any, general: Any
) -> None:
    """Python ints and slices take a short path with no checks; NumPy integers (NumPy's own
    index kind) the general one: the same values, the same gradients, and an int out of
    range the same error."""
    values = np.arange(12.0).reshape(3, 4)
    results = []
    for index in (fast, general):
        grads = sg.Gradients()
        x = sg.tensor(values).trace(grads)
        picked = x[index]
        (picked * picked).sum().backward()
        results.append((picked.tolist(), _grad_list(grads, x)))
    assert results[0] == results[1]
    with pytest.raises(sg.ShapeError, match=r"index \(3, 0\) does not fit shape \(3, 4\)"):
        sg.tensor(values)[3, 0]


def test_complex_data_is_refused_as_list_and_as_array(numpy_backend: str) -> None:
    for data in ([1j, 2.0], np.array([1j, 2.0])):
        with pytest.raises(sg.DTypeError, match="real numeric"):
            sg.tensor(data)


@pytest.mark.parametrize(
    "index",
    [lambda: sg.tensor([5]), lambda: (slice(None), sg.tensor([7])), lambda: (Ellipsis, sg.tensor([-9]))],
    ids=["rows", "columns", "ellipsis"],
)
def test_out_of_range_index_arrays_raise_on_every_backend(backend: str, index: Any) -> None:
    x = sg.zeros(3, 4)
    with pytest.raises(sg.ShapeError, match="out of range|must lie in"):
        x[index()].tolist()  # on a device the check is read back with the values


def test_out_of_range_labels_fail_before_backward_on_every_backend(backend: str) -> None:
    grads = sg.Gradients()
    logits = sg.zeros(2, 3).trace(grads)
    with pytest.raises(sg.ShapeError, match=r"labels must lie in \[0, 3\)"):
        sg.losses.cross_entropy(logits, sg.tensor([0, 3])).backward()


def _torch() -> Any:
    return pytest.importorskip(
        "torch", reason="PyTorch is the oracle here: pip install -e '.[dev,torch]' (torch==2.13.0)"
    )


@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "var", "std", "logsumexp", "norm", "prod"])
def test_reductions_of_a_rank_0_tensor_along_axis_0_or_minus_1(
    numpy_backend: str, name: str, axis: int, keepdims: bool
) -> None:
    """PyTorch reduces a rank-0 tensor along dim 0 or -1 to itself (the one value); NumPy has no
    axis to reduce, and the raw AxisError or IndexError escaped (sum, max, var, ...)."""
    torch = _torch()
    grads = sg.Gradients()
    x = sg.tensor(-2.5).trace(grads)
    ours = {"norm": lambda: sg.norm(x, 2, axis, keepdims), "prod": lambda: sg.prod(x, axis, keepdims)}.get(
        name, lambda: getattr(sg, name)(x, axis=axis, keepdims=keepdims)
    )()
    t = torch.tensor(-2.5, dtype=torch.float64, requires_grad=True)
    theirs = {
        "max": lambda: torch.amax(t, axis, keepdims),
        "min": lambda: torch.amin(t, axis, keepdims),
        "var": lambda: torch.var(t, axis, correction=0, keepdim=keepdims),
        "std": lambda: torch.std(t, axis, correction=0, keepdim=keepdims),
        "norm": lambda: torch.linalg.vector_norm(t, 2, axis, keepdims),
    }.get(name, lambda: getattr(torch, name)(t, axis, keepdims))()
    assert ours.shape == () and ours.item() == pytest.approx(theirs.item())
    (ours * 3.0).backward()
    (theirs * 3.0).backward()
    assert grads[x].item() == pytest.approx(t.grad.item())


@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scans_of_a_rank_0_tensor_stay_rank_0(numpy_backend: str, name: str, axis: int) -> None:
    """NumPy's cumulative sum of a rank-0 array has shape (1,): the result grew an axis."""
    grads = sg.Gradients()
    x = sg.tensor(-2.5).trace(grads)
    out = getattr(sg, name)(x, axis)
    assert out.shape == () and out.item() == -2.5
    (out * 3.0).backward()
    assert grads[x].item() == 3.0


def test_argsort_of_a_rank_0_tensor_is_rank_0(numpy_backend: str) -> None:
    assert sg.argsort(sg.tensor(1.5)).shape == ()
    assert sg.argsort(sg.tensor(1.5), axis=0).tolist() == 0


def test_softmax_over_an_empty_float32_axis_has_an_empty_gradient(numpy_backend: str) -> None:
    """The numba softmax backward kernel reshaped the empty gradient into rows of length 0."""
    grads = sg.Gradients()
    x = sg.zeros(3, 0, dtype="float32").trace(grads)
    sg.softmax(x).sum().backward()
    assert grads[x].shape == (3, 0) and grads[x].dtype == np.float32


def test_a_negative_number_to_a_tensor_power_has_gradient_0_in_the_exponent(backend: str) -> None:
    """(-2.0) ** x: d/dx = (-2)^x · log(-2) is not real; a tensor base below 0 gives 0 (pow's
    rule), a number base raised ValueError (math.log) in the backward pass."""
    grads = sg.Gradients()
    x = sg.tensor([1.0, 2.0, 3.0]).trace(grads)
    ((-2.0) ** x).sum().backward()
    assert grads[x].tolist() == [0.0, 0.0, 0.0]
    grads = sg.Gradients()
    x = sg.tensor([2.0, 4.0]).trace(grads)
    sg.pow(-np.inf, x).sum().backward()
    assert grads[x].tolist() == [0.0, 0.0]


def test_relu_of_an_integer_tensor_stays_integer(backend: str) -> None:
    x = sg.tensor([[-3, 0, 4]], dtype="int32")
    out = sg.relu(x)
    assert out.dtype == x.dtype and out.tolist() == [[0, 0, 4]]


def test_hardtanh_has_gradient_0_at_its_bounds_as_pytorch(backend: str) -> None:
    """F.hardtanh's gradient is 0 at min_val and max_val (clamp's is 1 there)."""
    torch = _torch()
    values = [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0]
    grads = sg.Gradients()
    x = sg.tensor(values).trace(grads)
    sg.hardtanh(x).sum().backward()
    t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    torch.nn.functional.hardtanh(t).sum().backward()
    assert grads[x].tolist() == t.grad.tolist()


_MASK5 = np.array([True, False, False, True, True])
_MIXED_INDEXES = {
    "int-slice-list": (1, slice(None), [0, 4]),
    "int-slice-one-item-list": (0, slice(None), [1]),
    "int-list-slice-list": (1, [0, 2], slice(None), [0, 3]),
    "slice-int-slice-list": (slice(None), 2, slice(None), [1, 2]),
    "list-slice-negative-int": ([0, 2], slice(None), -2),
    "list-int-list": ([0, 2], 1, [0, 1]),
    "slice-list-int-list": (slice(None), [0, 1], 1, [0, 1]),
    "ellipsis-int-list": (Ellipsis, 1, [0, 2]),
    "negative-int-ellipsis-list": (-1, Ellipsis, [0, 2]),
    "int-slice-2d-list": (-1, slice(None), [[0, 1], [2, 3]]),
    "int-none-slice-list": (1, None, slice(None), [0, 4]),
    "int-slice-mask": (1, slice(None), _MASK5),
    "int-slice-mask-int": (2, slice(1, 3), _MASK5, 0),
    "0d-tensor-slice-list": ("0-d", slice(None), [0, 4]),
}


def _index_for(index: tuple[Any, ...], library: Any) -> tuple[Any, ...]:
    """The index with its arrays as ``library``'s tensors (``"0-d"``: the 0-d integer tensor 1,
    which PyTorch applies as an integer)."""
    made = []
    for entry in index:
        if isinstance(entry, str):
            entry = library.tensor(np.array(1))
        elif isinstance(entry, np.ndarray):
            entry = library.tensor(entry)
        made.append(entry)
    return tuple(made)


@pytest.mark.parametrize("index", list(_MIXED_INDEXES.values()), ids=list(_MIXED_INDEXES))
def test_integers_mixed_with_advanced_indices_pick_and_route_gradients_as_pytorch(
    backend: str, index: tuple[Any, ...]
) -> None:
    """NumPy counts an integer as an advanced index, so ``x[1, :, [0, 4]]`` of a (3, 4, 5, 6)
    array was (2, 4, 6), the list's axis moved first; PyTorch applies the integer first, as
    basic indexing, and gives (4, 2, 6). Values and gradients are PyTorch's."""
    torch = _torch()
    values = np.random.default_rng(5).standard_normal((3, 4, 5, 6))
    t_x = torch.tensor(values, requires_grad=True)
    expected = t_x[_index_for(index, torch)]
    weights = np.random.default_rng(6).standard_normal(tuple(expected.shape))
    (expected * torch.tensor(weights)).sum().backward()
    grads = sg.Gradients()
    x = sg.tensor(values).trace(grads)
    picked = x[_index_for(index, sg)]
    assert picked.shape == tuple(expected.shape)
    np.testing.assert_allclose(picked.numpy(), expected.detach().numpy())
    (picked * sg.tensor(weights)).sum().backward()
    np.testing.assert_allclose(grads[x].numpy(), t_x.grad.numpy())


@pytest.mark.parametrize("index", list(_MIXED_INDEXES.values()), ids=list(_MIXED_INDEXES))
def test_writes_through_integers_mixed_with_advanced_indices_land_as_pytorch_s(
    backend: str, index: tuple[Any, ...]
) -> None:
    """``x[index] = v``, ``x.at[index].set(v)`` and ``.add(v)`` with the index rules of
    reading (PyTorch's): ``v`` broadcasts against PyTorch's shape of ``x[index]`` and lands
    where PyTorch writes it; the gradient of ``v`` comes back in that shape."""
    torch = _torch()
    rng = np.random.default_rng(7)
    values = rng.standard_normal((3, 4, 5, 6))
    shape = tuple(torch.tensor(values)[_index_for(index, torch)].shape)
    v = rng.standard_normal(shape)
    row = rng.standard_normal(shape[-1:])  # broadcast along all but the last axis
    for written in (v, row):
        expected = torch.tensor(values)
        expected[_index_for(index, torch)] = torch.tensor(written)
        x = sg.tensor(values)
        x[_index_for(index, sg)] = sg.tensor(written)
        np.testing.assert_allclose(x.numpy(), expected.numpy())
    weights = rng.standard_normal(values.shape)
    for add in (False, True):
        t_v = torch.tensor(v, requires_grad=True)
        expected = torch.tensor(values).clone()
        if add:
            expected[_index_for(index, torch)] += t_v
        else:
            expected[_index_for(index, torch)] = t_v
        (expected * torch.tensor(weights)).sum().backward()
        grads = sg.Gradients()
        traced_v = sg.tensor(v).trace(grads)
        at = sg.tensor(values).at[_index_for(index, sg)]
        updated = at.add(traced_v) if add else at.set(traced_v)
        np.testing.assert_allclose(updated.numpy(), expected.detach().numpy())
        (updated * sg.tensor(weights)).sum().backward()
        np.testing.assert_allclose(grads[traced_v].numpy(), t_v.grad.numpy())
