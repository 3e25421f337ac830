"""Arguments that are integers by meaning (axes, sizes, counts, offsets, shifts) refuse a
float and a 0-d tensor with a DTypeError naming the argument, as PyTorch refuses them.

A float was truncated (``x.reshape(2, 12.5)`` gave shape ``(2, 12)``, ``sg.zeros(2.5, 2)``
gave ``(2, 2)``, ``sg.nn.Linear(4.5, 2)`` a 4-input layer) or accepted as it was
(``sg.roll(x, 1.5)``, ``sg.one_hot(labels, 2.5)``), and an axis that was a float or a tensor
failed with a builtin error from deep inside (``unsupported operand type(s) for %``, ``'float'
object is not iterable``). A NumPy integer is an integer: it gives what the int gives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import shapegrad as sg

X = sg.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
COLUMN = sg.tensor(np.arange(6, dtype=np.float32).reshape(2, 3, 1))
LABELS = sg.tensor(np.array([0, 2, 1]))
INDICES = sg.tensor(np.array([3, 0, 1, 2, 0, 1]).reshape(2, 3, 1))
PROBS = sg.tensor(np.array([0.2, 0.3, 0.5]))
nn = sg.nn


def _gen() -> Any:
    return sg.Generator(0)


# (id, the call with the argument under test as v, the int it is given normally, what the
# error names). Each call is run with that int, a NumPy integer of it, a float of it (2.0),
# 1.5, and a 0-d integer tensor of it.
OPS: list[tuple[str, Callable[[Any], Any], int, str]] = [
    # reductions (normalize_axes) and one-axis ops (checked_axis)
    ("sum", lambda v: X.sum(axis=v), 1, "sum expects an integer axis"),
    ("sum-tuple", lambda v: X.sum(axis=(0, v)), 1, "sum expects an integer axis"),
    ("mean", lambda v: X.mean(axis=v), 1, "mean expects an integer axis"),
    ("max", lambda v: X.max(axis=v), 1, "max expects an integer axis"),
    ("logsumexp", lambda v: sg.logsumexp(X, axis=v), 1, "logsumexp expects an integer axis"),
    ("cumsum", lambda v: sg.cumsum(X, v), 1, "cumsum expects an integer axis"),
    ("argmax", lambda v: X.argmax(v), 1, "argmax expects an integer axis"),
    ("argmin", lambda v: sg.argmin(X, v), 1, "argmin expects an integer axis"),
    ("softmax", lambda v: sg.softmax(X, axis=v), 1, "softmax expects an integer axis"),
    ("log_softmax", lambda v: sg.log_softmax(X, axis=v), 1, "log_softmax expects an integer axis"),
    ("sort", lambda v: sg.sort(X, v), 1, "sort expects an integer axis"),
    # movement
    ("permute", lambda v: X.permute(0, v, 1), 2, "permute expects an integer axis"),
    ("swapaxes", lambda v: sg.swapaxes(X, v, 0), 1, "swapaxes expects an integer axis1"),
    ("expand_dims", lambda v: sg.expand_dims(X, v), 1, "expand_dims expects an integer axis"),
    ("squeeze", lambda v: sg.squeeze(COLUMN, v), 2, "squeeze expects an integer axis"),
    ("concat", lambda v: sg.concat([X, X], axis=v), 1, "concat expects an integer axis"),
    ("stack", lambda v: sg.stack([X, X], axis=v), 1, "stack expects an integer axis"),
    ("flip", lambda v: sg.flip(X, v), 1, "flip expects an integer axis"),
    ("roll-shift", lambda v: sg.roll(X, v, axis=-1), 1, "roll expects an integer shift"),
    ("roll-axis", lambda v: sg.roll(X, 1, axis=v), 1, "roll expects an integer axis"),
    ("narrow-start", lambda v: sg.narrow(X, 2, v, 2), 1, "narrow expects an integer start"),
    ("narrow-length", lambda v: sg.narrow(X, 2, 1, v), 2, "narrow expects an integer length"),
    ("narrow-axis", lambda v: sg.narrow(X, v, 1, 1), 1, "narrow expects an integer axis"),
    ("split-size", lambda v: sg.split(X, v, axis=-1), 2, "split expects an integer piece size"),
    ("split-sizes", lambda v: sg.split(X, [v, 1], axis=-1), 3, "split expects an integer size"),
    ("chunk", lambda v: sg.chunk(X, v, axis=-1), 2, "chunk expects an integer number of chunks"),
    ("unflatten", lambda v: sg.unflatten(X, 2, (v, 2)), 2, "unflatten expects an integer size"),
    ("repeat", lambda v: X.repeat(v, 1, 1), 2, "repeat expects an integer count"),
    ("repeat-tuple", lambda v: sg.repeat(X, (1, v, 1)), 2, "repeat expects an integer count"),
    ("tile", lambda v: sg.tile(X, (v,)), 2, "tile expects an integer count"),
    ("reshape", lambda v: X.reshape(2, v), 12, "reshape expects an integer size"),
    ("reshape-tuple", lambda v: sg.reshape(X, (v, 12)), 2, "reshape expects an integer size"),
    ("reshape-one", lambda v: sg.reshape(X, (v,)), 24, "reshape expects an integer size"),
    ("reshape-lone", lambda v: X.reshape(v), 24, "reshape expects an integer size"),
    ("broadcast_to", lambda v: sg.broadcast_to(COLUMN, (2, 3, v)), 4, "broadcast_to expects an integer size"),
    ("pad", lambda v: sg.pad(X, ((0, 0), (0, 0), (v, 1))), 1, "pad expects an integer width"),
    ("pad-flat", lambda v: sg.pad(X, (v, 0)), 1, "pad expects an integer width"),
    # creation
    ("zeros", lambda v: sg.zeros(v, 2), 2, "zeros expects an integer size"),
    ("ones-tuple", lambda v: sg.ones((2, v)), 2, "ones expects an integer size"),
    ("full", lambda v: sg.full((v, 2), 3.0), 2, "full expects an integer size"),
    ("randn", lambda v: sg.randn(v, 2, generator=_gen()), 2, "randn expects an integer size"),
    ("rand", lambda v: sg.rand(2, v, generator=_gen()), 2, "rand expects an integer size"),
    ("randint", lambda v: sg.randint(0, 5, (v,), generator=_gen()), 3, "randint expects an integer size"),
    ("eye", lambda v: sg.eye(v), 3, "eye expects an integer size n"),
    ("eye-m", lambda v: sg.eye(2, v), 3, "eye expects an integer size m"),
    ("linspace", lambda v: sg.linspace(0.0, 1.0, v), 5, "linspace expects an integer num"),
    ("randperm", lambda v: sg.randperm(v, generator=_gen()), 4, "randperm expects an integer size n"),
    (
        "multinomial",
        lambda v: sg.multinomial(PROBS, v, replacement=True, generator=_gen()),
        2,
        "multinomial expects an integer num_samples",
    ),
    # indexing and order
    ("one_hot", lambda v: sg.one_hot(LABELS, v), 3, "one_hot expects an integer num_classes"),
    ("topk", lambda v: sg.topk(X, v), 2, "topk expects an integer k"),
    ("topk-axis", lambda v: sg.topk(X, 2, v), 1, "topk expects an integer axis"),
    ("diagonal", lambda v: sg.diagonal(X, v), 1, "diagonal expects an integer offset"),
    ("tril", lambda v: sg.tril(X, v), 1, "tril expects an integer diagonal offset k"),
    ("triu", lambda v: sg.triu(X, v), 1, "triu expects an integer diagonal offset k"),
    (
        "take_along_axis",
        lambda v: sg.take_along_axis(X, INDICES, axis=v),
        2,
        "take_along_axis expects an integer axis",
    ),
]

# Layers: each is compared by its parameters (drawn from one seed) and its sizes.
LAYERS: list[tuple[str, Callable[[Any], Any], int, str]] = [
    ("Linear-in", lambda v: nn.Linear(v, 2, generator=_gen()), 4, "integer in_features"),
    ("Linear-out", lambda v: nn.Linear(4, v, generator=_gen()), 2, "integer out_features"),
    ("Embedding", lambda v: nn.Embedding(v, 3, generator=_gen()), 5, "integer num_embeddings"),
    ("Embedding-dim", lambda v: nn.Embedding(5, v, generator=_gen()), 3, "integer embedding_dim"),
    (
        "Conv2d-kernel",
        lambda v: nn.Conv2d(v, in_channels=2, out_channels=4, generator=_gen()),
        3,
        "Conv2d expects an integer kernel_size",
    ),
    (
        "Conv2d-kernel-pair",
        lambda v: nn.Conv2d((v, 3), in_channels=2, out_channels=4, generator=_gen()),
        3,
        "Conv2d expects an integer kernel_size",
    ),
    (
        "Conv2d-stride",
        lambda v: nn.Conv2d(3, stride=v, in_channels=2, out_channels=4, generator=_gen()),
        2,
        "Conv2d expects an integer stride",
    ),
    (
        "Conv2d-padding",
        lambda v: nn.Conv2d(3, padding=v, in_channels=2, out_channels=4, generator=_gen()),
        1,
        "Conv2d expects an integer padding",
    ),
    (
        "Conv2d-groups",
        lambda v: nn.Conv2d(3, groups=v, in_channels=2, out_channels=4, generator=_gen()),
        2,
        "Conv2d expects an integer groups",
    ),
    (
        "Conv2d-channels",
        lambda v: nn.Conv2d(3, in_channels=v, out_channels=4, generator=_gen()),
        2,
        "integer in_channels",
    ),
    (
        "Conv1d-kernel",
        lambda v: nn.Conv1d(v, in_channels=2, out_channels=4, generator=_gen()),
        3,
        "Conv1d expects an integer kernel_size",
    ),
    (
        "ConvTranspose2d-stride",
        lambda v: nn.ConvTranspose2d(3, stride=v, in_channels=2, out_channels=4, generator=_gen()),
        2,
        "ConvTranspose2d expects an integer stride",
    ),
    ("MaxPool2d", lambda v: nn.MaxPool2d(v), 2, "MaxPool2d expects an integer kernel_size"),
    ("AvgPool2d-stride", lambda v: nn.AvgPool2d(2, stride=v), 1, "AvgPool2d expects an integer stride"),
    ("AvgPool2d-padding", lambda v: nn.AvgPool2d(3, padding=v), 1, "AvgPool2d expects an integer padding"),
    ("LayerNorm", lambda v: nn.LayerNorm(v), 4, "integer normalized_size"),
    ("BatchNorm1d", lambda v: nn.BatchNorm1d(v), 4, "integer num_features"),
    ("BatchNorm2d", lambda v: nn.BatchNorm2d(v), 4, "integer num_features"),
    ("GroupNorm-groups", lambda v: nn.GroupNorm(v, 4), 2, "GroupNorm expects an integer num_groups"),
    ("GroupNorm-channels", lambda v: nn.GroupNorm(2, v), 4, "GroupNorm expects an integer num_channels"),
    (
        "InstanceNorm2d",
        lambda v: nn.InstanceNorm2d(v, affine=True),
        4,
        "InstanceNorm2d expects an integer num_features",
    ),
    ("Upsample-size", lambda v: nn.Upsample(size=v), 4, "Upsample expects an integer size"),
    ("ReflectionPad2d", lambda v: nn.ReflectionPad2d(v), 1, "ReflectionPad2d expects an integer padding"),
    ("RNN-input", lambda v: nn.RNN(v, 5, generator=_gen()), 3, "integer input_size"),
    ("GRU-hidden", lambda v: nn.GRU(3, v, generator=_gen()), 5, "integer hidden_size"),
    ("LSTM-layers", lambda v: nn.LSTM(3, 5, num_layers=v, generator=_gen()), 2, "integer num_layers"),
    (
        "MultiHeadAttention-heads",
        lambda v: nn.MultiHeadAttention(v, 8, generator=_gen()),
        2,
        "MultiHeadAttention expects an integer num_heads",
    ),
    (
        "MultiHeadAttention-dim",
        lambda v: nn.MultiHeadAttention(2, v, generator=_gen()),
        8,
        "integer embed_dim",
    ),
]

CASES = OPS + LAYERS
IDS = [case[0] for case in CASES]


def _summary(result: Any) -> Any:
    """What a result holds, comparable with ==: values of tensors, parameters of layers."""
    if isinstance(result, sg.Tensor):
        array = result.numpy()
        return (array.shape, str(array.dtype), array.tolist())
    if isinstance(result, (tuple, list)):
        return [_summary(r) for r in result]
    if isinstance(result, nn.Module):
        sizes = {k: v for k, v in vars(result).items() if isinstance(v, (int, tuple)) and not k.startswith("_")}
        return sizes, [(name, _summary(p)) for name, p in result.named_parameters()]
    return result


@pytest.mark.parametrize(("name", "call", "good", "what"), CASES, ids=IDS)
@pytest.mark.parametrize("bad", [1.5, "integral float"], ids=["1.5", "integral-float"])
def test_a_float_is_refused_by_name(name: str, call: Callable[[Any], Any], good: int, what: str, bad: Any) -> None:
    value = float(good) if bad == "integral float" else bad
    with pytest.raises(sg.DTypeError, match=what) as caught:
        call(value)
    assert f"float {value!r}" in str(caught.value)


@pytest.mark.parametrize(("name", "call", "good", "what"), CASES, ids=IDS)
def test_a_0d_tensor_is_refused_by_name(name: str, call: Callable[[Any], Any], good: int, what: str) -> None:
    with pytest.raises(sg.DTypeError, match=what) as caught:
        call(sg.tensor(np.array(good)))
    assert "a tensor of shape ()" in str(caught.value)


@pytest.mark.parametrize(("name", "call", "good", "what"), CASES, ids=IDS)
@pytest.mark.parametrize("integer_type", [np.int64, np.int32], ids=["int64", "int32"])
def test_a_numpy_integer_gives_what_the_int_gives(
    name: str, call: Callable[[Any], Any], good: int, what: str, integer_type: Any
) -> None:
    assert _summary(call(integer_type(good))) == _summary(call(good))


def test_the_int_path_is_unchanged() -> None:
    """A few results checked against NumPy, and sg.Dim sizes kept working."""

    class Batch(sg.Dim): ...

    x = X.numpy()
    assert X.sum(axis=1).numpy().tolist() == x.sum(axis=1).tolist()
    assert X.sum(axis=(0, -1)).numpy().tolist() == x.sum(axis=(0, 2)).tolist()
    assert X.reshape(2, 12).shape == (2, 12)
    assert X.reshape((4, -1)).shape == (4, 6)
    assert sg.roll(X, 1, axis=-1).numpy().tolist() == np.roll(x, 1, axis=-1).tolist()
    assert sg.zeros(Batch(3), 2).shape == (3, 2)
    assert sg.ones((Batch(2), 4)).shape == (2, 4)
    assert sg.broadcast_to(COLUMN, (Batch(2), 3, 5)).shape == (2, 3, 5)
    assert sg.nn.Linear(Batch(4), 2, generator=_gen()).in_features == 4
    assert sg.diagonal(X, 1).numpy().tolist() == np.diagonal(x, 1, -2, -1).tolist()
    assert [p.shape for p in sg.split(X, 3, axis=-1)] == [(2, 3, 3), (2, 3, 1)]
    assert X.argmax(True).numpy().tolist() == x.argmax(1).tolist()  # a bool is an int, as in Python


def test_an_axis_out_of_range_is_refused_by_permute_and_take_along_axis() -> None:
    """Both wrapped an axis modulo the rank: permute((5, 0, 1)) was permute((2, 0, 1))."""
    with pytest.raises(sg.ShapeError, match="not an ordering"):
        X.permute(5, 0, 1)
    with pytest.raises(sg.ShapeError, match="out of range"):
        sg.take_along_axis(X, INDICES, axis=5)
