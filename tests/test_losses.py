"""The loss table: forward against NumPy formulas, gradients against central differences,
finite at extreme logits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from gradcheck import assert_gradients_match

import shapegrad as sg

LABELS = np.array([2, 0, 1, 2])


def _logsoftmax(z: np.ndarray) -> np.ndarray:
    shifted = z - z.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _ce(z: np.ndarray, smoothing: float = 0.0) -> np.ndarray:
    logp = _logsoftmax(z)
    nll = -logp[np.arange(len(LABELS)), LABELS]
    return (1 - smoothing) * nll - smoothing * logp.mean(axis=-1)


def _huber(d: np.ndarray, delta: float) -> np.ndarray:
    return np.where(np.abs(d) <= delta, 0.5 * d * d, delta * (np.abs(d) - 0.5 * delta))


@dataclass(frozen=True)
class LossCase:
    name: str
    fn: Callable[..., Any]
    ref: Callable[..., Any]
    shapes: list[tuple[int, ...]]
    positive_target: bool = False


LOSSES = [
    LossCase("mse", lambda p, t: sg.losses.mse(p, t), lambda p, t: ((p - t) ** 2).mean(), [(4, 3), (4, 3)]),
    LossCase(
        "mse_sum",
        lambda p, t: sg.losses.mse(p, t, reduction="sum"),
        lambda p, t: ((p - t) ** 2).sum(),
        [(4, 3), (4, 3)],
    ),
    LossCase("mae", lambda p, t: sg.losses.mae(p, t), lambda p, t: np.abs(p - t).mean(), [(4, 3), (4, 3)]),
    LossCase(
        "huber", lambda p, t: sg.losses.huber(p, t, delta=0.5), lambda p, t: _huber(p - t, 0.5).mean(), [(4, 3), (4, 3)]
    ),
    LossCase(
        "smooth_l1",
        lambda p, t: sg.losses.smooth_l1(p, t, beta=0.5),
        lambda p, t: (_huber(p - t, 0.5) / 0.5).mean(),
        [(4, 3), (4, 3)],
    ),
    LossCase(
        "cross_entropy", lambda z: sg.losses.cross_entropy(z, sg.tensor(LABELS)), lambda z: _ce(z).mean(), [(4, 3)]
    ),
    LossCase(
        "cross_entropy_sum",
        lambda z: sg.losses.cross_entropy(z, sg.tensor(LABELS), reduction="sum"),
        lambda z: _ce(z).sum(),
        [(4, 3)],
    ),
    LossCase(
        "cross_entropy_none",
        lambda z: sg.losses.cross_entropy(z, sg.tensor(LABELS), reduction="none"),
        lambda z: _ce(z),
        [(4, 3)],
    ),
    LossCase(
        "cross_entropy_smoothing",
        lambda z: sg.losses.cross_entropy(z, sg.tensor(LABELS), label_smoothing=0.1),
        lambda z: _ce(z, 0.1).mean(),
        [(4, 3)],
    ),
    LossCase(
        "bce_with_logits",
        lambda z, t: sg.losses.binary_cross_entropy_with_logits(z, t),
        lambda z, t: (np.log1p(np.exp(z)) - z * t).mean(),
        [(4, 3), (4, 3)],
        positive_target=True,
    ),
    LossCase(
        "kl_div",
        lambda lp, t: sg.losses.kl_div(lp.log_softmax(), t),
        lambda lp, t: (t * (np.log(t) - _logsoftmax(lp))).sum() / lp.shape[0],
        [(4, 3), (4, 3)],
        positive_target=True,
    ),
    LossCase(
        "kl_div_log_target",
        lambda lp, t: sg.losses.kl_div(lp.log_softmax(), t.log_softmax(), log_target=True),
        lambda lp, t: (np.exp(_logsoftmax(t)) * (_logsoftmax(t) - _logsoftmax(lp))).sum() / lp.shape[0],
        [(4, 3), (4, 3)],
    ),
]


def _draw(case: LossCase, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in case.shapes]
    if case.positive_target:
        arrays[1] = rng.uniform(0.05, 0.95, case.shapes[1])
    return arrays


@pytest.mark.parametrize("case", LOSSES, ids=[c.name for c in LOSSES])
def test_loss_forward(case: LossCase, backend: str) -> None:
    arrays = _draw(case, 0)
    found = case.fn(*[sg.tensor(a) for a in arrays])
    np.testing.assert_allclose(np.asarray(found.numpy(), dtype=np.float64), case.ref(*arrays), rtol=1e-10)


@pytest.mark.parametrize("case", LOSSES, ids=[c.name for c in LOSSES])
def test_loss_gradient(case: LossCase, backend: str) -> None:
    assert_gradients_match(case.fn, _draw(case, 1))


@pytest.mark.parametrize("scale", [1e4, -1e4])
def test_stable_at_extreme_logits(scale: float, numpy_backend: str) -> None:
    z = np.array([[1.0, -1.0, 0.5], [0.0, 2.0, -3.0]], dtype=np.float32) * scale
    for dtype in ("float32", "float64"):
        grads = sg.Gradients()
        logits = sg.tensor(z, dtype=dtype).trace(grads)
        results = [
            sg.losses.cross_entropy(logits, sg.tensor([0, 1])),
            sg.losses.binary_cross_entropy_with_logits(logits, sg.tensor(np.full_like(z, 0.5))),
            logits.log_softmax().sum(),
            logits.logsumexp(axis=-1).sum(),
            logits.sigmoid().sum(),
            logits.softplus().sum(),
            logits.softmax().sum(),
        ]
        for value in results:
            assert np.isfinite(value.item()), value
        sg.backward(*results)
        assert np.all(np.isfinite(grads[logits].numpy()))


def test_float32_agrees_with_float64() -> None:
    rng = np.random.default_rng(0)
    z = rng.standard_normal((16, 10)) * 5
    labels = sg.tensor(rng.integers(0, 10, 16))
    values = []
    for dtype in ("float32", "float64"):
        grads = sg.Gradients()
        logits = sg.tensor(z, dtype=dtype).trace(grads)
        loss = sg.losses.cross_entropy(logits, labels)
        loss.backward()
        values.append((loss.item(), grads[logits].numpy().astype(np.float64)))
    assert values[0][0] == pytest.approx(values[1][0], rel=1e-6)
    np.testing.assert_allclose(values[0][1], values[1][1], rtol=1e-4, atol=1e-7)


def test_cross_entropy_rejects_bad_labels(numpy_backend: str) -> None:
    logits = sg.zeros(3, 4)
    with pytest.raises(sg.DTypeError, match="integer class labels"):
        sg.losses.cross_entropy(logits, sg.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(sg.ShapeError, match=r"labels must lie in \[0, 4\)"):
        sg.losses.cross_entropy(logits, sg.tensor([0, 1, 4]))
