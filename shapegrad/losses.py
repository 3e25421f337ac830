"""Loss functions. Each reduces to a rank-0 tensor (``reduction="mean"`` by default) and
is numerically stable at extreme logits.

Typed so that predictions and targets share their dims: logits ``(B, C)`` with labels
``(B,)`` of another batch size is a pyright error.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar, cast, overload

from numpy import broadcast_shapes

from ._autodiff import NoTape, wants_grad
from ._backend import fused_kernel, same_backend
from ._device_checks import require_in_range
from ._dims import Open
from ._errors import DTypeError, HyperparameterError, ShapeError, TapeError
from ._no_grad import inside_no_grad
from ._tensor import AnyTensor, Tensor, record, wrap
from ._torch_names import missing_module_attribute
from ._typevars import N, S, T
from .ops._toolkit import require_float
from .ops.reductions import cast_to, is_half, wide_sum

__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cross_entropy",
    "huber",
    "kl_div",
    "mae",
    "mse",
    "nll_loss",
    "smooth_l1",
]

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
def mse(
    pred: Tensor[T, *S],
    target: Tensor[T, *S] | Tensor[T, *tuple[Open, ...]],
    reduction: Literal["mean", "sum"] = "mean",
) -> Tensor[T]: ...
@overload
def mse(
    pred: Tensor[T, *S], target: Tensor[Any, *S] | Tensor[Any, *tuple[Open, ...]], reduction: Literal["none"]
) -> Tensor[T, *S]: ...
@overload
def mse(
    pred: Tensor[T, *tuple[Open, ...]], target: Tensor[T, *S], reduction: Literal["mean", "sum"] = "mean"
) -> Tensor[T]: ...
@overload
def mse(
    pred: Tensor[T, *tuple[Open, ...]], target: Tensor[Any, *S], reduction: Literal["none"]
) -> Tensor[T, *tuple[Open, ...]]: ...
def mse(pred: AnyTensor, target: AnyTensor, reduction: Reduction = "mean") -> Any:
    """Mean squared error ``mean((pred - target)²)``. PyTorch: ``F.mse_loss``."""
    _same_shape("mse", pred, target)
    diff: AnyTensor = pred - target
    return _reduce(diff * diff, reduction)


@overload
def mae(
    pred: Tensor[T, *S],
    target: Tensor[T, *S] | Tensor[T, *tuple[Open, ...]],
    reduction: Literal["mean", "sum"] = "mean",
) -> Tensor[T]: ...
@overload
def mae(
    pred: Tensor[T, *S], target: Tensor[Any, *S] | Tensor[Any, *tuple[Open, ...]], reduction: Literal["none"]
) -> Tensor[T, *S]: ...
@overload
def mae(
    pred: Tensor[T, *tuple[Open, ...]], target: Tensor[T, *S], reduction: Literal["mean", "sum"] = "mean"
) -> Tensor[T]: ...
@overload
def mae(
    pred: Tensor[T, *tuple[Open, ...]], target: Tensor[Any, *S], reduction: Literal["none"]
) -> Tensor[T, *tuple[Open, ...]]: ...
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


def _check_labels(name: str, scores: AnyTensor, labels: AnyTensor) -> None:
    """Integer labels, one per row of ``scores (*S, C)``; their range is checked where they are used."""
    dtype = labels.backend_dtype_name()
    if not dtype.startswith(("int", "uint")):
        probabilities = " or class probabilities of the logits' shape" if name == "cross_entropy" else ""
        raise DTypeError(
            f"{name} expects integer class labels{probabilities}, found dtype {dtype} of shape {labels.shape} "
            f"for {'logits' if name == 'cross_entropy' else 'log_probs'} {scores.shape}"
        )
    if scores.ndim < 1 or labels.shape != scores.shape[:-1]:
        raise ShapeError(
            f"{name}: {'logits' if name == 'cross_entropy' else 'log_probs'} {scores.shape} expect labels of shape "
            f"{scores.shape[:-1]} (one per row), found {labels.shape}{_class_axis_hint(name, scores, labels)}"
        )


def _class_axis_hint(name: str, scores: AnyTensor, labels: AnyTensor) -> str:
    """Where ``labels`` fit ``scores`` with the classes on axis 1 (PyTorch's layout, a
    ``(B, C, H, W)`` segmentation output or a ``(B, C, L)`` sequence one), how to move them last."""
    if scores.ndim < 3 or labels.shape != (scores.shape[0], *scores.shape[2:]):
        return ""
    axes = ", ".join(str(axis) for axis in (0, *range(2, scores.ndim), 1))
    arg = "logits" if name == "cross_entropy" else "log_probs"
    return (
        f". Classes are the last axis here, where PyTorch's F.{name} takes them on axis 1: "
        f"move the class axis last, {arg}.permute({axes})"
    )


def _check_reduction(reduction: str) -> None:
    if reduction not in ("mean", "sum", "none"):
        raise HyperparameterError(f"reduction must be 'mean', 'sum' or 'none', found {reduction!r}")


def _check_weight(name: str, weight: AnyTensor | None, classes: int, differentiable: bool = False) -> None:
    if weight is None:
        return
    if weight.shape != (classes,):
        raise ShapeError(
            f"{name}: weight is expected to hold one value per class, shape ({classes},), found {weight.shape}"
        )
    if not differentiable and wants_grad(weight) and not inside_no_grad():
        # the rules read the weight's values: a gradient for it would be dropped
        raise TapeError(
            f"{name}: weight is traced (or a trainable parameter), but the loss of integer labels gives its "
            "class weights no gradient (PyTorch raises too: not differentiable with respect to 'weight'); "
            "pass weight.detach()"
        )


def _row_weights(
    name: str, labels: AnyTensor, weight: AnyTensor | None, ignore_index: int, classes: int, dtype: Any
) -> tuple[Any, Any, Any]:
    """``(ids, keep, w_row)``: the labels with ignored rows pointed at class 0 (as an index
    column), which rows count, and each row's weight — ``weight[label]``, or 1 — with 0 at
    ignored rows. The range check reads the pointed labels, so ``ignore_index`` passes it."""
    xp = labels._backend.xp
    data = labels._data
    keep = data != ignore_index
    ids = xp.where(keep, data, xp.zeros_like(data))
    require_in_range(labels._backend, ids, 0, classes, _label_range(name, classes, ignore_index))
    kept = xp.astype(keep, dtype)
    w_row = kept if weight is None else xp.take(xp.astype(weight._data, dtype), xp.reshape(ids, (-1,)), axis=0)
    if weight is not None:
        w_row = xp.reshape(w_row, data.shape) * kept
    return xp.expand_dims(ids, axis=-1), keep, w_row


def _mean_divisor(xp: Any, w_row: Any) -> tuple[Any, Any]:
    """The mean's divisor, the counted rows' total weight (as PyTorch), for the value and for
    the gradient. With no row counted the value's is NaN, so that the mean is NaN (0/0)
    without a division warning, and the gradient's is 1, so that the gradient is 0 (PyTorch's)."""
    total = wide_sum(xp, w_row)  # float16: 65,536 rows counted to inf
    empty = total == 0
    return xp.where(empty, xp.full_like(total, math.nan), total), xp.where(empty, xp.ones_like(total), total)


@overload
def nll_loss(
    log_probs: Tensor[T, *S, C],
    labels: Tensor[Any, *S] | Tensor[Any, *tuple[Open, ...]],
    *,
    weight: Tensor[Any, C] | None = None,
    ignore_index: int = -100,
    reduction: Literal["mean", "sum"] = "mean",
) -> Tensor[T]: ...
@overload
def nll_loss(
    log_probs: Tensor[T, *S, C],
    labels: Tensor[Any, *S] | Tensor[Any, *tuple[Open, ...]],
    *,
    weight: Tensor[Any, C] | None = None,
    ignore_index: int = -100,
    reduction: Literal["none"],
) -> Tensor[T, *S]: ...
@overload
def nll_loss(
    log_probs: Tensor[T, *tuple[Open, ...]],
    labels: Tensor[Any, *S],
    *,
    weight: Tensor[Any, *tuple[Any, ...]] | None = None,
    ignore_index: int = -100,
    reduction: Literal["mean", "sum"] = "mean",
) -> Tensor[T]: ...
@overload
def nll_loss(
    log_probs: Tensor[T, *tuple[Open, ...]],
    labels: Tensor[Any, *S],
    *,
    weight: Tensor[Any, *tuple[Any, ...]] | None = None,
    ignore_index: int = -100,
    reduction: Literal["none"],
) -> Tensor[T, *tuple[Open, ...]]: ...
def nll_loss(
    log_probs: AnyTensor,
    labels: AnyTensor,
    *,
    weight: AnyTensor | None = None,
    ignore_index: int = -100,
    reduction: Reduction = "mean",
) -> Any:
    """Negative log-likelihood of integer ``labels (*S)`` under ``log_probs (*S, C)`` (a
    ``log_softmax``): ``-weight[y]·log_probs[y]`` per row. Rows labelled ``ignore_index``
    contribute 0 and are left out of the mean, which divides by the counted rows' total
    weight. d/dlog_probs = ``-weight[y]`` at the label, 0 elsewhere. PyTorch:
    ``F.nll_loss(log_probs, labels, weight=..., ignore_index=...)`` (classes on the last axis).

    Examples:
        >>> import shapegrad as sg
        >>> log_probs = sg.tensor([[-0.1, -2.4], [-1.0, -0.5]])
        >>> round(sg.losses.nll_loss(log_probs, sg.tensor([0, -100])).item(), 4)
        0.1
    """
    _check_labels("nll_loss", log_probs, labels)
    _check_reduction(reduction)
    require_float(log_probs, "nll_loss")
    classes = log_probs.shape[-1]
    _check_weight("nll_loss", weight, classes)
    xp = log_probs._backend.xp
    data = log_probs._data
    ids, keep, w_row = _row_weights("nll_loss", labels, weight, ignore_index, classes, data.dtype)
    # An ignored row is 0 whatever it holds: its pointed class may be -inf (a masked logit),
    # and -inf · 0 would make the loss NaN (PyTorch skips the row).
    picked = -xp.take_along_axis(data, ids, axis=-1)[..., 0] * w_row
    per_row = xp.where(keep, picked, xp.zeros_like(picked))
    divisor, grad_divisor = _mean_divisor(xp, w_row) if reduction == "mean" else (1.0, 1.0)
    out = per_row if reduction == "none" else cast_to(xp, wide_sum(xp, per_row) / divisor, per_row.dtype)
    saved = (ids, w_row, classes, reduction == "none", grad_divisor)
    # the rule reads the labels through ids, a view the engine's identity test misses
    return record(out, nll_loss_backward, (log_probs, labels), saved, log_probs._backend, watch=(labels,))


def nll_loss_backward(
    xp: Any, g: Any, ids: Any, w_row: Any, classes: int, per_row: bool, divisor: Any
) -> tuple[Any, ...]:
    picked = xp.astype(xp.arange(classes) == ids, w_row.dtype) * xp.expand_dims(w_row, axis=-1)
    scale = xp.expand_dims(g, axis=-1) if per_row else g / divisor
    return -picked * scale, None


@overload
def cross_entropy(
    logits: Tensor[T, *S, C],
    labels: Tensor[Any, *S] | Tensor[Any, *tuple[Open, ...]],
    *,
    label_smoothing: float = 0.0,
    weight: Tensor[Any, C] | None = None,
    ignore_index: int = -100,
    reduction: Literal["mean", "sum"] = "mean",
) -> Tensor[T]: ...
@overload
def cross_entropy(
    logits: Tensor[T, *S, C],
    labels: Tensor[Any, *S] | Tensor[Any, *tuple[Open, ...]],
    *,
    label_smoothing: float = 0.0,
    weight: Tensor[Any, C] | None = None,
    ignore_index: int = -100,
    reduction: Literal["none"],
) -> Tensor[T, *S]: ...
@overload
def cross_entropy(
    logits: Tensor[T, *S, C],
    labels: Tensor[T, *S, C],
    *,
    label_smoothing: float = 0.0,
    weight: Tensor[T, C] | None = None,
    reduction: Literal["mean", "sum"] = "mean",
) -> Tensor[T]: ...
@overload
def cross_entropy(
    logits: Tensor[T, *S, C],
    labels: Tensor[T, *S, C],
    *,
    label_smoothing: float = 0.0,
    weight: Tensor[T, C] | None = None,
    reduction: Literal["none"],
) -> Tensor[T, *S]: ...
@overload
def cross_entropy(
    logits: Tensor[T, *tuple[Open, ...]],
    labels: Tensor[Any, *S],
    *,
    label_smoothing: float = 0.0,
    weight: Tensor[Any, *tuple[Any, ...]] | None = None,
    ignore_index: int = -100,
    reduction: Literal["mean", "sum"] = "mean",
) -> Tensor[T]: ...
@overload
def cross_entropy(
    logits: Tensor[T, *tuple[Open, ...]],
    labels: Tensor[Any, *S],
    *,
    label_smoothing: float = 0.0,
    weight: Tensor[Any, *tuple[Any, ...]] | None = None,
    ignore_index: int = -100,
    reduction: Literal["none"],
) -> Tensor[T, *tuple[Open, ...]]: ...
def cross_entropy(
    logits: AnyTensor,
    labels: AnyTensor,
    *,
    label_smoothing: float = 0.0,
    weight: AnyTensor | None = None,
    ignore_index: int = -100,
    reduction: Reduction = "mean",
) -> Any:
    """Cross-entropy of ``logits (*S, C)`` against integer ``labels (*S)`` — one row per
    sample, or per token of a sequence model (``(B, L, C)`` against ``(B, L)``) — through a stable
    ``log_softmax``; ``label_smoothing`` mixes the one-hot target with the uniform one.
    d/dlogits = softmax(logits) - target, one fused op. PyTorch:
    ``F.cross_entropy(logits, labels, label_smoothing=..., weight=..., ignore_index=...)``.

    The classes are the **last** axis (PyTorch's are axis 1): a ``(B, C, H, W)`` segmentation
    output goes in as ``logits.permute(0, 2, 3, 1)``, with labels ``(B, H, W)``.

    ``weight`` scales each row by its label's class weight (the smoothing term by every
    class's); rows labelled ``ignore_index`` contribute 0, and the mean divides by the
    counted rows' total weight, as PyTorch. With class weights, or ignored rows on the host,
    the loss is made of ``log_softmax`` and :func:`nll_loss` (the fused path is for the plain
    case); on a device every row is masked in one op, with no wait to find them. Class
    weights take no gradient here (a traced one raises ``TapeError``, as PyTorch refuses one).

    Probability ("soft") targets: ``labels`` of floats of the logits' own shape ``(*S, C)``,
    a distribution over the classes per row (a distillation's teacher, mixup's mixed one-hot
    rows). Each row's loss is ``-Σ_c weight_c·q_c·log_softmax(logits)_c``, ``q`` smoothed to
    ``(1-ε)·q + ε/C`` by ``label_smoothing``; the mean divides by the number of rows (not
    by a total weight), as PyTorch's. The gradient reaches the logits, and the targets and
    the class weights where they are traced (PyTorch's gives them one too). ``ignore_index``
    has no meaning there and must stay -100 (PyTorch refuses it too). pyright tells the two
    kinds of target apart by their rank; an integer tensor of the logits' shape or a float
    one of one axis fewer raises ``DTypeError``/``ShapeError``.

    Examples:
        >>> import shapegrad as sg
        >>> logits = sg.tensor([[2.0, 0.0], [0.0, 2.0]])
        >>> round(sg.losses.cross_entropy(logits, sg.tensor([0, 1])).item(), 4)
        0.1269
        >>> round(sg.losses.cross_entropy(logits, sg.tensor([[0.9, 0.1], [0.5, 0.5]])).item(), 4)
        0.7269
    """
    if _is_probabilities(logits, labels):
        return _soft_cross_entropy(logits, labels, label_smoothing, weight, ignore_index, reduction)
    _check_labels("cross_entropy", logits, labels)
    _check_reduction(reduction)
    require_float(logits, "cross_entropy")
    _check_weight("cross_entropy", weight, logits.shape[-1])
    if weight is not None:
        return _weighted_cross_entropy(logits, labels, label_smoothing, weight, ignore_index, reduction)
    if getattr(labels._backend, "on_host", True):
        if _has_ignored(labels, ignore_index):
            return _weighted_cross_entropy(logits, labels, label_smoothing, weight, ignore_index, reduction)
    else:  # a device cannot tell without waiting whether a row is ignored: it masks them in this one op
        return _masked_cross_entropy(logits, labels, label_smoothing, ignore_index, reduction)
    n = logits.shape[-1]
    require_in_range(labels._backend, labels._data, 0, n, _label_range("cross_entropy", n, ignore_index))
    xp = logits._backend.xp
    data = logits._data
    ids = xp.expand_dims(labels._data, axis=-1)
    kernel = fused_kernel(logits._backend, "cross_entropy", data.dtype)
    fused = None if kernel is None else kernel(data, labels._data, label_smoothing)  # two row passes
    if fused is not None:
        logp, per_row = fused
    else:
        logp, per_row = _log_probs_and_losses(xp, data, ids, label_smoothing)
    count = per_row.size if reduction == "mean" else 1
    # float16: the batch's losses summed in float32 (a batch of 32,768 tokens at a loss of 2 is past 65,504)
    out = per_row if reduction == "none" else cast_to(xp, wide_sum(xp, per_row) / count, per_row.dtype)
    saved = (logp, ids, label_smoothing, reduction == "none", count)
    return record(out, cross_entropy_backward, (logits, labels), saved, logits._backend, watch=(labels,))


def _label_range(name: str, classes: int, ignore_index: int) -> str:
    """The message of a label out of range."""
    return f"{name}: labels must lie in [0, {classes}) for {classes} classes, or equal ignore_index={ignore_index}"


def _log_probs_and_losses(xp: Any, data: Any, ids: Any, smoothing: float) -> tuple[Any, Any]:
    """``(logp, per_row)``: the log-softmax of the logits ``data`` over the last axis (its sum of
    exponentials in float32 for float16), and each row's loss at its label column ``ids``,
    smoothed by ``smoothing``."""
    shifted = data - xp.max(data, axis=-1, keepdims=True)
    logp = shifted - cast_to(xp, xp.log(wide_sum(xp, xp.exp(shifted), -1, True)), data.dtype)
    per_row = -xp.take_along_axis(logp, ids, axis=-1)[..., 0]
    if smoothing:
        per_row = (1.0 - smoothing) * per_row - smoothing * xp.mean(logp, axis=-1)
    return logp, per_row


def _probs_minus_target(xp: Any, logp: Any, ids: Any, smoothing: float) -> Any:
    """``softmax - target`` per row, the target one-hot at ``ids`` and smoothed: the loss's
    gradient before its scale."""
    classes = logp.shape[-1]
    target = xp.astype(xp.arange(classes) == ids, logp.dtype)
    if smoothing:
        target = target * (1.0 - smoothing) + smoothing / classes
    return xp.exp(logp) - target


def _masked_cross_entropy(
    logits: AnyTensor, labels: AnyTensor, smoothing: float, ignore_index: int, reduction: Reduction
) -> Any:
    """Integer-label cross-entropy on a device, rows labelled ``ignore_index`` masked on the
    device (no wait to find them): one recorded op, where ``log_softmax`` and ``nll_loss``
    composed are two and some 40 device calls a step, each a launch with its host cost.
    Ignored rows give 0 whatever their logits hold (a masked row of -inf too) and are left
    out of the mean, which is NaN where no row counts (PyTorch's); their gradient is 0."""
    backend = logits._backend
    xp = backend.xp
    data, found = logits._data, labels._data
    n = data.shape[-1]
    keep = found != ignore_index
    ids = found * keep  # an ignored row points at class 0, read and then masked
    require_in_range(backend, ids, 0, n, _label_range("cross_entropy", n, ignore_index))
    ids = xp.expand_dims(ids, axis=-1)
    logp, per_row = _log_probs_and_losses(xp, data, ids, smoothing)
    per_row = xp.where(keep, per_row, 0.0)  # a where, not a product: an ignored row may be NaN
    if reduction == "mean":
        counted = xp.sum(keep, dtype=xp.float32 if is_half(xp, data.dtype) else data.dtype)
        divisor = xp.maximum(counted, 1.0)  # the gradient's: 0 where no row counts
        total = wide_sum(xp, per_row) / divisor
        out = cast_to(xp, xp.where(counted == 0, math.nan, total), per_row.dtype)
    else:
        divisor = 1
        out = per_row if reduction == "none" else cast_to(xp, wide_sum(xp, per_row), per_row.dtype)
    saved = (logp, ids, keep, smoothing, reduction == "none", divisor)
    return record(out, masked_cross_entropy_backward, (logits, labels), saved, backend, watch=(labels,))


def masked_cross_entropy_backward(
    xp: Any, g: Any, logp: Any, ids: Any, keep: Any, smoothing: float, per_row: bool, divisor: Any
) -> tuple[Any, ...]:
    scale = xp.expand_dims(g, axis=-1) if per_row else cast_to(xp, g / divisor, logp.dtype)
    return xp.where(xp.expand_dims(keep, axis=-1), _probs_minus_target(xp, logp, ids, smoothing) * scale, 0.0), None


def _is_probabilities(logits: AnyTensor, target: AnyTensor) -> bool:
    """Whether ``target`` holds class probabilities: floats of the logits' own shape."""
    return target.shape == logits.shape and target.backend_dtype_name().startswith(("float", "bfloat"))


def _soft_cross_entropy(
    logits: AnyTensor,
    probs: AnyTensor,
    smoothing: float,
    weight: AnyTensor | None,
    ignore_index: int,
    reduction: Reduction,
) -> Any:
    """Cross-entropy against probabilities ``probs (*S, C)``, PyTorch's formula for them:
    ``-Σ_c w_c·q_c·logp_c`` per row, ``q = (1-ε)·probs + ε/C``, the mean over rows. Made of
    traced ops, so that the targets and a traced class weight get their gradients."""
    from .ops.reductions import log_softmax

    _check_reduction(reduction)
    require_float(logits, "cross_entropy")
    if logits.ndim < 1:
        raise ShapeError(f"cross_entropy: logits {logits.shape} have no class axis")
    classes = logits.shape[-1]
    _check_weight("cross_entropy", weight, classes, differentiable=True)
    if ignore_index != -100:
        raise HyperparameterError(
            f"cross_entropy: ignore_index={ignore_index} has no meaning for probability targets (no row "
            "holds a label); PyTorch refuses it too. Give an ignored row zero probabilities instead"
        )
    if smoothing < 0.0 or smoothing > 1.0:
        raise HyperparameterError(f"cross_entropy: label_smoothing must lie in [0, 1], found {smoothing}")
    same_backend(logits, probs)
    logp: AnyTensor = log_softmax(logits, axis=-1)
    target: AnyTensor = probs * (1.0 - smoothing) + smoothing / classes if smoothing else probs
    terms: AnyTensor = logp * target
    if weight is not None:
        terms = terms * weight
    per_row: AnyTensor = -terms.sum(axis=-1)
    if reduction == "none":
        return per_row
    if reduction == "sum" or math.prod(per_row.shape):
        return per_row.sum() if reduction == "sum" else per_row.mean()
    return per_row.sum() * math.nan  # no row: the mean is NaN, as PyTorch's (0/0), without a warning


def _has_ignored(labels: AnyTensor, ignore_index: int) -> bool:
    """Whether a label equals ``ignore_index``: one comparison, on the host (a device would have
    to wait to tell, so there :func:`_masked_cross_entropy` masks every row instead)."""
    data = labels._data
    return data.size > 0 and bool(labels._backend.xp.any(data == ignore_index))


def _weighted_cross_entropy(
    logits: AnyTensor,
    labels: AnyTensor,
    smoothing: float,
    weight: AnyTensor | None,
    ignore_index: int,
    reduction: Reduction,
) -> Any:
    """Cross-entropy with class weights or ignored rows: ``(1-ε)·nll + ε/C · Σ_c w_c·(-logp_c)``
    per counted row, the smoothing term reduced like the nll one (PyTorch's formula)."""
    from .ops.elementwise import where as sg_where
    from .ops.reductions import log_softmax

    logp: AnyTensor = log_softmax(logits, axis=-1)
    nll: AnyTensor = nll_loss(logp, labels, weight=weight, ignore_index=ignore_index, reduction=reduction)
    if not smoothing:
        return nll
    xp = logits._backend.xp
    classes = logits.shape[-1]
    _, keep, w_row = _row_weights("cross_entropy", labels, weight, ignore_index, classes, logits._data.dtype)
    per_class = xp.ones((classes,), dtype=w_row.dtype) if weight is None else xp.astype(weight._data, w_row.dtype)
    backend = logits._backend
    masked = logp * wrap(per_class, backend)
    # -Σ w_c·logp_c on counted rows, 0 on ignored ones (a where, not a product with 0: an
    # ignored row's -inf logit would make it NaN)
    rows: AnyTensor = sg_where(wrap(keep, backend), -masked.sum(axis=-1), 0.0)
    if reduction == "mean":
        # the divisor that is 1 where no row counts: the nll term alone makes that mean NaN
        smooth: AnyTensor = rows.sum() / wrap(_mean_divisor(xp, w_row)[1], backend)
    else:
        smooth = rows if reduction == "none" else rows.sum()
    return nll * (1.0 - smoothing) + smooth * (smoothing / classes)


def cross_entropy_backward(
    xp: Any, g: Any, logp: Any, ids: Any, smoothing: float, per_row: bool, count: int
) -> tuple[Any, ...]:
    scale = xp.expand_dims(g, axis=-1) if per_row else g / count
    return _probs_minus_target(xp, logp, ids, smoothing) * scale, None


def _element_weight(name: str, arg: str, weight: AnyTensor | None, like: AnyTensor) -> AnyTensor | None:
    """``weight`` as an untraced tensor in ``like``'s dtype, checked to broadcast against
    ``like`` without growing it (PyTorch's rule), or None. A weight that would take a gradient
    is refused: PyTorch's binary cross-entropies are not differentiable in their weights
    (they raise for one that requires a gradient), and reading its values would drop it."""
    if weight is None:
        return None
    if wants_grad(weight) and not inside_no_grad():
        raise TapeError(
            f"{name}: {arg} is traced (or a trainable parameter), but the loss gives its {arg} no gradient "
            f"(PyTorch raises too: not differentiable with respect to {arg!r}); pass {arg}.detach()"
        )
    backend = same_backend(like, weight)
    try:
        fits = broadcast_shapes(weight.shape, like.shape) == like.shape
    except ValueError:
        fits = False
    if not fits:
        raise ShapeError(f"{name}: {arg} {weight.shape} does not broadcast to the elements' shape {like.shape}")
    return wrap(backend.xp.astype(weight._data, like._data.dtype), backend)


@overload
def binary_cross_entropy_with_logits(
    logits: Tensor[T, *S],
    targets: Tensor[Any, *S] | Tensor[Any, *tuple[Open, ...]],
    reduction: Literal["mean", "sum"] = "mean",
    *,
    weight: Tensor[NoTape, *tuple[Any, ...]] | None = None,
    pos_weight: Tensor[NoTape, *tuple[Any, ...]] | None = None,
) -> Tensor[T]: ...
@overload
def binary_cross_entropy_with_logits(
    logits: Tensor[T, *S],
    targets: Tensor[Any, *S] | Tensor[Any, *tuple[Open, ...]],
    reduction: Literal["none"],
    *,
    weight: Tensor[NoTape, *tuple[Any, ...]] | None = None,
    pos_weight: Tensor[NoTape, *tuple[Any, ...]] | None = None,
) -> Tensor[T, *S]: ...
@overload
def binary_cross_entropy_with_logits(
    logits: Tensor[T, *tuple[Open, ...]],
    targets: Tensor[Any, *S],
    reduction: Literal["mean", "sum"] = "mean",
    *,
    weight: Tensor[NoTape, *tuple[Any, ...]] | None = None,
    pos_weight: Tensor[NoTape, *tuple[Any, ...]] | None = None,
) -> Tensor[T]: ...
@overload
def binary_cross_entropy_with_logits(
    logits: Tensor[T, *tuple[Open, ...]],
    targets: Tensor[Any, *S],
    reduction: Literal["none"],
    *,
    weight: Tensor[NoTape, *tuple[Any, ...]] | None = None,
    pos_weight: Tensor[NoTape, *tuple[Any, ...]] | None = None,
) -> Tensor[T, *tuple[Open, ...]]: ...
def binary_cross_entropy_with_logits(
    logits: AnyTensor,
    targets: AnyTensor,
    reduction: Reduction = "mean",
    *,
    weight: AnyTensor | None = None,
    pos_weight: AnyTensor | None = None,
) -> Any:
    """Binary cross-entropy of probabilities ``sigmoid(logits)`` against ``targets`` in
    [0, 1], as ``softplus(x) - x·t`` so that no logit overflows. d/dx = σ(x) - t.
    PyTorch: ``F.binary_cross_entropy_with_logits``.

    ``weight`` scales each element's loss and broadcasts against the elements (a ``(C,)``
    vector weighs classes, a ``(B, 1)`` column samples); ``pos_weight`` scales the positive
    term, PyTorch's ``(1-t)·x - (1 + (pos_weight - 1)·t)·log σ(x)`` (``pos_weight > 1`` raises
    recall), and broadcasts the same way: one value per class is a ``(C,)`` vector, for the
    last axis. Both are keyword-only (PyTorch's ``weight`` is its third positional argument;
    here that is ``reduction``), untraced, and cast to the logits' dtype; neither gets a
    gradient (as in PyTorch, which refuses one that requires a gradient): a traced one raises
    ``TapeError``, one that does not broadcast ``ShapeError``. The mean divides by the number of
    elements, whatever the weights (as PyTorch).

    Examples:
        >>> import shapegrad as sg
        >>> logits, targets = sg.tensor([[0.0, 2.0]]), sg.tensor([[1.0, 0.0]])
        >>> loss = sg.losses.binary_cross_entropy_with_logits(logits, targets, pos_weight=sg.tensor([3.0, 1.0]))
        >>> round(loss.item(), 4)
        2.1032
    """
    name = "binary_cross_entropy_with_logits"
    _same_shape(name, logits, targets)
    _check_reduction(reduction)
    w = _element_weight(name, "weight", weight, logits)
    pw = _element_weight(name, "pos_weight", pos_weight, logits)
    if pw is None:
        elements: AnyTensor = logits.softplus() - logits * targets
    else:
        # PyTorch's formula, -log σ(x) as softplus(-x): finite at any logit
        positive: AnyTensor = (pw - 1.0) * targets + 1.0
        elements = (1.0 - targets) * logits + positive * (-logits).softplus()
    if w is not None:
        elements = elements * w
    return _reduce(elements, reduction)


def binary_cross_entropy_backward(
    xp: Any, g: Any, p: Any, t: Any, log_p: Any, log_q: Any, need: tuple[bool, bool]
) -> tuple[Any, ...]:
    # PyTorch's rule: (p - t) / max(p(1-p), 1e-12), finite at p = 0 or 1; d/dt = log(1-p) - log p.
    gp = g * (p - t) / xp.maximum(p * (1 - p), 1e-12) if need[0] else None
    return gp, (g * (log_q - log_p) if need[1] else None)


def _clamped_log(xp: Any, x: Any) -> Any:
    """``max(log x, -100)``, as PyTorch's binary cross-entropy clamps it (no -inf at 0)."""
    positive = x > 0
    return xp.where(positive, xp.maximum(xp.log(xp.where(positive, x, xp.ones_like(x))), -100.0), -100.0)


@overload
def binary_cross_entropy(
    probs: Tensor[T, *S],
    targets: Tensor[Any, *S] | Tensor[Any, *tuple[Open, ...]],
    reduction: Literal["mean", "sum"] = "mean",
    *,
    weight: Tensor[NoTape, *tuple[Any, ...]] | None = None,
) -> Tensor[T]: ...
@overload
def binary_cross_entropy(
    probs: Tensor[T, *S],
    targets: Tensor[Any, *S] | Tensor[Any, *tuple[Open, ...]],
    reduction: Literal["none"],
    *,
    weight: Tensor[NoTape, *tuple[Any, ...]] | None = None,
) -> Tensor[T, *S]: ...
@overload
def binary_cross_entropy(
    probs: Tensor[T, *tuple[Open, ...]],
    targets: Tensor[Any, *S],
    reduction: Literal["mean", "sum"] = "mean",
    *,
    weight: Tensor[NoTape, *tuple[Any, ...]] | None = None,
) -> Tensor[T]: ...
@overload
def binary_cross_entropy(
    probs: Tensor[T, *tuple[Open, ...]],
    targets: Tensor[Any, *S],
    reduction: Literal["none"],
    *,
    weight: Tensor[NoTape, *tuple[Any, ...]] | None = None,
) -> Tensor[T, *tuple[Open, ...]]: ...
def binary_cross_entropy(
    probs: AnyTensor, targets: AnyTensor, reduction: Reduction = "mean", *, weight: AnyTensor | None = None
) -> Any:
    """Binary cross-entropy ``-(t·log p + (1-t)·log(1-p))`` of probabilities ``probs`` in
    [0, 1] (``ShapeError`` outside it) against ``targets``; each log is clamped at -100, so a
    certain wrong answer costs 100, not inf. d/dp = (p - t) / max(p(1-p), 1e-12). Prefer
    :func:`binary_cross_entropy_with_logits` on logits (stable without the clamp).
    PyTorch: ``F.binary_cross_entropy``.

    ``weight`` (keyword-only, untraced) scales each element's loss and broadcasts against the
    elements, as :func:`binary_cross_entropy_with_logits`'s; it gets no gradient (a traced one
    raises ``TapeError``, as PyTorch refuses one), and the mean divides by the element count.

    Examples:
        >>> import shapegrad as sg
        >>> probs, targets = sg.tensor([[0.9, 0.2]]), sg.tensor([[1.0, 0.0]])
        >>> round(sg.losses.binary_cross_entropy(probs, targets, weight=sg.tensor([2.0, 1.0])).item(), 4)
        0.2169
    """
    _same_shape("binary_cross_entropy", probs, targets)
    _check_reduction(reduction)
    require_float(probs, "binary_cross_entropy")
    w = _element_weight("binary_cross_entropy", "weight", weight, probs)
    backend = same_backend(probs, targets)
    message = "binary_cross_entropy: probs must lie in [0, 1]"
    require_in_range(backend, probs._data, 0.0, 1.0, message, closed=True)
    xp = backend.xp
    p = probs._data
    t = xp.astype(targets._data, p.dtype)
    log_p, log_q = _clamped_log(xp, p), _clamped_log(xp, 1 - p)
    elements = -(t * log_p + (1 - t) * log_q)
    saved = (p, t, log_p, log_q, (wants_grad(probs), wants_grad(targets)))
    loss: AnyTensor = record(elements, binary_cross_entropy_backward, (probs, targets), saved, backend)
    return _reduce(loss if w is None else loss * w, reduction)


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
    PyTorch: ``F.kl_div(log_pred, target, reduction="batchmean", log_target=...)``.

    The default differs from PyTorch's: ``F.kl_div(x, t)`` without ``reduction`` is
    ``"mean"``, the mean over every element, which PyTorch itself warns is not the KL
    divergence (it is ``"batchmean"`` divided by the number of classes, and PyTorch plans to
    make ``"mean"`` mean ``"batchmean"``). A port of a call without ``reduction`` gives
    another number here: pass ``reduction="mean"`` for PyTorch's, or keep the default and
    rescale the loss weight (a factor of the class count).

    Examples:
        >>> import shapegrad as sg
        >>> log_pred = sg.tensor([[-1.2, -0.4, -1.9], [-3.1, -3.1, -0.1]])
        >>> target = sg.tensor([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])
        >>> batchmean = sg.losses.kl_div(log_pred, target).item()
        >>> round(batchmean / sg.losses.kl_div(log_pred, target, reduction="mean").item(), 4)  # 3 classes
        3.0
    """
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


if not TYPE_CHECKING:  # hidden from the checkers: PyTorch's names stay unknown attributes to them

    def __getattr__(name: str) -> NoReturn:
        """PyTorch's names (``F.mse_loss``): an ``AttributeError`` naming shapegrad's spelling;
        called only for a name the module lacks."""
        missing_module_attribute(__name__, name)
