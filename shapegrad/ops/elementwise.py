"""Element-wise ops: arithmetic, activations, comparisons, selection.

Each primitive's forward sits beside its ``*_backward`` rule; the engine reduces broadcast
gradients back to each operand's shape, so the rules are written for equal shapes.
"""

from __future__ import annotations

import math
from typing import Any, Literal as L, cast

import numpy as np

from .._autodiff import wants_grad
from .._backend import as_backend_array, fused_kernel, same_backend
from .._errors import DTypeError, ShapeError
from .._tensor import AnyTensor, Tensor, record, wrap
from .._typevars import S, T

__all__ = [
    "abs",
    "add",
    "astype",
    "clamp",
    "compare",
    "div",
    "equal",
    "exp",
    "gelu",
    "greater",
    "greater_equal",
    "leaky_relu",
    "less",
    "less_equal",
    "log",
    "maximum",
    "minimum",
    "mul",
    "neg",
    "not_equal",
    "pow",
    "relu",
    "sigmoid",
    "softplus",
    "sqrt",
    "square",
    "sub",
    "tanh",
    "where",
]

Scalar = int | float

_float_dtypes: dict[tuple[str, Any], bool] = {}


def require_float(x: AnyTensor, op: str) -> None:
    """Raise ``DTypeError`` unless ``x`` holds floating-point values."""
    dtype = x._data.dtype
    # Keyed by backend too: dtypes of two libraries must never be compared with each other.
    key = (x._backend.name, dtype)
    ok = _float_dtypes.get(key)
    if ok is None:
        ok = _float_dtypes[key] = x._backend.dtype_name(dtype).startswith("float")
    if not ok:
        raise DTypeError(
            f"{op} expects a floating-point tensor, found dtype "
            f"{x._backend.dtype_name(dtype)} with shape {x.shape}; convert it with .astype('float32')"
        )


def shape_clash(op: str, a: AnyTensor, b: AnyTensor) -> ShapeError:
    """The error for operands that do not broadcast, naming both shapes and the first clash."""
    sa, sb = a.shape, b.shape
    detail = ""
    for i in range(1, min(len(sa), len(sb)) + 1):
        if sa[-i] != sb[-i] and sa[-i] != 1 and sb[-i] != 1:
            detail = f"; axis {-i} is {sa[-i]} vs {sb[-i]}"
            break
    return ShapeError(
        f"{op}: shapes {sa} and {sb} do not broadcast: expected equal sizes, or 1, at each trailing axis{detail}"
    )


# NumPy float dtype -> the integer type of its width, for keep_where's select.
_SAME_WIDTH_INT = {np.dtype(f"float{8 * n}"): np.dtype(f"int{8 * n}") for n in (2, 4, 8)}


def keep_where(xp: Any, mask: Any, values: Any) -> Any:
    """``values`` where ``mask`` is true, else 0: a select, never a product with the mask.

    A product would turn an infinite (or NaN) value at a masked-out place into NaN where
    PyTorch, which selects, gives 0 (``sqrt(clamp(d2, min=0))`` at a slightly negative
    ``d2`` sends ``inf`` into clamp's rule). NumPy's ``where`` with a mask that changes at
    random runs some 20x slower than a product (3.6 ms against 0.18 ms for a million
    float32: a branch per element), so for NumPy arrays the float's bit pattern is
    multiplied, as an integer of its width, by the 0/1 mask: an exact select at the
    speed of the product. Other arrays (CuPy's, where ``where``
    is one fast kernel; strict Array-API ones) go through ``xp.where``.
    """
    if type(values) is np.ndarray:
        bits = _SAME_WIDTH_INT.get(values.dtype)
        if bits is not None:
            return (values.view(bits) * mask.astype(bits)).view(values.dtype)  # int × int: as fast as float
    return xp.where(mask, values, xp.zeros((), dtype=values.dtype))


def operand(value: Any, like: AnyTensor, op: str) -> AnyTensor | Scalar:
    """The other operand of a binary op with ``like``, as a Python number or a Tensor.

    NumPy scalars and 0-d arrays become Python numbers (they do not promote a float32
    tensor, as in PyTorch); arrays (NumPy's or the backend's) become untraced tensors on
    ``like``'s backend, copied so that refilling the array later cannot change a gradient.
    """
    if isinstance(value, Tensor):
        return cast(AnyTensor, value)
    if type(value) in (int, float, bool):  # not NumPy's float64, a float subclass that promotes
        return cast(Scalar, value)
    backend = like._backend
    ndim = getattr(value, "ndim", None)
    if ndim == 0 and hasattr(value, "item") and not backend.is_array(value):
        number = value.item()  # NumPy scalars and 0-d arrays: keep int as int, float as float
        if isinstance(number, (int, float)):
            return number
        raise DTypeError(f"{op} expects a real number, found {number!r}")
    if ndim is not None:  # arrays, and a device's 0-d arrays (no transfer to the host)
        return wrap(as_backend_array(backend, value, None), backend)
    raise DTypeError(
        f"{op} expects a Tensor or a Python number, found {type(value).__name__} (NumPy arrays are accepted too)"
    )


class _Number:
    """A number as an operand of a binary op, in the inputs the engine records: no node and
    no parameter, so its gradient goes nowhere (and the rule, told by ``need``, does not
    compute it). One instance serves every op: the value itself is in the saved values."""

    __slots__ = ()
    _data = _node = _param = _backend = None
    shape = ()


_NUMBER = _Number()


def _binary(op: str, a: Any, b: Any, rule: Any, forward: Any) -> Any:
    """One path for every binary op: tensor with tensor, or with a number on either side.
    The number is a constant operand of the same rule, which gets ``need`` (whether each
    side wants a gradient) and computes only those. ``forward`` is a function of the two
    raw operands, or the name of the backend's function."""
    # Written for speed (it runs for every arithmetic op): no cast() calls, a Python float
    # taken as it is, same_backend's check inline.
    left: Any = a
    right: Any = b
    if isinstance(a, Tensor):
        if not isinstance(b, Tensor) and type(b) is not float:
            right = operand(b, left, op)
    elif isinstance(b, Tensor):
        if type(a) is not float:
            left = operand(a, right, op)
    else:
        raise DTypeError(f"{op} expects at least one Tensor operand, found {type(a).__name__} and {type(b).__name__}")
    left_is_tensor, right_is_tensor = isinstance(left, Tensor), isinstance(right, Tensor)
    if left_is_tensor and right_is_tensor:
        tensors: Any = (left, right)
        backend = left._backend
        if right._backend is not backend:
            same_backend(left, right)  # raises, naming both
        x, y = left._data, right._data
    elif left_is_tensor:
        tensors = (left, _NUMBER)
        backend = left._backend
        x, y = left._data, right
    else:
        tensors = (_NUMBER, right)
        backend = right._backend
        x, y = left, right._data
    if forward.__class__ is str:
        forward = getattr(backend.xp, forward)
    try:
        out = forward(x, y)
    except ValueError:
        raise shape_clash(op, left, right) from None
    first, second = tensors
    if first._node is None and second._node is None and first._param is None and second._param is None:
        return record(out, rule, tensors, (), backend)  # nothing to differentiate: no node, nothing saved
    need = (left_is_tensor and wants_grad(first), right_is_tensor and wants_grad(second))
    table = _READS.get(rule)
    # Which operands' memory the rule reads, by what it is asked for (a number is never watched).
    reads = None if table is None else table[need[0] + 2 * need[1] + 4 * left_is_tensor + 8 * right_is_tensor]
    return record(out, rule, tensors, (x, y, out, need), backend, reads)


def _reads_nothing(need: tuple[bool, bool]) -> tuple[bool, bool, bool]:
    return (False, False, False)


def _reads_the_other(need: tuple[bool, bool]) -> tuple[bool, bool, bool]:
    return (need[1], need[0], False)  # x·y: the gradient of one side is the other side


def _reads_for_div(need: tuple[bool, bool]) -> tuple[bool, bool, bool]:
    return (False, need[0] or need[1], need[1])  # g / y, and -(g / y) · out


# --------------------------------------------------------------------------- add, sub
def add_backward(xp: Any, g: Any, x: Any, y: Any, out: Any, need: tuple[bool, bool]) -> tuple[Any, ...]:
    return (g if need[0] else None, g if need[1] else None)


def _add(x: Any, y: Any) -> Any:
    return x + y


def add(a: Any, b: Any) -> Any:
    """``a + b`` with broadcasting. d/da = 1, d/db = 1. PyTorch: ``torch.add``."""
    return _binary("add", a, b, add_backward, _add)


def sub_backward(xp: Any, g: Any, x: Any, y: Any, out: Any, need: tuple[bool, bool]) -> tuple[Any, ...]:
    return (g if need[0] else None, -g if need[1] else None)


def _sub(x: Any, y: Any) -> Any:
    return x - y


def sub(a: Any, b: Any) -> Any:
    """``a - b`` with broadcasting. d/da = 1, d/db = -1. PyTorch: ``torch.sub``."""
    return _binary("sub", a, b, sub_backward, _sub)


# --------------------------------------------------------------------------- mul, div
def mul_backward(xp: Any, g: Any, x: Any, y: Any, out: Any, need: tuple[bool, bool]) -> tuple[Any, ...]:
    return (g * y if need[0] else None, g * x if need[1] else None)


def _mul(x: Any, y: Any) -> Any:
    return x * y


def mul(a: Any, b: Any) -> Any:
    """``a * b`` with broadcasting. d/da = b, d/db = a. PyTorch: ``torch.mul``."""
    return _binary("mul", a, b, mul_backward, _mul)


def div_backward(xp: Any, g: Any, x: Any, y: Any, out: Any, need: tuple[bool, bool]) -> tuple[Any, ...]:
    gx = g / y if need[0] else None
    return gx, (-(g / y) * out if need[1] else None)


def _div(x: Any, y: Any) -> Any:
    return x / y


def div(a: Any, b: Any) -> Any:
    """``a / b`` with broadcasting. d/da = 1/b, d/db = -a/b². PyTorch: ``torch.div``."""
    return _binary("div", a, b, div_backward, _div)


# --------------------------------------------------------------------------- pow
def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float))


def pow_backward(xp: Any, g: Any, x: Any, y: Any, out: Any, need: tuple[bool, bool]) -> tuple[Any, ...]:
    # As PyTorch: d/dx is 0 where the exponent is 0 (x**0 is constant, even at x = 0, where
    # y·x^(y-1) would be 0·inf); d/dy is 0 where x = 0 (and, here, where x < 0, whose log
    # is not real).
    gx = gy = None
    if need[0]:
        if _is_number(y):
            gx = xp.zeros_like(g) if y == 0 else (g * 2 * x if y == 2 else g * y * x ** (y - 1))
        else:
            safe_x = xp.where(y == 0, xp.ones_like(x), x)
            gx = xp.where(y == 0, xp.zeros_like(out), g * y * safe_x ** (y - 1))
    if need[1]:
        if _is_number(x):
            gy = xp.zeros_like(g) if x == 0 else g * out * math.log(x)
        else:
            safe = xp.where(x > 0, x, xp.ones_like(x))
            gy = xp.where(x > 0, g * out * xp.log(safe), xp.zeros_like(out))
    return gx, gy


def _pow(x: Any, y: Any) -> Any:
    return x**y


def pow(x: Any, exponent: Any) -> Any:
    """``x ** exponent`` with broadcasting. d/dx = exponent · x^(exponent-1),
    d/dexponent = x^exponent · log x. PyTorch: ``torch.pow``."""
    return _binary("pow", x, exponent, pow_backward, _pow)


# --------------------------------------------------------------------------- maximum, minimum
def maximum_minimum_backward(xp: Any, g: Any, x: Any, y: Any, out: Any, need: tuple[bool, bool]) -> tuple[Any, ...]:
    """One rule for ``maximum`` and ``minimum``: the gradient goes to the operand equal to
    the result; where both are (a tie), each gets half, as in PyTorch."""
    x_won, y_won = out == x, out == y
    share = 1 - 0.5 * xp.astype(x_won & y_won, g.dtype)  # 1, or ½ at a tie
    gx = keep_where(xp, x_won, g) * share if need[0] else None
    return gx, (keep_where(xp, y_won, g) * share if need[1] else None)


def maximum(a: Any, b: Any) -> Any:
    """Element-wise larger of ``a`` and ``b``; ties split the gradient. PyTorch: ``torch.maximum``."""
    return _binary("maximum", a, b, maximum_minimum_backward, "maximum")


def minimum(a: Any, b: Any) -> Any:
    """Element-wise smaller of ``a`` and ``b``; ties split the gradient. PyTorch: ``torch.minimum``."""
    return _binary("minimum", a, b, maximum_minimum_backward, "minimum")


# --------------------------------------------------------------------------- unary
def _unary(x: AnyTensor, out: Any, rule: Any, saved: tuple[Any, ...]) -> Any:
    return record(out, rule, (x,), saved, x._backend)


def neg_backward(xp: Any, g: Any) -> tuple[Any, ...]:
    return (-g,)


def neg(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``-x``. d/dx = -1. PyTorch: ``torch.neg``."""
    return _unary(x, -x._data, neg_backward, ())


def exp_backward(xp: Any, g: Any, y: Any) -> tuple[Any, ...]:
    return (g * y,)


def exp(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``e ** x``. d/dx = e ** x. PyTorch: ``torch.exp``."""
    require_float(x, "exp")
    y = x._backend.xp.exp(x._data)
    return _unary(x, y, exp_backward, (y,))


def log_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (g / x,)


def log(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Natural logarithm. d/dx = 1/x. PyTorch: ``torch.log``."""
    require_float(x, "log")
    data = x._data
    return _unary(x, x._backend.xp.log(data), log_backward, (data,))


def square_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (g * 2 * x,)


def square(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``x²``, one pass and no exponent. d/dx = 2x. PyTorch: ``torch.square``."""
    data = x._data
    return _unary(x, data * data, square_backward, (data,))


def sqrt_backward(xp: Any, g: Any, y: Any) -> tuple[Any, ...]:
    return (g / (2 * y),)


def sqrt(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Square root. d/dx = 1 / (2 sqrt(x)). PyTorch: ``torch.sqrt``."""
    require_float(x, "sqrt")
    y = x._backend.xp.sqrt(x._data)
    return _unary(x, y, sqrt_backward, (y,))


def abs_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (g * xp.sign(x),)


def abs(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``|x|``. d/dx = sign(x) (0 at 0, as PyTorch). PyTorch: ``torch.abs``."""
    data = x._data
    return _unary(x, x._backend.xp.abs(data), abs_backward, (data,))


# Activations. A backend may fuse an activation's forward or gradient into one kernel: the
# op asks for its forward by name (``fused_kernel``), and ``record`` binds the rule's kernel
# (same name, same saved values) in the rule's place. The ``xp`` math below stays the
# reference the fused kernels are tested against.


def tanh_backward(xp: Any, g: Any, y: Any) -> tuple[Any, ...]:
    return (g * (1 - y * y),)


def tanh(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Hyperbolic tangent. d/dx = 1 - tanh²(x). PyTorch: ``torch.tanh``."""
    require_float(x, "tanh")
    backend = x._backend
    y = backend.xp.tanh(x._data)
    return _unary(x, y, tanh_backward, (y,))


def sigmoid_backward(xp: Any, g: Any, y: Any) -> tuple[Any, ...]:
    return (g * y * (1 - y),)


def stable_sigmoid(xp: Any, x: Any) -> Any:
    """``1 / (1 + e^-x)`` with full relative precision on both sides: ``e^-|x|`` never
    overflows, and for x < 0 the result is ``e^x / (1 + e^x)``, which keeps the tiny values
    that ``1 - something`` (or ``(1 + tanh(x/2)) / 2``) would round to 0."""
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


def sigmoid(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``1 / (1 + e^-x)``, computed without overflow and with full relative precision for
    negative x (see :func:`stable_sigmoid`). d/dx = σ(x)(1 - σ(x)). PyTorch: ``torch.sigmoid``."""
    require_float(x, "sigmoid")
    backend = x._backend
    forward = fused_kernel(backend, "sigmoid", x._data.dtype)
    y = forward(x._data) if forward is not None else stable_sigmoid(backend.xp, x._data)
    return _unary(x, y, sigmoid_backward, (y,))


def relu_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (keep_where(xp, x > 0, g),)


def relu(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``max(x, 0)``. d/dx = 1 where x > 0, else 0. PyTorch: ``torch.relu``."""
    data = x._data
    return _unary(x, x._backend.xp.maximum(data, 0.0), relu_backward, (data,))


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
    return _unary(x, out, leaky_relu_backward, (data, negative_slope))


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
        from .math import gelu_exact

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
    return _unary(x, out, gelu_backward, (data, t))


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
    return _unary(x, out, softplus_backward, (data,))


def clamp_backward(xp: Any, g: Any, x: Any, low: Any, high: Any) -> tuple[Any, ...]:
    inside = xp.ones_like(x, dtype=xp.bool)
    if low is not None:
        inside = inside & (x >= low)
    if high is not None:
        inside = inside & (x <= high)
    return (keep_where(xp, inside, g),)


def clamp(x: Tensor[T, *S], min: float | None = None, max: float | None = None) -> Tensor[T, *S]:
    """Values limited to ``[min, max]``; d/dx = 1 inside the bounds (inclusive), 0 outside.
    PyTorch: ``torch.clamp``."""
    data = x._data
    out = x._backend.xp.clip(data, min, max)
    return _unary(x, out, clamp_backward, (data, min, max))


def astype_backward(xp: Any, g: Any, dtype: Any) -> tuple[Any, ...]:
    return (xp.astype(g, dtype),)


def astype(x: Tensor[T, *S], dtype: str) -> Tensor[T, *S]:
    """The values converted to ``dtype``; the gradient is converted back."""
    backend = x._backend
    data = x._data
    out = backend.xp.astype(data, backend.dtype(dtype))
    return _unary(x, out, astype_backward, (data.dtype,))


# --------------------------------------------------------------------------- selection
def where_backward(xp: Any, g: Any, cond: Any, n_tensors: int, left_is_tensor: bool) -> tuple[Any, ...]:
    zero = xp.zeros_like(g)
    left, right = xp.where(cond, g, zero), xp.where(cond, zero, g)
    if n_tensors == 2:
        return left, right
    return (left,) if left_is_tensor else (right,)


def where(cond: AnyTensor, a: AnyTensor | float, b: AnyTensor | float) -> Any:
    """``a`` where ``cond`` is true, else ``b``; each side gets the gradient where chosen.
    PyTorch: ``torch.where``."""
    backend = cond._backend
    tensors = tuple(t for t in (a, b) if isinstance(t, Tensor))
    for t in tensors:
        same_backend(cond, t)
    raw = [t._data if isinstance(t, Tensor) else t for t in (a, b)]
    try:
        out = backend.xp.where(cond._data, raw[0], raw[1])
    except ValueError:
        shapes = ", ".join(str(getattr(t, "shape", "scalar")) for t in (cond, a, b))
        raise ShapeError(f"where: shapes {shapes} do not broadcast") from None
    saved = (cond._data, len(tensors), isinstance(a, Tensor))
    return record(out, where_backward, tensors, saved, backend)


def compare(a: AnyTensor, b: Any, how: str) -> Any:
    """An untraced boolean tensor from an element-wise comparison."""
    xp = a._backend.xp
    right = operand(b, a, how)
    other = right._data if isinstance(right, Tensor) else right
    if isinstance(right, Tensor):
        same_backend(a, right)
    try:
        out = getattr(xp, how)(a._data, other)
    except ValueError:
        assert isinstance(right, Tensor)
        raise shape_clash(how, a, right) from None
    return wrap(out, a._backend)


_REFLECTED = {
    "less": "greater",
    "less_equal": "greater_equal",
    "greater": "less",
    "greater_equal": "less_equal",
    "equal": "equal",
    "not_equal": "not_equal",
}


def less(a: Any, b: Any) -> Any:
    """``a < b`` element-wise: an untraced boolean tensor. PyTorch: ``torch.lt``."""
    return _compare_either(a, b, "less")


def less_equal(a: Any, b: Any) -> Any:
    """``a <= b`` element-wise: an untraced boolean tensor. PyTorch: ``torch.le``."""
    return _compare_either(a, b, "less_equal")


def greater(a: Any, b: Any) -> Any:
    """``a > b`` element-wise: an untraced boolean tensor. PyTorch: ``torch.gt``."""
    return _compare_either(a, b, "greater")


def greater_equal(a: Any, b: Any) -> Any:
    """``a >= b`` element-wise: an untraced boolean tensor. PyTorch: ``torch.ge``."""
    return _compare_either(a, b, "greater_equal")


def equal(a: Any, b: Any) -> Any:
    """``a == b`` element-wise: an untraced boolean tensor. PyTorch: ``torch.eq``."""
    return _compare_either(a, b, "equal")


def not_equal(a: Any, b: Any) -> Any:
    """``a != b`` element-wise: an untraced boolean tensor. PyTorch: ``torch.ne``."""
    return _compare_either(a, b, "not_equal")


def _compare_either(a: Any, b: Any, how: str) -> Any:
    if isinstance(a, Tensor):
        return compare(cast(AnyTensor, a), b, how)
    return compare(cast(AnyTensor, b), a, _REFLECTED[how])


def _matmul(a: Any, b: Any) -> Any:
    from .linalg import matmul

    left: Any = operand(a, cast(AnyTensor, b), "matmul")
    right: Any = operand(b, left, "matmul")
    return cast(Any, matmul)(left, right)


UFUNC_OPS: dict[str, Any] = {
    "add": add,
    "subtract": sub,
    "multiply": mul,
    "true_divide": div,
    "divide": div,
    "power": pow,
    "maximum": maximum,
    "minimum": minimum,
    "matmul": _matmul,
    "less": less,
    "less_equal": less_equal,
    "greater": greater,
    "greater_equal": greater_equal,
    "equal": equal,
    "not_equal": not_equal,
}
"""NumPy ufuncs that NumPy calls for an operator with a Tensor on one side
(``ndarray * t``, ``np.float64(2) < t``), mapped to the shapegrad op that keeps the tape."""


# Which operands (and the result) each binary rule reads, by what it is asked for: the
# engine counts writes into those alone (a write into an addend changes no gradient).
# Rules not listed read everything they save.
def _reads_table(reads: Any) -> tuple[tuple[bool, bool, bool], ...]:
    """``reads`` for every (need, which sides are tensors), indexed as ``_binary`` does."""
    table: list[tuple[bool, bool, bool]] = []
    for index in range(16):
        need = (bool(index & 1), bool(index & 2))
        left_read, right_read, out_read = reads(need)
        table.append((left_read and bool(index & 4), right_read and bool(index & 8), out_read))
    return tuple(table)


_READS: dict[Any, tuple[tuple[bool, bool, bool], ...]] = {
    add_backward: _reads_table(_reads_nothing),
    sub_backward: _reads_table(_reads_nothing),
    mul_backward: _reads_table(_reads_the_other),
    div_backward: _reads_table(_reads_for_div),
}
