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
