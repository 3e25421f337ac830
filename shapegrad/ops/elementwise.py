"""Element-wise ops: arithmetic, activations, comparisons, selection.

Each primitive's forward sits beside its ``*_backward`` rule; the engine reduces broadcast
gradients back to each operand's shape, so the rules are written for equal shapes.
"""

from __future__ import annotations

import math
import operator
from typing import Any, cast

import numpy as np

from .. import _hooks
from .._autodiff import NoTape
from .._backend import same_backend
from .._errors import DTypeError, ShapeError
from .._tensor import AnyTensor, Tensor, record, wrap
from .._typevars import S, T
from ._toolkit import (
    FLOAT64,
    READS,
    binary,
    boolean_unary,
    described,
    forward_error,
    keep_where,
    negative_power,
    operand,
    reads_table,
    require_float,
    torch_promoted,
    unary,
)

__all__ = [
    "abs",
    "add",
    "astype",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "clamp",
    "clone",
    "compare",
    "div",
    "equal",
    "exp",
    "floor_divide",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "log",
    "maximum",
    "minimum",
    "mul",
    "neg",
    "not_equal",
    "pow",
    "remainder",
    "sqrt",
    "square",
    "sub",
    "where",
]


def _reads_nothing(need: tuple[bool, bool]) -> tuple[bool, bool, bool]:
    return (False, False, False)


def _reads_the_other(need: tuple[bool, bool]) -> tuple[bool, bool, bool]:
    return (need[1], need[0], False)  # x·y: the gradient of one side is the other side


def _reads_for_remainder(need: tuple[bool, bool]) -> tuple[bool, bool, bool]:
    return (need[1], need[1], False)  # g, and -g · (x // y)


def _reads_for_div(need: tuple[bool, bool]) -> tuple[bool, bool, bool]:
    return (False, need[0] or need[1], need[1])  # g / y, and -(g / y) · out


# --------------------------------------------------------------------------- add, sub
def add_backward(xp: Any, g: Any, x: Any, y: Any, out: Any, need: tuple[bool, bool]) -> tuple[Any, ...]:
    return (g if need[0] else None, g if need[1] else None)


def add(a: Any, b: Any) -> Any:
    """``a + b`` with broadcasting. d/da = 1, d/db = 1. PyTorch: ``torch.add``."""
    # The forwards are the operator module's functions: C calls, no Python frame per op.
    return binary("add", a, b, add_backward, operator.add)


def sub_backward(xp: Any, g: Any, x: Any, y: Any, out: Any, need: tuple[bool, bool]) -> tuple[Any, ...]:
    return (g if need[0] else None, -g if need[1] else None)


def sub(a: Any, b: Any) -> Any:
    """``a - b`` with broadcasting. d/da = 1, d/db = -1. PyTorch: ``torch.sub``."""
    return binary("sub", a, b, sub_backward, operator.sub)


# --------------------------------------------------------------------------- mul, div
def mul_backward(xp: Any, g: Any, x: Any, y: Any, out: Any, need: tuple[bool, bool]) -> tuple[Any, ...]:
    return (g * y if need[0] else None, g * x if need[1] else None)


def mul(a: Any, b: Any) -> Any:
    """``a * b`` with broadcasting. d/da = b, d/db = a. PyTorch: ``torch.mul``."""
    return binary("mul", a, b, mul_backward, operator.mul)


def div_backward(xp: Any, g: Any, x: Any, y: Any, out: Any, need: tuple[bool, bool]) -> tuple[Any, ...]:
    gx = g / y if need[0] else None
    return gx, (-(g / y) * out if need[1] else None)


def _div(x: Any, y: Any) -> Any:
    return x / y  # typeshed leaves operator.truediv's types unknown (pyright strict)


def div(a: Any, b: Any) -> Any:
    """``a / b`` with broadcasting. d/da = 1/b, d/db = -a/b². PyTorch: ``torch.div``."""
    return binary("div", a, b, div_backward, _div)


# --------------------------------------------------------------------------- floor_divide, remainder
# ``idx // ncols`` and ``idx % ncols`` as PyTorch's: floor division and the remainder with the
# divisor's sign (Python's), on integers and floats. Two booleans are refused, as PyTorch does
# (NumPy would give int8); an integer division by zero raises, as PyTorch does (NumPy gives 0
# and a warning), which costs one look at an integer divisor (a device sync on a GPU).
_DIVISION = {"floor_divide": "//", "remainder": "%"}


def _division_kind(value: Any) -> str:
    """``"bool"``, ``"int"`` or ``"float"`` (any other dtype) for an operand of ``//`` or ``%``."""
    if isinstance(value, Tensor):
        tensor = cast(AnyTensor, value)
        name = tensor._backend.dtype_name(tensor._data.dtype)
        return "bool" if name == "bool" else "int" if name.startswith(("int", "uint")) else "float"
    return "bool" if type(value) is bool else "int" if type(value) is int else "float"


def _zero_division(how: str, left: Any, right: Any) -> DTypeError:
    return DTypeError(
        f"{_DIVISION[how]} (sg.{how}): integer division by zero: found {described(left)} divided by "
        f"{described(right)} with a zero in the divisor; integers have no inf or nan to give (PyTorch raises "
        "too, NumPy gives 0). Convert first, e.g. a.astype('float32'), or keep the zeros out of the divisor, "
        "e.g. sg.where(b == 0, 1, b)"
    )


def _division_operands(a: Any, b: Any, how: str) -> tuple[Any, Any]:
    """``a`` and ``b`` as ``binary`` takes them, after PyTorch's refusals: two booleans, and an
    integer division by zero."""
    if isinstance(a, Tensor):
        like = cast(AnyTensor, a)
    elif isinstance(b, Tensor):
        like = cast(AnyTensor, b)
    else:
        return a, b  # binary names the error
    left, right = operand(a, like, how), operand(b, like, how)
    kinds = (_division_kind(left), _division_kind(right))
    if kinds == ("bool", "bool"):
        raise DTypeError(
            f"{_DIVISION[how]} (sg.{how}) is not defined for two booleans, as in PyTorch: found {described(left)} "
            f"and {described(right)}; convert first, e.g. a.astype('int64')"
        )
    if "float" in kinds:
        return left, right  # a float result: inf or nan where the divisor is 0, as PyTorch's
    if not isinstance(right, Tensor):
        if right == 0:
            raise _zero_division(how, left, right)
        return left, right
    divisor = right
    xp = divisor._backend.xp
    recorder = _hooks.recorder
    if recorder is not None:  # sg.compile: checked now and at every replay
        recorder.check(xp.any(divisor._data == 0), str(_zero_division(how, left, right)), DTypeError)
    elif bool(xp.any(divisor._data == 0)):
        raise _zero_division(how, left, right)
    return left, right


def floor_divide_backward(xp: Any, g: Any, x: Any, y: Any, out: Any, need: tuple[bool, bool]) -> tuple[Any, ...]:
    return (xp.zeros_like(g) if need[0] else None, xp.zeros_like(g) if need[1] else None)


def _floordiv(x: Any, y: Any) -> Any:
    return x // y  # as _div, for operator.floordiv


def floor_divide(a: Any, b: Any) -> Any:
    """``a // b`` with broadcasting: ``floor(a / b)``, on integers and floats. d/da = 0,
    d/db = 0 (a step function; PyTorch's ``torch.div(a, b, rounding_mode="floor")`` gives 0,
    ``torch.floor_divide`` raises at backward). Two booleans, and an integer division by zero,
    raise ``DTypeError``. PyTorch: ``torch.floor_divide``."""
    left, right = _division_operands(a, b, "floor_divide")
    return binary("floor_divide", left, right, floor_divide_backward, _floordiv)


def remainder_backward(xp: Any, g: Any, x: Any, y: Any, out: Any, need: tuple[bool, bool]) -> tuple[Any, ...]:
    return (g if need[0] else None, -g * (x // y) if need[1] else None)


def _mod(x: Any, y: Any) -> Any:
    return x % y  # as _div, for operator.mod


def remainder(a: Any, b: Any) -> Any:
    """``a % b`` with broadcasting: ``a - b · floor(a / b)``, with the divisor's sign (Python's),
    on integers and floats. d/da = 1, d/db = -floor(a / b). Two booleans, and an integer
    division by zero, raise ``DTypeError``. PyTorch: ``torch.remainder``."""
    left, right = _division_operands(a, b, "remainder")
    return binary("remainder", left, right, remainder_backward, _mod)


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
            gy = g * out * math.log(x) if x > 0 else xp.zeros_like(g)  # as the tensor case below
        else:
            safe = xp.where(x > 0, x, xp.ones_like(x))
            gy = xp.where(x > 0, g * out * xp.log(safe), xp.zeros_like(out))
    return gx, gy


def _pow(x: Any, y: Any) -> Any:
    if _hooks.recorder is not None:  # sg.compile records the step: see _negative_power_check
        _negative_power_check(_hooks.recorder, x, y)
    return x**y  # as _div, for operator.pow


def _negative_power_check(recorder: Any, x: Any, y: Any) -> None:
    """Where an integer base meets a signed integer exponent array, ``sg.compile``'s recorder
    gets a check that the exponent holds no negative value, asked again at every replay: NumPy
    raises there (``binary`` turns it into ``negative_power``'s error), and a replay runs NumPy's
    power itself, which would raise its bare ``ValueError``. Only such pairs are checked: a
    replay of any other power (float base, unsigned or number exponent, whose value the
    signature fixes) runs no check. NumPy raises only where the result has elements."""
    if not isinstance(y, np.ndarray):
        return
    exponent = cast("np.ndarray[Any, Any]", y)
    if exponent.dtype.kind != "i":
        return
    if isinstance(x, np.ndarray):
        array = cast("np.ndarray[Any, Any]", x)
        if array.dtype.kind not in "biu":
            return
        base, shape = described(array, str(array.dtype)), array.shape
    elif isinstance(x, int):
        base, shape = described(x), ()
    else:
        return
    if 0 in np.broadcast_shapes(shape, exponent.shape):
        return
    error = negative_power("pow", base, described(exponent, str(exponent.dtype)))
    recorder.check(np.any(exponent < 0), str(error), DTypeError)


def pow(x: Any, exponent: Any) -> Any:
    """``x ** exponent`` with broadcasting. d/dx = exponent · x^(exponent-1) (0 where the
    exponent is 0), d/dexponent = x^exponent · log x, taken as 0 where x ≤ 0, whose log is not
    real or is infinite (PyTorch gives NaN where x < 0, and ±inf where x = 0 and the exponent
    is negative). PyTorch: ``torch.pow``."""
    return binary("pow", x, exponent, pow_backward, _pow)


# --------------------------------------------------------------------------- maximum, minimum
def maximum_minimum_backward(xp: Any, g: Any, x: Any, y: Any, out: Any, need: tuple[bool, bool]) -> tuple[Any, ...]:
    """One rule for ``maximum`` and ``minimum``: the gradient goes to the operand equal to
    the result; where both are (a tie), each gets half; where the result is NaN (equal to
    neither), each gets all of it, as in PyTorch."""
    undecided = out != out  # NaN: equal to neither operand
    x_won, y_won = (out == x) | undecided, (out == y) | undecided
    share = 1 - 0.5 * xp.astype(x == y, g.dtype)  # 1, or ½ at a tie (never at NaN: NaN != NaN)
    gx = keep_where(xp, x_won, g) * share if need[0] else None
    return gx, (keep_where(xp, y_won, g) * share if need[1] else None)


def maximum(a: Any, b: Any) -> Any:
    """Element-wise larger of ``a`` and ``b``; ties split the gradient. PyTorch: ``torch.maximum``."""
    return binary("maximum", a, b, maximum_minimum_backward, "maximum")


def minimum(a: Any, b: Any) -> Any:
    """Element-wise smaller of ``a`` and ``b``; ties split the gradient. PyTorch: ``torch.minimum``."""
    return binary("minimum", a, b, maximum_minimum_backward, "minimum")


def neg_backward(xp: Any, g: Any) -> tuple[Any, ...]:
    return (-g,)


_NEG_FIX = "sg.logical_not(x) flips it; -x.astype('int64') negates its 0s and 1s as numbers"


def neg(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``-x``. d/dx = -1. PyTorch: ``torch.neg``."""
    try:
        out = -x._data
    except TypeError as error:  # NumPy refuses a boolean negative
        raise boolean_unary("neg", x, error, _NEG_FIX) from None
    return unary(x, out, neg_backward, ())


def exp_backward(xp: Any, g: Any, y: Any) -> tuple[Any, ...]:
    return (g * y,)


def exp(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``e ** x``. d/dx = e ** x. PyTorch: ``torch.exp``."""
    require_float(x, "exp")
    y = x._backend.xp.exp(x._data)
    return unary(x, y, exp_backward, (y,))


def log_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (g / x,)


def log(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Natural logarithm. d/dx = 1/x. PyTorch: ``torch.log``."""
    require_float(x, "log")
    data = x._data
    return unary(x, x._backend.xp.log(data), log_backward, (data,))


def square_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (g * 2 * x,)


def square(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``x²``, one pass and no exponent. d/dx = 2x. PyTorch: ``torch.square``."""
    data = x._data
    return unary(x, data * data, square_backward, (data,))


def sqrt_backward(xp: Any, g: Any, y: Any) -> tuple[Any, ...]:
    return (g / (2 * y),)


def sqrt(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """Square root. d/dx = 1 / (2 sqrt(x)). PyTorch: ``torch.sqrt``."""
    require_float(x, "sqrt")
    y = x._backend.xp.sqrt(x._data)
    return unary(x, y, sqrt_backward, (y,))


def abs_backward(xp: Any, g: Any, x: Any) -> tuple[Any, ...]:
    return (g * xp.sign(x),)


def abs(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """``|x|``. d/dx = sign(x) (0 at 0, as PyTorch). PyTorch: ``torch.abs``."""
    data = x._data
    return unary(x, x._backend.xp.abs(data), abs_backward, (data,))


# Activations. A backend may fuse an activation's forward or gradient into one kernel: the
# op asks for its forward by name (``fused_kernel``), and ``record`` binds the rule's kernel
# (same name, same saved values) in the rule's place. The ``xp`` math below stays the
# reference the fused kernels are tested against.


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
    xp = x._backend.xp
    # Tensor bounds (as torch.clamp takes) are copied: the backward pass compares x with them,
    # and a write into one before it runs would move the gradient, unseen.
    if isinstance(min, Tensor):
        min = xp.asarray(cast(AnyTensor, min)._data, copy=True)
    if isinstance(max, Tensor):
        max = xp.asarray(cast(AnyTensor, max)._data, copy=True)
    try:
        out = xp.clip(data, min, max)
    except TypeError as error:  # NumPy has no boolean clip without bounds
        fix = "give it bounds, or convert it first, e.g. x.astype('int64')"
        raise boolean_unary("clamp", x, error, fix) from None
    # integers clamped to float bounds: PyTorch's float dtype
    out, (data, min, max) = torch_promoted(xp, out, (data, min, max), xp.clip)
    return unary(x, out, clamp_backward, (data, min, max))


def astype_backward(xp: Any, g: Any, dtype: Any) -> tuple[Any, ...]:
    return (xp.astype(g, dtype),)


def astype(x: Tensor[T, *S], dtype: str) -> Tensor[T, *S]:
    """The values converted to ``dtype``; the gradient is converted back."""
    backend = x._backend
    data = x._data
    out = backend.xp.astype(data, backend.dtype(dtype))
    return unary(x, out, astype_backward, (data.dtype,))


def clone_backward(xp: Any, g: Any) -> tuple[Any, ...]:
    return (g,)


def clone(x: Tensor[T, *S]) -> Tensor[T, *S]:
    """A copy in new memory: a write into it leaves ``x`` unchanged, and a write into ``x``
    leaves it unchanged. The tape is kept and the gradient passes through unchanged
    (``x.detach().clone()`` is an untraced copy). PyTorch: ``torch.clone``."""
    return unary(x, x._backend.xp.asarray(x._data, copy=True), clone_backward, ())


# --------------------------------------------------------------------------- selection
def where_backward(xp: Any, g: Any, cond: Any, n_tensors: int, left_is_tensor: bool) -> tuple[Any, ...]:
    zero = xp.zeros_like(g)
    left, right = xp.where(cond, g, zero), xp.where(cond, zero, g)
    if n_tensors == 2:
        return left, right
    return (left,) if left_is_tensor else (right,)


def where(cond: Any, a: Any, b: Any) -> Any:
    """``a`` where ``cond`` is true, else ``b``; each side gets the gradient where chosen.
    PyTorch: ``torch.where``."""
    # Any: the typed overloads (``_function_ops``) take the mask as a bare type variable and the
    # branches through a protocol (``_broadcast.MaskedBy``); a tensor mask, tensors or numbers.
    backend = cond._backend
    tensors: tuple[AnyTensor, ...] = tuple(cast(AnyTensor, t) for t in (a, b) if isinstance(t, Tensor))
    for t in tensors:
        same_backend(cond, t)
    raw = [t._data if isinstance(t, Tensor) else t for t in (a, b)]
    try:
        out = backend.xp.where(cond._data, raw[0], raw[1])
    except ValueError:
        shapes = ", ".join(str(getattr(t, "shape", "scalar")) for t in (cond, a, b))
        raise ShapeError(f"where: shapes {shapes} do not broadcast") from None
    if out.dtype is FLOAT64:  # an integer branch with a float one: PyTorch's float dtype

        def select(a: Any, b: Any) -> Any:
            return backend.xp.where(cond._data, a, b)

        out, _ = torch_promoted(backend.xp, out, raw, select)
    saved = (cond._data, len(tensors), isinstance(a, Tensor))
    # The condition is no input: a write into it before the backward pass would move the gradient.
    return record(out, where_backward, tensors, saved, backend, watch=(cond,))


def compare(a: AnyTensor, b: Any, how: str) -> Any:
    """An untraced boolean tensor from an element-wise comparison."""
    xp = a._backend.xp
    right = operand(b, a, how)
    other = right._data if isinstance(right, Tensor) else right
    if isinstance(right, Tensor):
        same_backend(a, right)
    try:
        out = getattr(xp, how)(a._data, other)
    except (ValueError, OverflowError) as error:
        raised = forward_error(how, a, right, error)
        if raised is error:
            raise
        raise raised from None
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


# --------------------------------------------------------------------------- bitwise: & | ^ ~
# As PyTorch's (and NumPy's) operators: logical on booleans (``~causal``, ``pad & causal``),
# bitwise on integers, refused on floats. Untraced, as the comparisons that make the masks.
_OPERATORS = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^", "bitwise_not": "~"}
_LOGICAL = {
    "bitwise_and": "sg.logical_and(a, b)",
    "bitwise_or": "sg.logical_or(a, b)",
    "bitwise_xor": "sg.logical_xor(a, b)",
    "bitwise_not": "sg.logical_not(x)",
}


def _bits_dtype(how: str, value: Any) -> str:
    """``"bool"`` or ``"int"`` for an operand of a bitwise op (a tensor or a Python number);
    a float (or any other) operand is a DTypeError naming the fixes."""
    if isinstance(value, Tensor):
        tensor = cast(AnyTensor, value)
        name = tensor._backend.dtype_name(tensor._data.dtype)
        if name == "bool":
            return "bool"
        if name.startswith(("int", "uint")):
            return "int"
        found = f"a tensor of dtype {name} and shape {tensor.shape}"
    elif type(value) is bool:
        return "bool"
    elif type(value) is int:
        return "int"
    else:
        found = f"the number {value!r}"
    raise DTypeError(
        f"{_OPERATORS[how]} (sg.{how}) is defined for boolean and integer tensors, as in PyTorch: found {found}. "
        f"For a mask, compare first (x > 0) or convert (x.astype('bool')); {_LOGICAL[how]} takes the truth "
        "values of any dtype (non-zero is true)"
    )


def _bitwise(a: Any, b: Any, how: str) -> Any:
    if not isinstance(a, Tensor):  # a number on the left (True & mask): & | ^ are symmetric
        a, b = b, a
    if not isinstance(a, Tensor):
        raise DTypeError(f"{how} expects at least one Tensor operand, found {type(a).__name__} and {type(b).__name__}")
    left = cast(AnyTensor, a)
    right = operand(b, left, how)
    kinds = (_bits_dtype(how, left), _bits_dtype(how, right))
    backend = left._backend
    xp = backend.xp
    x: Any = left._data
    y: Any = right
    if isinstance(right, Tensor):
        same_backend(left, right)
        y = right._data
    # A boolean with integers is integers, as in PyTorch (a strict Array API mixes neither).
    if kinds == ("bool", "int"):
        x = xp.astype(x, y.dtype if isinstance(right, Tensor) else backend.dtype("int64"))
    elif kinds == ("int", "bool"):
        y = xp.astype(y, x.dtype) if isinstance(right, Tensor) else int(y)
    try:
        out = getattr(xp, how)(x, y)
    except (ValueError, OverflowError) as error:
        raised = forward_error(how, left, right, error)
        if raised is error:
            raise
        raise raised from None
    return wrap(out, backend)


def bitwise_and(a: Any, b: Any) -> Any:
    """``a & b`` element-wise: logical and of booleans, bitwise of integers (an untraced
    tensor; floats are refused). PyTorch: ``torch.bitwise_and``."""
    return _bitwise(a, b, "bitwise_and")


def bitwise_or(a: Any, b: Any) -> Any:
    """``a | b`` element-wise: logical or of booleans, bitwise of integers (an untraced
    tensor; floats are refused). PyTorch: ``torch.bitwise_or``."""
    return _bitwise(a, b, "bitwise_or")


def bitwise_xor(a: Any, b: Any) -> Any:
    """``a ^ b`` element-wise: logical xor of booleans, bitwise of integers (an untraced
    tensor; floats are refused). PyTorch: ``torch.bitwise_xor``."""
    return _bitwise(a, b, "bitwise_xor")


def bitwise_not(x: Tensor[Any, *S]) -> Tensor[NoTape, *S]:
    """``~x`` element-wise: logical not of booleans, bitwise of integers (an untraced tensor;
    floats are refused). PyTorch: ``torch.bitwise_not``."""
    if not isinstance(x, Tensor):  # pyright: ignore[reportUnnecessaryIsInstance] -- callers may be untyped
        raise DTypeError(f"bitwise_not expects a Tensor, found {type(x).__name__}")
    _bits_dtype("bitwise_not", x)
    xp = x._backend.xp
    invert = getattr(xp, "bitwise_invert", None) or xp.bitwise_not  # the Array API's name, NumPy 1's
    return wrap(invert(x._data), x._backend)


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
    "floor_divide": floor_divide,
    "remainder": remainder,
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
    "bitwise_and": bitwise_and,
    "bitwise_or": bitwise_or,
    "bitwise_xor": bitwise_xor,
}
"""NumPy ufuncs that NumPy calls for an operator with a Tensor on one side
(``ndarray * t``, ``np.float64(2) < t``), mapped to the shapegrad op that keeps the tape."""


READS.update(
    {
        add_backward: reads_table(_reads_nothing),
        sub_backward: reads_table(_reads_nothing),
        mul_backward: reads_table(_reads_the_other),
        div_backward: reads_table(_reads_for_div),
        floor_divide_backward: reads_table(_reads_nothing),
        remainder_backward: reads_table(_reads_for_remainder),
    }
)
