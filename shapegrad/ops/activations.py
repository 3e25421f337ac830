"""Activations: ``relu``, ``gelu``, ``sigmoid``, ``tanh``, ``silu``, ``softplus``, ``elu``, ... each
forward beside its backward rule."""

from __future__ import annotations

import math
from typing import Any, Literal as L

from .._backend import fused_kernel
from .._errors import DTypeError
from .._tensor import AnyTensor, Tensor
from .._typevars import S, T
from ._toolkit import keep_where, require_float, stable_sigmoid, unary
from .math import erf_values

__all__ = [
    "elu",
    "gelu",
    "gelu_exact",
    "hardtanh",
    "leaky_relu",
    "log_sigmoid",
    "mish",
    "relu",
    "selu",
    "sigmoid",
    "silu",
    "softplus",
    "tanh",
]


def tanh_backward(xp: Any, g: Any, y: Any) -> tuple[Any, ...]:
    return (g * (1 - y * y),)


def tanh(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Hyperbolic tangent. d/dx = 1 - tanh²(x). PyTorch: ``torch.tanh``."""
    require_float(x, "tanh")
    backend = x._backend
    y = backend.xp.tanh(x._data)
    return unary(x, y, tanh_backward, (y,))


def sigmoid_backward(xp: Any, g: Any, y: Any) -> tuple[Any, ...]:
    return (g * y * (1 - y),)


def sigmoid(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``1 / (1 + e^-x)``, computed without overflow and with full relative precision for
    negative x (see :func:`stable_sigmoid`). d/dx = σ(x)(1 - σ(x)). PyTorch: ``torch.sigmoid``."""
    require_float(x, "sigmoid")
    backend = x._backend
    forward = fused_kernel(backend, "sigmoid", x._data.dtype)
    y = forward(x._data) if forward is not None else stable_sigmoid(backend.xp, x._data)
    return unary(x, y, sigmoid_backward, (y,))


def relu_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (keep_where(xp, x > 0, g),)


def relu(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``max(x, 0)``. d/dx = 1 where x > 0, else 0. PyTorch: ``torch.relu``."""
    data = x._data
    forward = fused_kernel(x._backend, "relu", data.dtype)  # the same values in one pass
    # an int 0 (not 0.0): an integer tensor's relu stays integer, as PyTorch's
    out = forward(data) if forward is not None else x._backend.xp.maximum(data, 0)
    return unary(x, out, relu_backward, (data,))


def leaky_relu_backward(xp: Any, g: Any, x: Any, slope: float) -> tuple[Any, ...]:
    return (g * (xp.astype(x > 0, g.dtype) * (1 - slope) + slope),)


def leaky_relu(x: Tensor[T, *S], negative_slope: float = 0.01) -> Tensor[T, *S]:
    """``x`` where x > 0, else ``negative_slope · x``. PyTorch: ``F.leaky_relu``."""
    require_float(x, "leaky_relu")
    data = x._data
    backend = x._backend
    forward = fused_kernel(backend, "leaky_relu", data.dtype)
    if forward is not None:
        out = forward(data, data.dtype.type(negative_slope))
    else:
        out = data * (backend.xp.astype(data > 0, data.dtype) * (1 - negative_slope) + negative_slope)
    return unary(x, out, leaky_relu_backward, (data, negative_slope))


_GELU_C = math.sqrt(2.0 / math.pi)


def gelu_backward(xp: Any, g: Any, x: Any, t: Any) -> tuple[Any, ...]:
    # Beyond |x| = 10, tanh has saturated (1 - t² is exactly 0 in every float type), so
    # clipping x there changes nothing but keeps x² finite in float16 (0 · inf would be NaN).
    xc = xp.clip(x, -10.0, 10.0)
    inner_grad = _GELU_C * (1 + 3 * 0.044715 * xc * xc)
    return (g * (0.5 * (1 + t) + 0.5 * xc * (1 - t * t) * inner_grad),)


def gelu(x: Tensor[T, *S], approximate: L["tanh", "none"] = "tanh") -> Tensor[T, *S]:
    """GELU. ``approximate="tanh"`` (the default here, fused on CuPy):
    ``0.5 x (1 + tanh(√(2/π)(x + 0.044715 x³)))``, PyTorch's ``F.gelu(x, approximate="tanh")``;
    ``approximate="none"``: the exact ``x Φ(x)``, PyTorch's default ``F.gelu(x)``."""
    if approximate == "none":
        return gelu_exact(x)
    if approximate != "tanh":
        raise DTypeError(f"gelu: approximate must be 'tanh' or 'none', found {approximate!r}")
    require_float(x, "gelu")
    data = x._data
    backend = x._backend
    forward = fused_kernel(backend, "gelu", data.dtype)
    if forward is not None:
        out, t = forward(data)
    else:
        # tanh has saturated beyond |x| = 10; clipping there keeps x³ finite in float16.
        xc = backend.xp.clip(data, -10.0, 10.0)
        t = backend.xp.tanh(_GELU_C * (xc + 0.044715 * xc * xc * xc))
        out = 0.5 * data * (1 + t)
    return unary(x, out, gelu_backward, (data, t))


def softplus_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (g * stable_sigmoid(xp, x),)


def softplus(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``log(1 + e^x)`` as ``max(x, 0) + log1p(e^-|x|)``, finite for any x.
    d/dx = σ(x). PyTorch: ``F.softplus``."""
    require_float(x, "softplus")
    backend = x._backend
    data = x._data
    forward = fused_kernel(backend, "softplus", data.dtype)
    if forward is not None:
        out = forward(data)
    else:
        xp = backend.xp
        out = xp.maximum(data, 0.0) + xp.log1p(xp.exp(-xp.abs(data)))
    return unary(x, out, softplus_backward, (data,))


# --------------------------------------------------------------------------- activations
def silu_backward(xp: Any, g: Any, x: Any, s: Any) -> tuple[Any, ...]:
    return (g * (s * (1 + x * (1 - s))),)


def silu(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``x · σ(x)`` (swish). d/dx = σ(x)(1 + x(1 - σ(x))). PyTorch: ``F.silu``."""
    require_float(x, "silu")
    data = x._data
    s = stable_sigmoid(x._backend.xp, data)
    return unary(x, data * s, silu_backward, (data, s))


def mish_backward(xp: Any, g: Any, x: Any, t: Any) -> tuple[Any, ...]:
    return (g * (t + x * (1 - t * t) * stable_sigmoid(xp, x)),)


def mish(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``x · tanh(softplus(x))``. d/dx = t + x(1 - t²)σ(x) with t = tanh(softplus(x)).
    PyTorch: ``F.mish``."""
    require_float(x, "mish")
    xp = x._backend.xp
    data = x._data
    t = xp.tanh(xp.maximum(data, 0.0) + xp.log1p(xp.exp(-xp.abs(data))))
    return unary(x, data * t, mish_backward, (data, t))


def elu_backward(xp: Any, g: Any, x: Any, y: Any, alpha: float, scale: float) -> tuple[Any, ...]:
    # Each branch selected after its product: at x = +inf the unused branch's factor
    # y + alpha·scale is inf, which times a 0 mask would be NaN.
    positive = x > 0
    return (keep_where(xp, positive, g * scale) + keep_where(xp, ~positive, g * (y + alpha * scale)),)


def _elu(x: AnyTensor, alpha: float, scale: float, name: str) -> Any:
    require_float(x, name)
    xp = x._backend.xp
    data = x._data
    negative = xp.minimum(data, 0.0)
    y = scale * (xp.maximum(data, 0.0) + alpha * xp.expm1(negative))
    return unary(x, y, elu_backward, (data, y, alpha, scale))


def elu(x: Tensor[T, *S], alpha: float = 1.0) -> Tensor[T, *S]:
    """``x`` where x > 0, else ``alpha (e^x - 1)``. d/dx = 1 or ``alpha e^x``.
    PyTorch: ``F.elu``."""
    return _elu(x, alpha, 1.0, "elu")


_SELU_ALPHA = 1.6732632423543772848170429916717


_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``scale · elu(x, alpha)`` with the self-normalising constants. PyTorch: ``F.selu``."""
    return _elu(x, _SELU_ALPHA, _SELU_SCALE, "selu")


def hardtanh_backward(xp: Any, g: Any, x: Any, low: float, high: float) -> tuple[Any, ...]:
    return (keep_where(xp, (x > low) & (x < high), g),)


def hardtanh(x: Tensor[T, *S], min_val: float = -1.0, max_val: float = 1.0) -> Tensor[T, *S]:
    """``x`` clipped to ``[min_val, max_val]``; gradient 1 strictly inside, 0 outside and at
    the bounds themselves, as ``F.hardtanh`` (whose gradient at a bound is 0, unlike
    ``torch.clamp``'s and :func:`clamp`'s, 1). PyTorch: ``F.hardtanh``."""
    data = x._data
    return unary(x, x._backend.xp.clip(data, min_val, max_val), hardtanh_backward, (data, min_val, max_val))


def log_sigmoid_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (g * stable_sigmoid(xp, -x),)


def log_sigmoid(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``log σ(x) = -softplus(-x)``, finite and precise for any x (unlike
    ``log(sigmoid(x))``). d/dx = σ(-x). PyTorch: ``F.logsigmoid``."""
    require_float(x, "log_sigmoid")
    xp = x._backend.xp
    data = x._data
    y = xp.minimum(data, 0.0) - xp.log1p(xp.exp(-xp.abs(data)))
    return unary(x, y, log_sigmoid_backward, (data,))


def gelu_exact_backward(xp: Any, g: Any, x: Any, cdf: Any, density: Any) -> tuple[Any, ...]:
    # cdf: Φ(x), and density: exp(-x²/2), when the forward pass saved them (else computed
    # here; a fused forward kernel keeps only x, its backward kernel recomputes both).
    if cdf is None:
        cdf = 0.5 * (1.0 + erf_values(xp, x / math.sqrt(2.0)))
    if density is None:
        density = xp.exp(-0.5 * x * x)
    return (g * (cdf + x * density / math.sqrt(2.0 * math.pi)),)


def gelu_exact(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Exact GELU, ``x · Φ(x) = ½ x (1 + erf(x/√2))``: PyTorch's default ``F.gelu``.
    d/dx = Φ(x) + x φ(x)."""
    require_float(x, "gelu")
    data = x._data
    kernel = fused_kernel(x._backend, "gelu_exact", data.dtype)
    if kernel is not None:  # one pass (a kernel may keep Φ and the density, or neither)
        out, cdf, density = kernel(data)
        return unary(x, out, gelu_exact_backward, (data, cdf, density))
    cdf = 0.5 * (1.0 + erf_values(x._backend.xp, data / math.sqrt(2.0), x._backend))
    return unary(x, data * cdf, gelu_exact_backward, (data, cdf, None))
