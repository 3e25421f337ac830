"""Element-wise math beyond arithmetic: trigonometric and hyperbolic functions, logarithms,
rounding, more activations, and the boolean tests.

Each primitive's forward sits beside its ``*_backward`` rule (``y`` is the op's result
where the rule reuses it). Rounding functions are piecewise constant: their gradient is 0,
as in PyTorch. The boolean tests (``isnan``, ``logical_and``, ...) return untraced
boolean tensors, like comparisons.
"""

from __future__ import annotations

import math
from typing import Any, cast

from .._autodiff import NoTape
from .._backend import fused_kernel, same_backend
from .._tensor import AnyTensor, Tensor, wrap
from .._typevars import S, T
from ._toolkit import binary, boolean_unary, require_float, unary
from .elementwise import astype

__all__ = [
    "arccos",
    "arcsin",
    "arctan",
    "arctan2",
    "ceil",
    "cos",
    "cosh",
    "erf",
    "erfc",
    "expm1",
    "floor",
    "isfinite",
    "isinf",
    "isnan",
    "log10",
    "log1p",
    "log2",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "reciprocal",
    "round",
    "rsqrt",
    "sign",
    "sin",
    "sinh",
    "tan",
    "trunc",
]


def _float_unary(x: AnyTensor, name: str, rule: Any, *, save_result: bool) -> Any:
    require_float(x, name)
    data = x._data
    y = getattr(x._backend.xp, name)(data)
    return unary(x, y, rule, (y,) if save_result else (data,))


# --------------------------------------------------------------------------- trigonometry
def sin_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (g * xp.cos(x),)


def sin(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Sine. d/dx = cos x. PyTorch: ``torch.sin``."""
    return _float_unary(x, "sin", sin_backward, save_result=False)


def cos_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (-g * xp.sin(x),)


def cos(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Cosine. d/dx = -sin x. PyTorch: ``torch.cos``."""
    return _float_unary(x, "cos", cos_backward, save_result=False)


def tan_backward(xp: Any, g: Any, y: Any) -> tuple[Any, ...]:
    return (g * (1 + y * y),)


def tan(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Tangent. d/dx = 1 + tan² x. PyTorch: ``torch.tan``."""
    return _float_unary(x, "tan", tan_backward, save_result=True)


def asin_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (g / xp.sqrt(1 - x * x),)


def arcsin(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Inverse sine on [-1, 1]. d/dx = 1/√(1 - x²). PyTorch: ``torch.asin``."""
    return _float_unary(x, "asin", asin_backward, save_result=False)


def acos_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (-g / xp.sqrt(1 - x * x),)


def arccos(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Inverse cosine on [-1, 1]. d/dx = -1/√(1 - x²). PyTorch: ``torch.acos``."""
    return _float_unary(x, "acos", acos_backward, save_result=False)


def atan_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (g / (1 + x * x),)


def arctan(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Inverse tangent. d/dx = 1/(1 + x²). PyTorch: ``torch.atan``."""
    return _float_unary(x, "atan", atan_backward, save_result=False)


def atan2_backward(xp: Any, g: Any, y: Any, x: Any, out: Any, need: tuple[bool, bool]) -> tuple[Any, ...]:
    # At the origin, where the angle has no derivative, the gradient is 0 (PyTorch's), not 0/0.
    r2 = x * x + y * y
    scale = xp.where(r2 == 0, xp.zeros_like(r2), g) / xp.where(r2 == 0, xp.ones_like(r2), r2)
    return (scale * x if need[0] else None, -scale * y if need[1] else None)


def arctan2(y: Tensor[T, *S], x: Tensor[Any, *S] | float) -> Tensor[T, *S]:
    """The angle of the point ``(x, y)``, in (-π, π]. d/dy = x/(x²+y²), d/dx = -y/(x²+y²).
    An integer or boolean tensor is read in the other tensor's float dtype, float32 where
    neither is a float tensor (as PyTorch; not NumPy's float64, or float16 for booleans).
    PyTorch: ``torch.atan2``."""
    y_name = y._backend.dtype_name(y._data.dtype)
    x_name = x._backend.dtype_name(x._data.dtype) if isinstance(x, Tensor) else None
    if not y_name.startswith("float") or (x_name is not None and not x_name.startswith("float")):
        floats = [n for n in (y_name, x_name) if n is not None and n.startswith("float")]
        target = floats[0] if floats else "float32"
        if not y_name.startswith("float"):
            y = astype(y, target)
        if isinstance(x, Tensor) and not cast(str, x_name).startswith("float"):
            x = astype(x, target)
    return binary("arctan2", y, x, atan2_backward, "atan2")


def sinh_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (g * xp.cosh(x),)


def sinh(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Hyperbolic sine. d/dx = cosh x. PyTorch: ``torch.sinh``."""
    return _float_unary(x, "sinh", sinh_backward, save_result=False)


def cosh_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (g * xp.sinh(x),)


def cosh(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Hyperbolic cosine. d/dx = sinh x. PyTorch: ``torch.cosh``."""
    return _float_unary(x, "cosh", cosh_backward, save_result=False)


# --------------------------------------------------------------------------- logs and powers
def log1p_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (g / (1 + x),)


def log1p(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``log(1 + x)``, precise near 0. d/dx = 1/(1 + x). PyTorch: ``torch.log1p``."""
    return _float_unary(x, "log1p", log1p_backward, save_result=False)


def expm1_backward(xp: Any, g: Any, y: Any) -> tuple[Any, ...]:
    return (g * (y + 1),)


def expm1(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``e^x - 1``, precise near 0. d/dx = e^x. PyTorch: ``torch.expm1``."""
    return _float_unary(x, "expm1", expm1_backward, save_result=True)


def log2_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (g / (x * math.log(2.0)),)


def log2(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Base-2 logarithm. d/dx = 1/(x ln 2). PyTorch: ``torch.log2``."""
    return _float_unary(x, "log2", log2_backward, save_result=False)


def log10_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (g / (x * math.log(10.0)),)


def log10(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Base-10 logarithm. d/dx = 1/(x ln 10). PyTorch: ``torch.log10``."""
    return _float_unary(x, "log10", log10_backward, save_result=False)


def rsqrt_backward(xp: Any, g: Any, y: Any) -> tuple[Any, ...]:
    return (-0.5 * g * y * y * y,)


def rsqrt(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``1/√x``. d/dx = -½ x^(-3/2). PyTorch: ``torch.rsqrt``."""
    require_float(x, "rsqrt")
    y = 1 / x._backend.xp.sqrt(x._data)
    return unary(x, y, rsqrt_backward, (y,))


def reciprocal_backward(xp: Any, g: Any, y: Any) -> tuple[Any, ...]:
    return (-g * y * y,)


def reciprocal(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``1/x``. d/dx = -1/x². PyTorch: ``torch.reciprocal``."""
    require_float(x, "reciprocal")
    y = 1 / x._data
    return unary(x, y, reciprocal_backward, (y,))


# --------------------------------------------------------------------------- rounding
def piecewise_constant_backward(xp: Any, g: Any) -> tuple[Any, ...]:
    return (xp.zeros_like(g),)


def _constant_pieces(x: AnyTensor, name: str) -> Any:
    try:
        out = getattr(x._backend.xp, name)(x._data)
    except TypeError as error:  # NumPy has no boolean sign
        raise boolean_unary(name, x, error, "x.astype('int64') is its sign (0 or 1)") from None
    return unary(x, out, piecewise_constant_backward, ())


def sign(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """-1, 0 or 1. Its gradient is 0 (as PyTorch). PyTorch: ``torch.sign``."""
    return _constant_pieces(x, "sign")


def floor(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Round down. Gradient 0. PyTorch: ``torch.floor``."""
    return _constant_pieces(x, "floor")


def ceil(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Round up. Gradient 0. PyTorch: ``torch.ceil``."""
    return _constant_pieces(x, "ceil")


def round(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Round half to even. Gradient 0. A boolean tensor raises ``DTypeError``, as PyTorch
    refuses it (NumPy would give float16). PyTorch: ``torch.round``."""
    if x._backend.dtype_name(x._data.dtype) == "bool":
        raise boolean_unary("round", x, TypeError("round"), "it is whole already; x.astype('float32') for numbers")
    return _constant_pieces(x, "round")


def trunc(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Round toward 0. Gradient 0. PyTorch: ``torch.trunc``."""
    return _constant_pieces(x, "trunc")


# --------------------------------------------------------------------------- boolean tests
def _test(x: AnyTensor, name: str) -> Any:
    return wrap(getattr(x._backend.xp, name)(x._data), x._backend)


def isnan(x: Tensor[Any, *S]) -> Tensor[NoTape, *S]:
    """Where ``x`` is NaN (an untraced boolean tensor)."""
    return _test(x, "isnan")


def isinf(x: Tensor[Any, *S]) -> Tensor[NoTape, *S]:
    """Where ``x`` is ±inf (an untraced boolean tensor)."""
    return _test(x, "isinf")


def isfinite(x: Tensor[Any, *S]) -> Tensor[NoTape, *S]:
    """Where ``x`` is neither NaN nor infinite (an untraced boolean tensor)."""
    return _test(x, "isfinite")


def _logical(a: AnyTensor, b: AnyTensor, name: str) -> Any:
    backend = same_backend(a, b)
    xp = backend.xp
    return wrap(getattr(xp, name)(xp.astype(a._data, xp.bool), xp.astype(b._data, xp.bool)), backend)


def logical_and(a: Tensor[Any, *S], b: Tensor[Any, *S]) -> Tensor[NoTape, *S]:
    """Element-wise ``a and b`` of truth values (untraced booleans)."""
    return _logical(a, b, "logical_and")


def logical_or(a: Tensor[Any, *S], b: Tensor[Any, *S]) -> Tensor[NoTape, *S]:
    """Element-wise ``a or b`` of truth values (untraced booleans)."""
    return _logical(a, b, "logical_or")


def logical_xor(a: Tensor[Any, *S], b: Tensor[Any, *S]) -> Tensor[NoTape, *S]:
    """Element-wise ``a != b`` of truth values (untraced booleans)."""
    return _logical(a, b, "logical_xor")


def logical_not(x: Tensor[Any, *S]) -> Tensor[NoTape, *S]:
    """Element-wise ``not x`` of truth values (untraced booleans)."""
    xp = x._backend.xp
    return wrap(xp.logical_not(xp.astype(x._data, xp.bool)), x._backend)


# --------------------------------------------------------------------------- the error function
# The Array API has no erf. erfc(z), z >= 0, is a Chebyshev expansion (Numerical Recipes,
# 3rd ed., 6.2.2: t = 2/(2+z), Clenshaw over 28 coefficients), ~1e-13 relative; erf is
# 1 - erfc beyond 0.5 and a Taylor series below, where 1 - erfc would lose its digits.
_ERFC_CHEBYSHEV = (
    -1.3026537197817094, 6.4196979235649026e-1, 1.9476473204185836e-2, -9.561514786808631e-3,
    -9.46595344482036e-4, 3.66839497852761e-4, 4.2523324806907e-5, -2.0278578112534e-5,
    -1.624290004647e-6, 1.303655835580e-6, 1.5626441722e-8, -8.5238095915e-8, 6.529054439e-9,
    5.059343495e-9, -9.91364156e-10, -2.27365122e-10, 9.6467911e-11, 2.394038e-12,
    -6.886027e-12, 8.94487e-13, 3.13092e-13, -1.12708e-13, 3.81e-16, 7.106e-15,
    -1.523e-15, -9.4e-17, 1.21e-16, -2.8e-17,
)  # fmt: skip
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erfc_nonnegative(xp: Any, z: Any, terms: int = len(_ERFC_CHEBYSHEV)) -> Any:
    # ``terms`` coefficients: all 28 for float64; the first 14 (the rest < 1e-9) for float32.
    t = 2.0 / (2.0 + z)
    ty = 4.0 * t - 2.0
    d = xp.zeros_like(z)
    dd = xp.zeros_like(z)
    for c in _ERFC_CHEBYSHEV[terms - 1 : 0 : -1]:
        d, dd = ty * d - dd + c, d
    return t * xp.exp(-z * z + 0.5 * (_ERFC_CHEBYSHEV[0] + ty * d) - dd)


def erf_values(xp: Any, x: Any, backend: Any = None) -> Any:
    """erf of an array, in its dtype (the shared math behind ``erf`` and exact GELU). A
    backend's ``"erf"`` kernel is used where it has one (NumPy: SciPy's, when installed;
    CuPy: ``cupyx.scipy.special``); this xp math is the reference and the fallback."""
    if backend is not None:
        kernel = fused_kernel(backend, "erf", x.dtype)
        if kernel is not None:  # SciPy's erf computes float16 in float64: keep the dtype
            return xp.astype(kernel(x), x.dtype, copy=False)
    single = x.dtype == xp.float32 or x.dtype == getattr(xp, "float16", None)
    z = xp.abs(x)
    tail = 1.0 - _erfc_nonnegative(xp, z, 14 if single else len(_ERFC_CHEBYSHEV))
    x2 = x * x
    term = x
    series = x
    for n in range(1, 7 if single else 13):  # |x| < 0.5: the Taylor series, to the dtype's precision
        term = -term * x2 / n
        series = series + term / (2 * n + 1)
    return xp.where(z < 0.5, series * _TWO_OVER_SQRT_PI, xp.where(x < 0, -tail, tail))


def erf_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (g * _TWO_OVER_SQRT_PI * xp.exp(-x * x),)


def erf(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """The error function. d/dx = 2/√π · e^(-x²). PyTorch: ``torch.erf``."""
    require_float(x, "erf")
    data = x._data
    return unary(x, erf_values(x._backend.xp, data, x._backend), erf_backward, (data,))


def erfc_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (-g * _TWO_OVER_SQRT_PI * xp.exp(-x * x),)


def erfc(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``1 - erf(x)``, precise in the tail (x large). d/dx = -2/√π · e^(-x²).
    PyTorch: ``torch.erfc``."""
    require_float(x, "erfc")
    xp = x._backend.xp
    data = x._data
    upper = _erfc_nonnegative(xp, xp.abs(data))
    return unary(x, xp.where(data < 0, 2.0 - upper, upper), erfc_backward, (data,))
