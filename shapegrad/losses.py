"""Loss functions. Each reduces to a rank-0 tensor (``reduction="mean"`` by default) and
is numerically stable at extreme logits.

Typed so that predictions and targets share their dims: logits ``(B, C)`` with labels
``(B,)`` of another batch size is a pyright error.
"""

from __future__ import annotations

import math
from typing import Any, Literal, TypeVar, cast, overload

from ._autodiff import NoTape
from ._backend import fused_kernel
from ._device_checks import require_in_range
from ._errors import DTypeError, HyperparameterError, ShapeError
from ._tensor import AnyTensor, Tensor, record
from ._typevars import N, S, T
from .ops.elementwise import require_float

__all__ = ["binary_cross_entropy_with_logits", "cross_entropy", "huber", "kl_div", "mae", "mse", "smooth_l1"]

Reduction = Literal["mean", "sum", "none"]
C = TypeVar("C")


def _reduce(x: AnyTensor, reduction: Reduction) -> Any:
    if reduction == "mean":
        return x.mean()
    if reduction == "sum":
        return x.sum()
    if reduction == "none":
        return x
    raise HyperparameterError(f"reduction must be 'mean', 'sum' or 'none', found {reduction!r}")


def _same_shape(name: str, pred: AnyTensor, target: AnyTensor) -> None:
    if pred.shape != target.shape:
        raise ShapeError(f"{name}: predictions {pred.shape} and targets {target.shape} are expected to have one shape")


@overload
def mse(pred: Tensor[T, *S], target: Tensor[NoTape, *S], reduction: Literal["mean", "sum"] = "mean") -> Tensor[T]: ...
@overload
def mse(pred: Tensor[T, *S], target: Tensor[T, *S], reduction: Literal["mean", "sum"] = "mean") -> Tensor[T]: ...
@overload
def mse(pred: Tensor[T, *S], target: Tensor[Any, *S], reduction: Literal["none"]) -> Tensor[T, *S]: ...
def mse(pred: AnyTensor, target: AnyTensor, reduction: Reduction = "mean") -> Any:
    """Mean squared error ``mean((pred - target)²)``. PyTorch: ``F.mse_loss``."""
    _same_shape("mse", pred, target)
    diff: AnyTensor = pred - target
    return _reduce(diff * diff, reduction)


@overload
def mae(pred: Tensor[T, *S], target: Tensor[NoTape, *S], reduction: Literal["mean", "sum"] = "mean") -> Tensor[T]: ...
@overload
def mae(pred: Tensor[T, *S], target: Tensor[T, *S], reduction: Literal["mean", "sum"] = "mean") -> Tensor[T]: ...
@overload
def mae(pred: Tensor[T, *S], target: Tensor[Any, *S], reduction: Literal["none"]) -> Tensor[T, *S]: ...
def mae(pred: AnyTensor, target: AnyTensor, reduction: Reduction = "mean") -> Any:
    """Mean absolute error ``mean(|pred - target|)``. PyTorch: ``F.l1_loss``."""
    _same_shape("mae", pred, target)
    diff: AnyTensor = pred - target
    return _reduce(diff.abs(), reduction)


def huber_backward(xp: Any, g: Any, diff: Any, delta: float) -> tuple[Any, ...]:
    return (g * xp.clip(diff, -delta, delta),)


def _huber_elements(pred: AnyTensor, target: AnyTensor, delta: float) -> Any:
    diff_t: AnyTensor = pred - target
    xp = diff_t._backend.xp
    diff = diff_t._data
    a = xp.abs(diff)
    out = xp.where(a <= delta, 0.5 * diff * diff, delta * (a - 0.5 * delta))
    return record(out, huber_backward, (diff_t,), (diff, delta), diff_t._backend)


@overload
def huber(
    pred: Tensor[T, *S], target: Tensor[NoTape, *S], delta: float = 1.0, reduction: Literal["mean", "sum"] = "mean"
) -> Tensor[T]: ...
@overload
def huber(
    pred: Tensor[T, *S], target: Tensor[T, *S], delta: float = 1.0, reduction: Literal["mean", "sum"] = "mean"
) -> Tensor[T]: ...
@overload
def huber(
    pred: Tensor[T, *S], target: Tensor[Any, *S], delta: float = 1.0, *, reduction: Literal["none"]
) -> Tensor[T, *S]: ...
def huber(pred: AnyTensor, target: AnyTensor, delta: float = 1.0, reduction: Reduction = "mean") -> Any:
    """Huber loss: ``½d²`` where ``|d| <= delta``, else ``delta(|d| - ½delta)``.
    d/dd = clip(d, ±delta). PyTorch: ``F.huber_loss``."""
    _same_shape("huber", pred, target)
    return _reduce(_huber_elements(pred, target, delta), reduction)


@overload
def smooth_l1(
    pred: Tensor[T, *S], target: Tensor[NoTape, *S], beta: float = 1.0, reduction: Literal["mean", "sum"] = "mean"
) -> Tensor[T]: ...
@overload
def smooth_l1(
    pred: Tensor[T, *S], target: Tensor[T, *S], beta: float = 1.0, reduction: Literal["mean", "sum"] = "mean"
) -> Tensor[T]: ...
@overload
def smooth_l1(
    pred: Tensor[T, *S], target: Tensor[Any, *S], beta: float = 1.0, *, reduction: Literal["none"]
) -> Tensor[T, *S]: ...
def smooth_l1(pred: AnyTensor, target: AnyTensor, beta: float = 1.0, reduction: Reduction = "mean") -> Any:
    """Smooth L1: Huber divided by ``beta`` (``½d²/beta`` near 0, ``|d| - ½beta`` beyond).
    PyTorch: ``F.smooth_l1_loss``."""
    _same_shape("smooth_l1", pred, target)
    if beta <= 0:
        diff: AnyTensor = pred - target
        return _reduce(diff.abs(), reduction)
    elements: AnyTensor = _huber_elements(pred, target, beta)
    return _reduce(elements * (1.0 / beta), reduction)


def _check_labels(logits: AnyTensor, labels: AnyTensor) -> None:
    name = labels.backend_dtype_name()
    if not name.startswith(("int", "uint")):
        raise DTypeError(f"cross_entropy expects integer class labels, found dtype {name}")
    if logits.ndim < 1 or labels.shape != logits.shape[:-1]:
        raise ShapeError(
            f"cross_entropy: logits {logits.shape} expect labels of shape {logits.shape[:-1]} "
            f"(one per row), found {labels.shape}"
        )
    n = logits.shape[-1]
    message = f"cross_entropy: labels must lie in [0, {n}) for {n} classes"
    require_in_range(labels._backend, labels._data, 0, n, message)


@overload
def cross_entropy(
    logits: Tensor[T, *S, C],
    labels: Tensor[Any, *S],
    *,
    label_smoothing: float = 0.0,
    reduction: Literal["mean", "sum"] = "mean",
) -> Tensor[T]: ...
@overload
def cross_entropy(
    logits: Tensor[T, *S, C], labels: Tensor[Any, *S], *, label_smoothing: float = 0.0, reduction: Literal["none"]
) -> Tensor[T, *S]: ...
def cross_entropy(
    logits: AnyTensor, labels: AnyTensor, *, label_smoothing: float = 0.0, reduction: Reduction = "mean"
) -> Any:
    """Cross-entropy of ``logits (*S, C)`` against integer ``labels (*S)`` — one row per
    sample, or per token of a sequence model (``(B, L, C)`` against ``(B, L)``) — through a stable
    ``log_softmax``; ``label_smoothing`` mixes the one-hot target with the uniform one.
    d/dlogits = softmax(logits) - target, one fused op. PyTorch:
    ``F.cross_entropy(logits, labels, label_smoothing=...)``.

    Examples:
        >>> import shapegrad as sg
        >>> logits = sg.tensor([[2.0, 0.0], [0.0, 2.0]])
        >>> round(sg.losses.cross_entropy(logits, sg.tensor([0, 1])).item(), 4)
        0.1269
    """
    _check_labels(logits, labels)
    if reduction not in ("mean", "sum", "none"):
        raise HyperparameterError(f"reduction must be 'mean', 'sum' or 'none', found {reduction!r}")
    require_float(logits, "cross_entropy")
    xp = logits._backend.xp
    data = logits._data
    ids = xp.expand_dims(labels._data, axis=-1)
    kernel = fused_kernel(logits._backend, "cross_entropy", data.dtype)
    fused = None if kernel is None else kernel(data, labels._data, label_smoothing)  # two row passes
    if fused is not None:
        logp, per_row = fused
    else:
        shifted = data - xp.max(data, axis=-1, keepdims=True)
        logp = shifted - xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))
        per_row = -xp.take_along_axis(logp, ids, axis=-1)[..., 0]
        if label_smoothing:
            per_row = (1.0 - label_smoothing) * per_row - label_smoothing * xp.mean(logp, axis=-1)
    count = per_row.size if reduction == "mean" else 1
    out = per_row if reduction == "none" else xp.sum(per_row) / count
    saved = (logp, ids, label_smoothing, reduction == "none", count)
    return record(out, cross_entropy_backward, (logits, labels), saved, logits._backend)


def cross_entropy_backward(
    xp: Any, g: Any, logp: Any, ids: Any, smoothing: float, per_row: bool, count: int
) -> tuple[Any, ...]:
    classes = logp.shape[-1]
    target = xp.astype(xp.arange(classes) == ids, logp.dtype)
    if smoothing:
        target = target * (1.0 - smoothing) + smoothing / classes
    scale = xp.expand_dims(g, axis=-1) if per_row else g / count
    return (xp.exp(logp) - target) * scale, None


@overload
def binary_cross_entropy_with_logits(
    logits: Tensor[T, *S], targets: Tensor[Any, *S], reduction: Literal["mean", "sum"] = "mean"
) -> Tensor[T]: ...
@overload
def binary_cross_entropy_with_logits(
    logits: Tensor[T, *S], targets: Tensor[Any, *S], reduction: Literal["none"]
) -> Tensor[T, *S]: ...
def binary_cross_entropy_with_logits(logits: AnyTensor, targets: AnyTensor, reduction: Reduction = "mean") -> Any:
    """Binary cross-entropy of probabilities ``sigmoid(logits)`` against ``targets`` in
    [0, 1], as ``softplus(x) - x·t`` so that no logit overflows. d/dx = σ(x) - t.
    PyTorch: ``F.binary_cross_entropy_with_logits``."""
    _same_shape("binary_cross_entropy_with_logits", logits, targets)
    elements: AnyTensor = logits.softplus() - logits * targets
    return _reduce(elements, reduction)


def xlogx_backward(xp: Any, g: Any, t: Any, positive: Any, log_t: Any) -> tuple[Any, ...]:
    return (xp.where(positive, g * (log_t + 1), xp.zeros_like(g)),)


def _xlogx(t: AnyTensor) -> Any:
    """``t · log t``, taken as 0 at ``t = 0`` (its limit); d/dt = log t + 1 where t > 0."""
    xp = t._backend.xp
    data = t._data
    positive = data > 0
    log_t = xp.log(xp.where(positive, data, xp.ones_like(data)))
    return record(
        xp.where(positive, data * log_t, xp.zeros_like(data)), xlogx_backward, (t,), (data, positive, log_t), t._backend
    )


@overload
def kl_div(
    log_pred: Tensor[T, *S, N],
    target: Tensor[Any, *S, N],
    *,
    log_target: bool = False,
    reduction: Literal["batchmean", "sum", "mean"] = "batchmean",
) -> Tensor[T]: ...
@overload
def kl_div(
    log_pred: Tensor[T, *S, N], target: Tensor[Any, *S, N], *, log_target: bool = False, reduction: Literal["none"]
) -> Tensor[T, *S, N]: ...
def kl_div(log_pred: AnyTensor, target: AnyTensor, *, log_target: bool = False, reduction: str = "batchmean") -> Any:
    """``KL(target ‖ pred)`` from log-probabilities ``log_pred``, summed over classes and
    averaged over the batch (``"batchmean"``). Zero target entries contribute 0.
    PyTorch: ``F.kl_div(log_pred, target, reduction="batchmean", log_target=...)``."""
    _same_shape("kl_div", log_pred, target)
    if log_target:
        elements: AnyTensor = target.exp() * (target - log_pred)
    else:
        elements = _xlogx(target) - target * log_pred
    if reduction == "batchmean":
        batch = log_pred.shape[0] if log_pred.ndim else 1
        # An empty batch has no mean: NaN, as PyTorch (0/0), without a division warning.
        return elements.sum() * (1.0 / batch if batch else math.nan)
    return _reduce(elements, cast(Reduction, reduction))
