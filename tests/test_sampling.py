"""Sampling from given weights: ``sg.multinomial``'s statistics, reproducibility and
refusals (issue #25)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import shapegrad as sg

WEIGHTS = np.array([1.0, 2.0, 0.0, 3.0, 4.0])  # unnormalized, one category never drawn


def test_signature_is_torch_s() -> None:
    """issue #25: torch.multinomial(input, num_samples, replacement=False, *, generator=None)'s
    parameters in its order (its ``input`` named ``probs``), without replacement by default."""
    ours = inspect.signature(sg.multinomial).parameters
    assert list(ours) == ["probs", "num_samples", "replacement", "generator"]
    assert ours["replacement"].default is False
    assert ours["generator"].kind is inspect.Parameter.KEYWORD_ONLY


def test_with_replacement_frequencies_match_the_normalized_weights(backend: str) -> None:
    """issue #25: each draw is category k with probability w_k / sum(w)."""
    draws = sg.multinomial(sg.tensor(WEIGHTS), 40_000, replacement=True, generator=sg.Generator(1))
    assert draws.shape == (40_000,) and draws.backend_dtype_name() == "int64"
    counts = np.bincount(draws.numpy(), minlength=5)
    assert counts[2] == 0
    expected = WEIGHTS / WEIGHTS.sum()
    # 5 standard deviations of a binomial count: a correct sampler fails this about never.
    np.testing.assert_allclose(counts / 40_000, expected, atol=5 * np.sqrt(0.25 / 40_000))


def test_without_replacement_draws_distinct_categories_in_sequential_order(backend: str) -> None:
    """issue #25: the first draw is k with probability p_k, the second j with p_j / (1 - p_k), as
    drawing one at a time and removing it does; a row never repeats a category."""
    rows = 20_000
    probs = sg.tensor(np.tile(WEIGHTS, (rows, 1)))
    draws = sg.multinomial(probs, 3, generator=sg.Generator(2)).numpy()
    assert draws.shape == (rows, 3)
    assert all(len(set(row)) == 3 for row in draws.tolist()) and not np.any(draws == 2)
    p = WEIGHTS / WEIGHTS.sum()
    tolerance = 5 * np.sqrt(0.25 / rows)
    np.testing.assert_allclose(np.bincount(draws[:, 0], minlength=5) / rows, p, atol=tolerance)
    first_then = [p[0] * p[j] / (1 - p[0]) for j in range(5)]
    pairs = np.array([np.mean((draws[:, 0] == 0) & (draws[:, 1] == j)) for j in range(5)])
    np.testing.assert_allclose(pairs, first_then, atol=tolerance)


def test_asking_for_every_category_without_replacement_gives_a_permutation(numpy_backend: str) -> None:
    """issue #25: as torch, num_samples equal to the number of (positive) categories is allowed."""
    assert sorted(sg.multinomial(sg.tensor([0.2, 0.3, 0.5]), 3).tolist()) == [0, 1, 2]


def test_a_seeded_generator_reproduces_the_draws(backend: str) -> None:
    """issue #25: the same seed gives the same draws, with and without replacement; rows are
    sampled independently."""
    probs = sg.tensor(np.array([[0.5, 0.5, 0.0], [0.0, 1.0, 1.0]]))
    for replacement in (False, True):
        first = sg.multinomial(probs, 2, replacement, generator=sg.Generator(7)).tolist()
        again = sg.multinomial(probs, 2, replacement, generator=sg.Generator(7)).tolist()
        assert first == again
        assert all(k in (0, 1) for k in first[0]) and all(k in (1, 2) for k in first[1])
    many = [sg.multinomial(probs, 2, True, generator=sg.Generator(s)).tolist() for s in range(8)]
    assert len({str(m) for m in many}) > 1


@pytest.mark.parametrize(
    ("probs", "num_samples", "replacement", "error", "match"),
    [
        ([0.5, 0.5], 3, False, sg.HyperparameterError, r"num_samples in \[1, 2\].*found 3"),
        ([0.5, 0.5], 0, True, sg.HyperparameterError, "num_samples > 0, found 0"),
        ([0.5, -0.1], 1, True, sg.HyperparameterError, "non-negative"),
        ([0.5, float("nan")], 1, True, sg.HyperparameterError, "finite"),
        ([[0.5, 0.5], [0.0, 0.0]], 1, True, sg.HyperparameterError, r"positive sum, found \[1.0, 0.0\]"),
        ([1.0, 0.0, 0.0], 2, False, sg.HyperparameterError, r"at least num_samples=2 .* found \[1\]"),
        ([1, 2], 1, True, sg.DTypeError, "floating-point probabilities, found dtype int64"),
        ([[[1.0]]], 1, True, sg.ShapeError, r"rank 1 or 2, found shape \(1, 1, 1\)"),
    ],
)
def test_impossible_requests_are_refused(
    probs: list[object], num_samples: int, replacement: bool, error: type[Exception], match: str, numpy_backend: str
) -> None:
    """issue #25: as torch.multinomial refuses them, with what was expected and found."""
    with pytest.raises(error, match=match):
        sg.multinomial(sg.tensor(probs), num_samples, replacement)


@pytest.mark.parametrize("op", ["rand_like", "randn_like"])
@pytest.mark.parametrize("data", [[1, 0, 2], [True, False, True]])
def test_draws_like_an_integer_or_boolean_tensor_are_refused(op: str, data: list[object]) -> None:
    """Draws in x's integer dtype were truncated (uniform ones all to 0), silently; PyTorch
    raises. A float ``dtype=`` makes the call valid, as ``torch.rand_like(x, dtype=...)``."""
    x = sg.tensor(np.array(data))
    with pytest.raises(
        sg.DTypeError, match=rf"{op} draws floating-point values, found dtype (int64|bool); pass a float dtype="
    ):
        getattr(sg, op)(x, generator=sg.Generator(0))
    draws = getattr(sg, op)(x, generator=sg.Generator(0), dtype="float64")
    assert draws.shape == (3,) and draws.numpy().dtype == np.float64
    assert getattr(sg, op)(sg.tensor([1.0, 2.0]), generator=sg.Generator(0)).numpy().dtype == np.float32


@pytest.mark.parametrize("op", ["rand", "randn"])
def test_draws_in_an_integer_dtype_are_refused(op: str) -> None:
    """``sg.rand(3, dtype='int64')`` gave truncated draws; torch.rand(3, dtype=torch.int64) raises."""
    with pytest.raises(sg.DTypeError, match=f"{op} draws floating-point values, found dtype int64"):
        getattr(sg, op)(3, dtype="int64", generator=sg.Generator(0))
    assert getattr(sg, op)(3, dtype="float64", generator=sg.Generator(0)).numpy().dtype == np.float64


@pytest.mark.parametrize("method", ["normal", "uniform"])
def test_a_generator_refuses_draws_in_an_integer_dtype(method: str) -> None:
    """``g.uniform((3,), dtype='int64')`` gave draws truncated to 0, silently."""
    with pytest.raises(sg.DTypeError, match=f"Generator.{method} draws floating-point values, found dtype int64"):
        getattr(sg.Generator(0), method)((3,), dtype="int64")


@pytest.mark.parametrize("data", [[[1, 0, 2]], [[True, False, True]]])
def test_dropout_of_an_integer_or_boolean_tensor_is_refused(data: list[object]) -> None:
    """Its mask was drawn in x's dtype, all zeros: every value dropped, silently (PyTorch raises)."""
    dropout = sg.nn.Dropout(0.5, generator=sg.Generator(0))
    with pytest.raises(sg.DTypeError, match="Dropout expects a floating-point tensor, found dtype (int64|bool)"):
        dropout(sg.tensor(np.array(data)))
    dropout.eval()
    assert dropout(sg.tensor(np.array(data))).numpy().tolist() == data  # the identity in eval mode
