"""Normalization as single ops: ``layer_norm``.

LayerNorm written with the element-wise ops is nine recorded ops and as many backward rules,
each a pass over the activations; as one op its forward is six passes and its backward one
formula, ``dx = rstd · (ĝ - mean(ĝ) - x̂ · mean(ĝ · x̂))`` with ``ĝ = g · weight``.
"""

from __future__ import annotations

from typing import Any

from .._autodiff import wants_grad
from .._backend import fused_kernel, same_backend
from .._errors import ShapeError
from .._tensor import AnyTensor, Tensor, record
from .._typevars import N, S, T
from ._toolkit import require_float

__all__ = ["layer_norm"]


def layer_norm_backward(
    xp: Any, g: Any, xhat: Any, rstd: Any, weight: Any, need: tuple[bool, bool, bool], affine: bool
) -> tuple[Any, ...]:
    leading = tuple(range(g.ndim - 1))
    scaled = g * weight if affine else g
    gx = None
    if need[0]:
        mean_g = xp.mean(scaled, axis=-1, keepdims=True)
        mean_gx = xp.mean(scaled * xhat, axis=-1, keepdims=True)
        gx = rstd * (scaled - mean_g - xhat * mean_gx)
    if not affine:
        return (gx,)
    gw = xp.sum(g * xhat, axis=leading) if need[1] else None
    gb = xp.sum(g, axis=leading) if need[2] else None
    return gx, gw, gb


def layer_norm(
    x: Tensor[T, *S, N],
    weight: Tensor[Any, N] | None = None,
    bias: Tensor[Any, N] | None = None,
    eps: float = 1e-5,
) -> Tensor[T, *S, N]:
    """``(x - mean) / √(var + eps) · weight + bias`` over the last axis, as one op (the
    variance is the biased one, as PyTorch). PyTorch: ``F.layer_norm(x, (N,), weight, bias, eps)``.
    Either may be None, as PyTorch's: without a weight the scale is 1, without a bias the
    shift 0 (``LayerNorm(n, bias=False)``); one alone is the normalization, then ``· weight``
    or ``+ bias``.

    Examples:
        >>> import shapegrad as sg
        >>> y = sg.layer_norm(sg.tensor([[1.0, 2.0, 3.0]]))
        >>> [round(v, 4) for v in y.numpy()[0].tolist()]
        [-1.2247, 0.0, 1.2247]
    """
    require_float(x, "layer_norm")
    data = x._data
    size = data.shape[-1] if data.ndim else 0
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None:
            same_backend(x, t)
            if t.shape != (size,):
                raise ShapeError(f"layer_norm: {name} of shape {t.shape} for input {x.shape}; expected ({size},)")
    if data.ndim == 0:
        raise ShapeError("layer_norm expects a tensor of rank >= 1, found rank 0")
    if weight is None and bias is not None:  # the shift alone: PyTorch's weight=None
        return layer_norm(x, None, None, eps) + bias
    if bias is None and weight is not None:  # the scale alone: PyTorch's bias=None
        return layer_norm(x, None, None, eps) * weight
    w = None if weight is None else weight._data
    b = None if bias is None else bias._data
    kernel = fused_kernel(x._backend, "layer_norm", data.dtype)
    fused = None if kernel is None else kernel(data, w, b, eps)  # one pass per row
    if fused is not None:
        out, xhat, rstd = fused
    else:
        xp = x._backend.xp
        centred = data - xp.mean(data, axis=-1, keepdims=True)
        var = xp.mean(centred * centred, axis=-1, keepdims=True)
        rstd = 1.0 / xp.sqrt(var + eps)
        xhat = centred * rstd
        out = None if w is None or b is None else xhat * w + b
    if weight is None or bias is None or out is None:
        return record(xhat, layer_norm_backward, (x,), (xhat, rstd, None, (True, False, False), False), x._backend)
    need = (wants_grad(x), wants_grad(weight), wants_grad(bias))
    inputs: tuple[AnyTensor, ...] = (x, weight, bias)
    return record(out, layer_norm_backward, inputs, (xhat, rstd, w, need, True), x._backend)
