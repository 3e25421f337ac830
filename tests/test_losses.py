"""The loss table: forward against NumPy formulas, gradients against central differences,
finite at extreme logits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from support.gradcheck import assert_gradients_match

import shapegrad as sg

LABELS = np.array([2, 0, 1, 2])
IGNORING = np.array([2, -100, 1, 2])  # the second row is left out (issue #25)
CLASS_WEIGHTS = np.array([0.5, 2.0, 1.5])
ROW_WEIGHTS = np.array([[1.0], [0.5], [2.0], [0.0]])  # one per row of a (4, 3) batch
POS_WEIGHTS = np.array([3.0, 0.5, 1.0])  # one per class


def _logsoftmax(z: np.ndarray) -> np.ndarray:
    shifted = z - z.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _ce(z: np.ndarray, smoothing: float = 0.0) -> np.ndarray:
    logp = _logsoftmax(z)
    nll = -logp[np.arange(len(LABELS)), LABELS]
    return (1 - smoothing) * nll - smoothing * logp.mean(axis=-1)


def _weighted_nll(logp: np.ndarray, smoothing: float = 0.0) -> np.ndarray:
    """PyTorch's weighted, ignoring mean: counted rows' weighted losses over their total weight."""
    kept = IGNORING != -100
    rows, labels = logp[kept], IGNORING[kept]
    w = CLASS_WEIGHTS[labels]
    nll = -(w * rows[np.arange(len(labels)), labels]).sum()
    smooth = -(rows * CLASS_WEIGHTS).sum()
    return ((1 - smoothing) * nll + smoothing / logp.shape[-1] * smooth) / w.sum()


def _soft_ce(z: np.ndarray, q: np.ndarray, smoothing: float = 0.0, weight: np.ndarray | float = 1.0) -> np.ndarray:
    """Each row's -Σ w·q·log_softmax(z), q smoothed towards the uniform distribution."""
    q = (1 - smoothing) * q + smoothing / z.shape[-1]
    return -(weight * q * _logsoftmax(z)).sum(axis=-1)


def _bce(p: np.ndarray, t: np.ndarray) -> np.ndarray:
    return -(t * np.log(p) + (1 - t) * np.log1p(-p))


def _bce_logits(z: np.ndarray, t: np.ndarray, pos_weight: np.ndarray | float = 1.0) -> np.ndarray:
    """-(pos_weight·t·log σ(z) + (1-t)·log(1-σ(z))), PyTorch's weighted binary cross-entropy."""
    sigmoid = 1 / (1 + np.exp(-z))
    return -(pos_weight * t * np.log(sigmoid) + (1 - t) * np.log1p(-sigmoid))


def _huber(d: np.ndarray, delta: float) -> np.ndarray:
    return np.where(np.abs(d) <= delta, 0.5 * d * d, delta * (np.abs(d) - 0.5 * delta))


@dataclass(frozen=True)
class LossCase:
    name: str
    fn: Callable[..., Any]
    ref: Callable[..., Any]
    shapes: list[tuple[int, ...]]
    positive_target: bool = False
    unit_input: bool = False  # probabilities, drawn inside (0, 1)


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
        "cross_entropy_probabilities_weighted_smoothing",
        lambda z, q: sg.losses.cross_entropy(z, q, weight=sg.tensor(CLASS_WEIGHTS), label_smoothing=0.2),
        lambda z, q: _soft_ce(z, q, 0.2, CLASS_WEIGHTS).mean(),
        [(4, 3), (4, 3)],
        positive_target=True,
    ),
    LossCase(
        "cross_entropy_probabilities_tokens_none",
        lambda z, q: sg.losses.cross_entropy(z, q, reduction="none"),
        lambda z, q: _soft_ce(z, q),
        [(2, 2, 3), (2, 2, 3)],
        positive_target=True,
    ),
    LossCase(
        "bce_with_logits",
        lambda z, t: sg.losses.binary_cross_entropy_with_logits(z, t),
        lambda z, t: (np.log1p(np.exp(z)) - z * t).mean(),
        [(4, 3), (4, 3)],
        positive_target=True,
    ),
    LossCase(
        "bce_with_logits_weight_pos_weight",
        lambda z, t: sg.losses.binary_cross_entropy_with_logits(
            z, t, weight=sg.tensor(ROW_WEIGHTS), pos_weight=sg.tensor(POS_WEIGHTS)
        ),
        lambda z, t: (ROW_WEIGHTS * _bce_logits(z, t, POS_WEIGHTS)).mean(),
        [(4, 3), (4, 3)],
        positive_target=True,
    ),
    LossCase(
        "bce_with_logits_pos_weight_none",
        lambda z, t: sg.losses.binary_cross_entropy_with_logits(z, t, "none", pos_weight=sg.tensor(POS_WEIGHTS)),
        lambda z, t: _bce_logits(z, t, POS_WEIGHTS),
        [(4, 3), (4, 3)],
        positive_target=True,
    ),
    LossCase(
        "nll_loss_weighted_ignoring",
        lambda z: sg.losses.nll_loss(z, sg.tensor(IGNORING), weight=sg.tensor(CLASS_WEIGHTS)),
        lambda z: _weighted_nll(z),
        [(4, 3)],
    ),
    LossCase(
        "nll_loss_none",
        lambda z: sg.losses.nll_loss(z, sg.tensor(IGNORING), reduction="none"),
        lambda z: np.where(IGNORING == -100, 0.0, -z[np.arange(4), np.maximum(IGNORING, 0)]),
        [(4, 3)],
    ),
    LossCase(
        "cross_entropy_weighted_ignoring_smoothing",
        lambda z: sg.losses.cross_entropy(z, sg.tensor(IGNORING), weight=sg.tensor(CLASS_WEIGHTS), label_smoothing=0.2),
        lambda z: _weighted_nll(_logsoftmax(z), 0.2),
        [(4, 3)],
    ),
    LossCase(
        "binary_cross_entropy",
        lambda p, t: sg.losses.binary_cross_entropy(p, t),
        lambda p, t: _bce(p, t).mean(),
        [(4, 3), (4, 3)],
        positive_target=True,
        unit_input=True,
    ),
    LossCase(
        "binary_cross_entropy_weight_sum",
        lambda p, t: sg.losses.binary_cross_entropy(p, t, "sum", weight=sg.tensor(CLASS_WEIGHTS)),
        lambda p, t: (CLASS_WEIGHTS * _bce(p, t)).sum(),
        [(4, 3), (4, 3)],
        positive_target=True,
        unit_input=True,
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
    if case.unit_input:
        arrays[0] = rng.uniform(0.05, 0.95, case.shapes[0])
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
    with pytest.raises(
        sg.DTypeError, match=r"or class probabilities of the logits' shape, found dtype float32 of shape \(3,\)"
    ):
        sg.losses.cross_entropy(logits, sg.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(sg.ShapeError, match=r"labels must lie in \[0, 4\)"):
        sg.losses.cross_entropy(logits, sg.tensor([0, 1, 4]))


def test_ignored_labels_pass_the_range_check_and_others_are_named(numpy_backend: str) -> None:
    """issue #25: ``ignore_index`` (-100 by default, or any other value) is no class and
    passes; a label outside the classes is refused with the ignore_index it could have been."""
    logits = sg.zeros(3, 4)
    assert sg.losses.cross_entropy(logits, sg.tensor([0, -100, 3])).item() == pytest.approx(np.log(4))
    assert sg.losses.nll_loss(logits, sg.tensor([7, 7, 1]), ignore_index=7).item() == 0.0
    for loss in (sg.losses.cross_entropy, sg.losses.nll_loss):
        with pytest.raises(
            sg.ShapeError, match=r"labels must lie in \[0, 4\) for 4 classes, or equal ignore_index=-100"
        ):
            loss(logits, sg.tensor([0, -1, 2]))


def test_a_mean_over_no_counted_row_is_nan_without_a_warning(backend: str) -> None:
    """issue #25: every row ignored: PyTorch's mean is 0/0 = NaN, its gradient 0 (the test
    run turns warnings into errors)."""
    grads = sg.Gradients()
    logits = sg.ones(2, 3).trace(grads)
    loss = sg.losses.cross_entropy(logits, sg.tensor([-100, -100]))
    assert np.isnan(loss.item())
    assert sg.losses.cross_entropy(logits, sg.tensor([-100, -100]), reduction="sum").item() == 0.0
    smoothed = sg.losses.cross_entropy(logits, sg.tensor([-100, -100]), label_smoothing=0.1)
    assert np.isnan(smoothed.item())
    (loss + smoothed).backward()
    assert not np.any(grads[logits].numpy())


def test_class_weights_must_hold_one_value_per_class(numpy_backend: str) -> None:
    """issue #25: the weight vector's shape is checked before anything is computed."""
    for loss in (sg.losses.cross_entropy, sg.losses.nll_loss):
        with pytest.raises(sg.ShapeError, match=r"one value per class, shape \(4,\), found \(3,\)"):
            loss(sg.zeros(2, 4), sg.tensor([0, 1]), weight=sg.ones(3))


def test_binary_cross_entropy_refuses_probabilities_outside_0_1_and_is_finite_at_the_ends(backend: str) -> None:
    """issue #25: as F.binary_cross_entropy, probabilities must lie in [0, 1]; at 0 and 1 the
    logs are clamped to -100, so a certain wrong answer costs 100 and its gradient is finite."""
    with pytest.raises(sg.ShapeError, match=r"probs must lie in \[0, 1\]"):
        sg.losses.binary_cross_entropy(sg.tensor([0.5, 1.5]), sg.tensor([1.0, 0.0])).item()
    grads = sg.Gradients()
    probs = sg.tensor([0.0, 1.0, 1.0]).trace(grads)
    loss = sg.losses.binary_cross_entropy(probs, sg.tensor([1.0, 1.0, 0.0]), reduction="sum")
    assert loss.item() == pytest.approx(200.0)
    loss.backward()
    assert np.all(np.isfinite(grads[probs].numpy()))


@pytest.mark.parametrize("arg", ["weight", "pos_weight"])
def test_binary_cross_entropy_weights_take_no_gradient_and_must_broadcast(arg: str, numpy_backend: str) -> None:
    """PyTorch's binary cross-entropies are not differentiable in weight and pos_weight (they
    raise for one that requires a gradient): a traced one is refused rather than left without
    its gradient, and one that would grow the elements' shape is a ShapeError, as in PyTorch."""
    logits, targets = sg.zeros(2, 3), sg.ones(2, 3)
    traced = sg.ones(3).trace(sg.Gradients())
    with pytest.raises(sg.TapeError, match=f"{arg} is traced.*{arg}.detach"):
        sg.losses.binary_cross_entropy_with_logits(logits, targets, **{arg: traced})
    with pytest.raises(sg.ShapeError, match=rf"{arg} \(4,\) does not broadcast to the elements' shape \(2, 3\)"):
        sg.losses.binary_cross_entropy_with_logits(logits, targets, **{arg: sg.ones(4)})
    with pytest.raises(sg.ShapeError, match=r"does not broadcast"):
        sg.losses.binary_cross_entropy_with_logits(logits, targets, **{arg: sg.ones(2, 2, 3)})
    with sg.no_grad():  # there it is a constant
        sg.losses.binary_cross_entropy_with_logits(logits, targets, **{arg: traced})
    if arg == "weight":
        with pytest.raises(sg.TapeError, match="weight is traced"):
            sg.losses.binary_cross_entropy(sg.full((2, 3), 0.5), targets, weight=traced)
        with pytest.raises(sg.ShapeError, match="does not broadcast"):
            sg.losses.binary_cross_entropy(sg.full((2, 3), 0.5), targets, weight=sg.ones(2))


def test_probability_targets_are_told_from_labels_by_dtype_and_shape(numpy_backend: str) -> None:
    """Floats of the logits' shape are probabilities; integers of that shape are no labels, and
    ignore_index has no meaning for probabilities (PyTorch refuses it too)."""
    logits = sg.zeros(2, 3)
    uniform = sg.full((2, 3), 1 / 3)
    assert sg.losses.cross_entropy(logits, uniform).item() == pytest.approx(np.log(3))
    with pytest.raises(sg.ShapeError, match=r"expect labels of shape \(2,\) \(one per row\), found \(2, 3\)"):
        sg.losses.cross_entropy(logits, sg.tensor([[0, 1, 0], [1, 0, 0]]))
    with pytest.raises(sg.HyperparameterError, match="ignore_index=0 has no meaning for probability targets"):
        sg.losses.cross_entropy(logits, uniform, ignore_index=0)
    with pytest.raises(sg.ShapeError, match=r"one value per class, shape \(3,\), found \(2,\)"):
        sg.losses.cross_entropy(logits, uniform, weight=sg.ones(2))


def test_traced_class_weights_get_gradients_only_with_probability_targets(numpy_backend: str) -> None:
    """PyTorch differentiates the class weights of a soft-target cross-entropy, and refuses
    traced ones for integer labels (nll_loss is not differentiable in them): a traced weight
    there is a TapeError, not a gradient silently left out; inside no_grad it is a constant."""
    grads = sg.Gradients()
    weight = sg.tensor([1.0, 2.0, 3.0]).trace(grads)
    logits = sg.zeros(2, 3)
    sg.losses.cross_entropy(logits, sg.full((2, 3), 1 / 3), weight=weight).backward()
    np.testing.assert_allclose(grads[weight].numpy(), np.full(3, np.log(3) / 3), rtol=1e-6)
    for loss in (sg.losses.cross_entropy, sg.losses.nll_loss):
        with pytest.raises(sg.TapeError, match="weight is traced.*weight.detach"):
            loss(logits, sg.tensor([0, 1]), weight=weight)
        with sg.no_grad():
            loss(logits, sg.tensor([0, 1]), weight=weight)


@pytest.mark.parametrize("shape", [(2, 5, 4, 3), (2, 5, 7)], ids=str)
def test_labels_for_classes_on_axis_1_are_told_to_move_them_last(shape: tuple[int, ...], numpy_backend: str) -> None:
    """PyTorch's layout, (B, C, H, W) or (B, C, L) logits with (B, H, W) or (B, L) labels:
    the ShapeError says how to move the class axis last."""
    logits = sg.zeros(*shape)
    labels = sg.tensor(np.zeros((shape[0], *shape[2:]), dtype=np.int64))
    axes = ", ".join(str(a) for a in (0, *range(2, len(shape)), 1))
    for loss in (sg.losses.cross_entropy, sg.losses.nll_loss):
        with pytest.raises(sg.ShapeError, match=rf"move the class axis last, \w+\.permute\({axes}\)"):
            loss(logits, labels)
    moved = sg.losses.cross_entropy(logits.permute(0, *range(2, len(shape)), 1), labels)
    assert moved.item() == pytest.approx(np.log(5))
