"""The caches on the untraced decoding path (issue #26): each gives what the general path
gives, raises what it raises, and is actually taken."""

from __future__ import annotations

from typing import Any, Literal as L

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor, _checking, _hooks
from shapegrad.nn import _attention
from shapegrad.ops import shape as shape_ops


class Batch(sg.Dim): ...


def test_a_causal_mask_is_built_once_and_equals_a_fresh_one(numpy_backend: str) -> None:
    _attention._causal_masks.clear()
    backend = sg.ones(1)._backend
    first = _attention.causal_mask_of(5, 7, backend)
    assert _attention.causal_mask_of(5, 7, backend) is first  # the cached tensor: taken
    fresh = _attention._build_causal_mask(5, 7, backend)
    np.testing.assert_array_equal(first.numpy(), fresh.numpy())
    np.testing.assert_array_equal(first.numpy(), np.tril(np.ones((5, 7), dtype=bool)))
    assert first._node is None and first._param is None  # untraced: nothing to record


def test_causal_attention_is_the_same_from_a_cached_mask(numpy_backend: str) -> None:
    attention = sg.nn.MultiHeadAttention[L[8]](2, generator=sg.Generator(0))
    x = sg.randn(2, 5, 8, generator=sg.Generator(1))
    _attention._causal_masks.clear()
    built = attention(x, causal=True).numpy()
    cached = attention(x, causal=True).numpy()
    np.testing.assert_array_equal(built, cached)
    user = sg.tensor(np.array([[True] * 5] * 4 + [[False, True, True, True, True]]))
    np.testing.assert_array_equal(
        attention(x, mask=user, causal=True).numpy(),
        attention(x, mask=sg.tensor(user.numpy() & np.tril(np.ones((5, 5), dtype=bool)))).numpy(),
    )


def test_a_causal_mask_is_built_afresh_while_a_step_is_recorded(
    numpy_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = sg.ones(1)._backend
    cached = _attention.causal_mask_of(3, 3, backend)
    monkeypatch.setattr(_hooks, "recorder", object())  # as sg.compile's recording sets it
    assert _attention.causal_mask_of(3, 3, backend) is not cached


def test_a_cast_that_passed_is_remembered_and_failures_still_raise(numpy_backend: str) -> None:
    target = Tensor[NoTape, Batch, L[4]]
    x = sg.ones(3, 4)
    _checking._casts_passed.clear()
    assert sg.cast(x, target) is x
    assert _checking._cast_key(x, target) in _checking._casts_passed  # the next cast: taken
    assert sg.cast(sg.zeros(3, 4), target).shape == (3, 4)
    # Another size, another tape, another rank: checked in full, the same errors as before.
    with pytest.raises(sg.ShapeError, match="cast"):
        sg.cast(sg.ones(3, 5), target)
    with pytest.raises(sg.ShapeError, match="cast"):
        sg.cast(sg.ones(3, 4, 1), target)
    with pytest.raises(sg.ShapeError, match="traced"):
        sg.cast(x, Tensor[OwnedTape[None], Batch, L[4]])
    with pytest.raises(sg.ShapeError, match="cast"):
        sg.cast(x.trace(sg.Gradients()), target)
    failed = {key for key in _checking._casts_passed if key[1][2] != (3, 4)}
    assert not failed  # a failure is never remembered


def test_a_cast_error_is_the_same_with_and_without_the_cache(numpy_backend: str) -> None:
    target = Tensor[NoTape, L[2], L[4]]
    _checking._casts_passed.clear()
    with pytest.raises(sg.ShapeError) as cold:
        sg.cast(sg.ones(3, 4), target)
    sg.cast(sg.ones(2, 4), target)
    with pytest.raises(sg.ShapeError) as warm:
        sg.cast(sg.ones(3, 4), target)
    assert str(cold.value) == str(warm.value)


@pytest.mark.parametrize("axes", [(0, 2, 1, 3), (-1, 0, 1, 2), (), ((1, 0, 3, 2),)])
def test_permute_from_the_cache_equals_the_general_path(numpy_backend: str, axes: Any) -> None:
    x = sg.tensor(np.arange(120.0, dtype=np.float32).reshape(2, 3, 4, 5))
    shape_ops._orders.clear()
    general = x.permute(*axes).numpy()
    if shape_ops._plain_ints(axes):
        assert (axes, 4) in shape_ops._orders  # the next permute: taken
    cached = x.permute(*axes).numpy()
    np.testing.assert_array_equal(general, cached)
    np.testing.assert_array_equal(cached, np.transpose(x.numpy(), shape_ops._permutation(x, axes, 4)))


def test_permute_errors_are_the_same_from_the_cache(numpy_backend: str) -> None:
    x = sg.ones(2, 3, 4)
    shape_ops._orders.clear()
    for _ in range(2):  # cold, then with every order so far cached
        x.permute(2, 0, 1)
        with pytest.raises(sg.ShapeError, match=r"permute: \(0, 0, 1\) is not an ordering"):
            x.permute(0, 0, 1)
        with pytest.raises(sg.ShapeError, match="permute"):
            sg.ones(2, 3).permute(2, 0, 1)  # the same axes, another rank
    assert all(key[1] == 3 and key[0] == (2, 0, 1) for key in shape_ops._orders)


def test_permute_by_numpy_ints_takes_the_general_path(numpy_backend: str) -> None:
    x = sg.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    shape_ops._orders.clear()
    out = x.permute(np.int64(1), np.int64(0))
    assert not shape_ops._orders  # not plain ints: never cached
    np.testing.assert_array_equal(out.numpy(), x.numpy().T)


@pytest.mark.parametrize("sizes", [(4, 6), (-1, 6), (2, 2, 6), (24,)])
def test_reshape_from_the_cache_equals_the_general_path(numpy_backend: str, sizes: tuple[int, ...]) -> None:
    x = sg.tensor(np.arange(24.0, dtype=np.float32).reshape(2, 3, 4))
    shape_ops._targets.clear()
    general = x.reshape(*sizes)
    assert ((2, 3, 4), sizes) in shape_ops._targets  # the next reshape: taken
    cached = x.reshape(*sizes)
    assert cached.shape == general.shape == np.reshape(x.numpy(), sizes).shape
    np.testing.assert_array_equal(general.numpy(), cached.numpy())


def test_reshape_errors_are_the_same_from_the_cache(numpy_backend: str) -> None:
    shape_ops._targets.clear()
    for _ in range(2):
        sg.ones(2, 3).reshape(3, 2)
        with pytest.raises(sg.ShapeError, match=r"reshape: cannot view shape \(2, 4\) \(8 elements\) as \(3, 2\)"):
            sg.ones(2, 4).reshape(3, 2)  # the same sizes from another shape
        with pytest.raises(sg.ShapeError, match="reshape"):
            sg.ones(2, 3).reshape(-1, -1)
    assert set(shape_ops._targets) == {((2, 3), (3, 2))}


def test_reshape_by_dims_and_numpy_ints_takes_the_general_path(numpy_backend: str) -> None:
    x = sg.ones(2, 3)
    shape_ops._targets.clear()
    assert x.reshape(np.int64(3), np.int64(2)).shape == (3, 2)
    assert x.reshape(Batch(6)).shape == (6,)
    assert not shape_ops._targets
