"""The recording fast paths of issue #26 (the fixed cost of a recorded op): each gives what the
general path gives, errors included, and is the path taken."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import shapegrad as sg
from shapegrad._autodiff import record_node
from shapegrad._backend import bind_rule, get_backend
from shapegrad.ops.activations import tanh_backward
from shapegrad.ops.elementwise import mul_backward


def _grad_of_pick(index: object) -> tuple[list[list[float]], object]:
    grads = sg.Gradients()
    x = sg.tensor(np.arange(12, dtype=np.float32).reshape(3, 4)).trace(grads)
    picked = x[index]
    node = picked._node  # pyright: ignore[reportPrivateUsage] -- the path the op took
    assert node is not None
    (picked * picked).sum().backward()
    return grads[x].tolist(), node.saved[4]


def test_a_basic_index_saves_no_scatter_and_gives_the_general_path_s_gradient(numpy_backend: str) -> None:
    fast, scatter = _grad_of_pick((slice(0, 2), 1))
    general, general_scatter = _grad_of_pick((slice(0, 2), np.int64(1)))  # a NumPy int: the general path
    assert scatter is None  # the fast path: written back by assignment, no bound method kept per op
    assert general_scatter is not None
    assert fast == general


def test_an_inline_bound_rule_is_bind_rule_s(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor(np.ones((2, 3), dtype=np.float32)).trace(grads)
    backend = get_backend(numpy_backend)
    for y, rule in ((x.tanh(), tanh_backward), (x * x, mul_backward)):
        node = y._node  # pyright: ignore[reportPrivateUsage] -- the rule the node holds
        assert node is not None
        assert node.rule is bind_rule(backend, rule, np.dtype(np.float32))


def test_every_watched_input_of_a_node_is_checked(numpy_backend: str) -> None:
    """The write counters a node watches are one flat tuple: a write into the second of them
    (input 1 of ``mul``), not only the first, is detected and named."""
    grads = sg.Gradients()
    a_buf, b_buf = sg.tensor([1.0, 2.0]), sg.tensor([3.0, 4.0])
    loss = (a_buf.trace(grads) * b_buf.trace(grads)).sum()
    b_buf[0] = 0.0
    with pytest.raises(
        sg.TapeError, match=r"the op 'mul' saved .*its input 1, shape \(2,\).*version 0 when recorded, 1 now"
    ):
        loss.backward()


def test_recording_keeps_few_objects_for_the_garbage_collector(numpy_backend: str) -> None:
    """Every object a recorded node keeps that the cyclic collector tracks is traversed by
    each collection it lives through, and promoted to the oldest generation (whose full
    collections, a whole heap each, cost in proportion to what is promoted) when it lives
    long enough: a node keeps itself, its parents and one tuple of watched counters, not
    one object per watched input."""
    grads = sg.Gradients()
    x = sg.tensor(np.ones((4, 4), dtype=np.float32)).trace(grads)
    a, b = sg.tensor(np.ones((4, 4), dtype=np.float32)), sg.tensor(np.ones((4, 4), dtype=np.float32))
    ops = 400
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        y = x
        for _ in range(ops // 4):
            y = (y * a + b).tanh() * 0.9
        gc.collect()  # tuples of untracked values (shapes, saved arrays) are untracked here
        kept = (len(gc.get_objects()) - before) / ops
    finally:
        gc.enable()
    assert kept <= 2.9  # 3.25 here before the watched counters were one flat tuple per node (2.75 after)
    y.sum().backward()
    assert grads[x].shape == (4, 4)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "bool"])
@pytest.mark.parametrize("axis", [None, 0, (0, 2), -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_and_mean_give_numpy_s_values_and_types_bit_for_bit(
    numpy_backend: str, dtype: str, axis: int | tuple[int, ...] | None, keepdims: bool
) -> None:
    """sum and mean call NumPy's reduction directly (not np.sum / np.mean's Python layers):
    the same values, dtypes and result types (a NumPy scalar for a whole reduction)."""
    data = (np.random.default_rng(0).standard_normal((3, 4, 5)) * 7).astype(dtype)
    x = sg.tensor(data)
    got, expected = x.sum(axis=axis, keepdims=keepdims)._data, np.sum(data, axis=axis, keepdims=keepdims)  # pyright: ignore[reportPrivateUsage] -- the raw result
    assert type(got) is type(expected) and got.dtype == expected.dtype
    assert np.array_equal(got, expected)
    if dtype.startswith("float"):
        mean, expected = x.mean(axis=axis, keepdims=keepdims)._data, np.mean(data, axis=axis, keepdims=keepdims)  # pyright: ignore[reportPrivateUsage] -- the raw result
        assert type(mean) is type(expected) and mean.dtype == expected.dtype
        assert mean.tobytes() == np.asarray(expected).tobytes()


def test_a_float32_mean_over_more_values_than_float32_counts_exactly_is_numpy_s(numpy_backend: str) -> None:
    """np.mean divides a float32 sum by its count as a float64: past 2**24 values a count
    divided as float32 is rounded (2**24 + 1 to 2**24) and the mean changes in its last bits."""
    data = np.random.default_rng(0).random((2, 2**24 + 1), dtype=np.float32)
    x = sg.tensor(data)
    for axis in (None, 1):
        got, expected = x.mean(axis=axis)._data, np.mean(data, axis=axis)  # pyright: ignore[reportPrivateUsage] -- the raw result
        assert type(got) is type(expected) and got.dtype == expected.dtype
        assert got.tobytes() == np.asarray(expected).tobytes()


@pytest.mark.parametrize("reduce", ["sum", "mean", "mean_scaled"])
def test_a_loss_s_gradient_is_spread_as_a_read_only_view_of_the_input_s_shape(numpy_backend: str, reduce: str) -> None:
    """A whole reduction's gradient (one number, a 0-d array or a NumPy scalar) is viewed over
    the input's shape without NumPy's broadcast_to: the same values, read-only as that is."""
    from shapegrad.ops.reductions import mean_backward, sum_backward

    xp = get_backend(numpy_backend).xp
    for g in (np.array(2.0, dtype=np.float32), np.float32(2.0), np.array([[2.0]], dtype=np.float32)):
        if reduce == "sum":
            (spread,) = sum_backward(xp, g, (3, 4), (0, 1), g.ndim == 2)
            expected = np.broadcast_to(np.float32(2.0), (3, 4))
        else:
            (spread,) = mean_backward(xp, g, (3, 4), (0, 1), g.ndim == 2, 12 if reduce == "mean" else 3)
            expected = np.broadcast_to(g.reshape(()) / (12 if reduce == "mean" else 3), (3, 4))
        assert spread.shape == (3, 4) and spread.dtype == np.float32 and not spread.flags.writeable
        assert np.array_equal(spread, expected)
    grads = sg.Gradients()
    x = sg.tensor(np.ones((2, 3), dtype=np.float32)).trace(grads)
    (x.mean() * 3).backward()
    np.testing.assert_array_equal(grads[x].numpy(), np.full((2, 3), 0.5, dtype=np.float32))


def _watched(node: object) -> list[tuple[object, int, int]]:
    versions = getattr(node, "versions", None) or ()
    return [(versions[i], versions[i + 1], versions[i + 2]) for i in range(0, len(versions), 3)]


def _general_node(result: sg.Tensor, inputs: tuple[object, ...], reads: tuple[bool, ...] | None) -> object:
    """The node the general path (record_node) builds for ``result``'s op, as that op recorded it."""
    node: object = result._node  # pyright: ignore[reportPrivateUsage] -- the recorded node
    twin = sg.Tensor(result.numpy())
    twin._data = result._data  # pyright: ignore[reportPrivateUsage] -- the same array, so reads of it are the same
    return record_node(
        twin._data,  # pyright: ignore[reportPrivateUsage]
        getattr(node, "rule"),
        inputs,  # pyright: ignore[reportArgumentType] -- tensors and the number's placeholder
        getattr(node, "saved"),
        np,
        reads,
        twin,  # pyright: ignore[reportArgumentType]
    )


@pytest.mark.parametrize(
    "case",
    [
        "traced * traced",
        "traced * number",
        "number - traced",
        "traced * untraced tensor",
        "traced / traced",
        "two tapes",
        "traced * frozen parameter",
        "traced * trainable parameter",
        "untraced * parameter",
        "tanh",
        "exp",
        "relu",
        "tanh of a parameter",
        "integer ids * number",
        "integer ids + traced",
    ],
)
def test_the_one_and_two_input_paths_build_record_node_s_node(numpy_backend: str, case: str) -> None:
    """Every binary op records through record_binary_node and every one-input op through
    record_unary_node, each written out for its input count: the node either builds has
    record_node's parents, tape, watched write counters (which inputs, at which values, at
    which positions, the result's included), shape, dtype and kind."""
    from shapegrad.ops._toolkit import NUMBER, READS  # the binary path's tables

    grads, other = sg.Gradients(), sg.Gradients()
    x = sg.tensor(np.array([[1.0, -2.0], [3.0, 0.5]], dtype=np.float32)).trace(grads)
    y = sg.tensor(np.array([[0.5, 4.0], [-1.0, 2.0]], dtype=np.float32)).trace(grads)
    plain = sg.tensor(np.array([[2.0, 3.0], [4.0, 5.0]], dtype=np.float32))
    lin = sg.nn.Linear(2, 2, generator=sg.Generator(0))
    weight = lin.weight
    ids = sg.tensor(np.array([[1, 2], [3, 4]], dtype=np.int64)).trace(grads)
    if case == "traced * frozen parameter":
        lin.freeze()
    ops = {
        "traced * traced": lambda: (x * y, (x, y)),
        "traced * number": lambda: (x * 3.0, (x, NUMBER)),
        "number - traced": lambda: (3.0 - x, (NUMBER, x)),
        "traced * untraced tensor": lambda: (x * plain, (x, plain)),
        "traced / traced": lambda: (x / y, (x, y)),
        "two tapes": lambda: (x * sg.tensor(np.ones((2, 2), dtype=np.float32)).trace(other), None),
        "traced * frozen parameter": lambda: (x * weight, (x, weight)),
        "traced * trainable parameter": lambda: (x * weight, (x, weight)),
        "untraced * parameter": lambda: (plain * weight, (plain, weight)),
        "tanh": lambda: (x.tanh(), (x,)),
        "exp": lambda: (x.exp(), (x,)),
        "relu": lambda: (sg.relu(x), (x,)),
        "tanh of a parameter": lambda: (weight.tanh(), (weight,)),
        "integer ids * number": lambda: (ids * 2, (ids, NUMBER)),  # carries the tape, wants no gradient
        "integer ids + traced": lambda: (ids + x, (ids, x)),
    }
    result, inputs = ops[case]()
    fast: object = result._node  # pyright: ignore[reportPrivateUsage] -- the recorded node
    assert fast is not None
    if inputs is None:  # two tapes met: merged, both Gradients on the one tape
        tape = getattr(fast, "tape").root()
        assert grads in tape.sinks and other in tape.sinks
        return
    reads = None
    if len(inputs) == 2 and getattr(fast, "saved"):  # (a tape carrier's node saves nothing)
        table = READS.get(getattr(fast, "rule"))
        need = getattr(fast, "saved")[3]
        index = need[0] + 2 * need[1] + 4 * (inputs[0] is not NUMBER) + 8 * (inputs[1] is not NUMBER)
        reads = None if table is None else table[index]
    general = _general_node(result, inputs, reads)
    assert type(fast) is type(general)
    assert getattr(fast, "parents") == getattr(general, "parents")
    assert getattr(fast, "tape") is getattr(general, "tape")
    assert (getattr(fast, "shape"), getattr(fast, "dtype"), getattr(fast, "wants")) == (
        getattr(general, "shape"),
        getattr(general, "dtype"),
        getattr(general, "wants"),
    )
    fast_watched, general_watched = _watched(fast), _watched(general)
    assert [(v, p) for _, v, p in fast_watched] == [(v, p) for _, v, p in general_watched]
    # the same owners, except the result's counter (each result its own)
    assert [o for o, _, p in fast_watched if p >= 0] == [o for o, _, p in general_watched if p >= 0]
