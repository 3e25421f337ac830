"""What the op modules share: operand conversion, the one binary path, dtype and shape
checks, the mask select. Private to ``shapegrad.ops``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from .. import _hooks
from .._autodiff import record_binary_node, record_unary_node
from .._backend import as_backend_array, bind_rule, bound_rules as _bound_rules, same_backend
from .._errors import DTypeError, ShapeError
from .._tensor import AnyTensor, Tensor, _new, record_traced, share_view, untraced_result, wrap

__all__ = []


Scalar = int | float


# backend -> dtype -> whether it is floating: nested, not keyed by a tuple, which would be
# built and hashed on every unary op.
_float_dtypes: dict[Any, dict[Any, bool]] = {}


def require_float(x: AnyTensor, op: str) -> None:
    """Raise ``DTypeError`` unless ``x`` holds floating-point values."""
    dtype = x._data.dtype
    # Keyed by backend too: dtypes of two libraries must never be compared with each other.
    known = _float_dtypes.get(x._backend)
    if known is None:
        known = _float_dtypes[x._backend] = {}
    ok = known.get(dtype)
    if ok is None:
        ok = known[dtype] = x._backend.dtype_name(dtype).startswith("float")
    if not ok:
        raise DTypeError(
            f"{op} expects a floating-point tensor, found dtype "
            f"{x._backend.dtype_name(dtype)} with shape {x.shape}; convert it with .astype('float32')"
        )


def require_bool_mask(mask: AnyTensor, op: str) -> None:
    """Raise ``DTypeError`` unless ``mask`` is boolean. A float mask would be selected by truth
    (0 masked, anything else allowed): PyTorch's additive masks (0 allowed, -inf masked)
    inverted, silently."""
    name = mask._backend.dtype_name(mask._data.dtype)
    if name != "bool":
        raise DTypeError(
            f"{op}: expected a boolean mask (True where allowed), found dtype {name}; an additive "
            "float mask (0 allowed, -inf masked), as PyTorch's, is `mask == 0`"
        )


def _first_clash(sa: tuple[int, ...], sb: tuple[int, ...]) -> int | None:
    """The first trailing axis (negative) where shapes ``sa`` and ``sb`` do not broadcast."""
    for i in range(1, min(len(sa), len(sb)) + 1):
        if sa[-i] != sb[-i] and sa[-i] != 1 and sb[-i] != 1:
            return -i
    return None


def shape_clash(op: str, a: AnyTensor, b: AnyTensor) -> ShapeError:
    """The error for operands that do not broadcast, naming both shapes and the first clash."""
    sa, sb = a.shape, b.shape
    axis = _first_clash(sa, sb)
    detail = "" if axis is None else f"; axis {axis} is {sa[axis]} vs {sb[axis]}"
    return ShapeError(
        f"{op}: shapes {sa} and {sb} do not broadcast: expected equal sizes, or 1, at each trailing axis{detail}"
    )


def negative_power(op: str, base: str, exponent: str) -> DTypeError:
    """The error for an integer ``base`` to a negative integer ``exponent`` (each described by
    ``described``), which NumPy refuses (PyTorch too): the result would be a fraction in an
    integer dtype."""
    return DTypeError(
        f"{op}: integers to negative integer powers are not allowed: found {base} to the power of {exponent}; "
        "expected a floating-point base (or no negative exponent). Convert the base first, e.g. "
        "x.astype('float32') ** y"
    )


def described(value: Any, dtype: str | None = None) -> str:
    """An operand as ``negative_power`` names it: a tensor (of dtype ``dtype``, given for an
    array) by its dtype, a number by its value."""
    if dtype is not None:
        return f"a tensor of dtype {dtype}"
    if isinstance(value, Tensor):
        tensor = cast(AnyTensor, value)
        return f"a tensor of dtype {tensor._backend.dtype_name(tensor._data.dtype)}"
    return f"the number {value!r}"


def forward_error(op: str, left: Any, right: Any, error: Exception) -> Exception:
    """The error for a binary op whose forward raised ``error`` (a number operand, ``left`` or
    ``right``, has shape ``()``). A ``ValueError`` is a shape clash only where the shapes do
    not broadcast; an integer to a negative integer power is a dtype problem (NumPy says
    "Integers to negative integer powers are not allowed"). An ``OverflowError`` where a
    Python int meets a tensor is ``number_out_of_range``; NumPy's ``TypeError`` for a boolean
    subtraction is ``boolean_subtract``. Any other is ``error`` itself."""
    if isinstance(error, OverflowError):
        return _overflow_error(op, left, right, error)
    if isinstance(error, TypeError):
        if str(error).startswith("numpy boolean subtract"):
            return boolean_subtract(op, left, right)
        return error
    sa: tuple[int, ...] = left.shape if isinstance(left, Tensor) else ()
    sb: tuple[int, ...] = right.shape if isinstance(right, Tensor) else ()
    if _first_clash(sa, sb) is not None:
        return shape_clash(op, cast(AnyTensor, left), cast(AnyTensor, right))  # a number never clashes
    if str(error).startswith("Integers to negative integer powers"):
        return negative_power(op, described(left), described(right))
    return error


def _overflow_error(op: str, left: Any, right: Any, error: OverflowError) -> Exception:
    """``number_out_of_range``'s error where one operand is a Python int and the other a
    tensor (``operand`` made NumPy integers Python ints), else ``error`` itself."""
    if type(right) is int and isinstance(left, Tensor):
        return number_out_of_range(op, cast(AnyTensor, left), right, error)
    if type(left) is int and isinstance(right, Tensor):
        return number_out_of_range(op, cast(AnyTensor, right), left, error)
    return error


_INT64 = np.iinfo(np.int64)


def number_out_of_range(op: str, tensor: AnyTensor, number: int, error: OverflowError) -> DTypeError:
    """The error for a Python int that the dtype it meets a tensor in cannot hold (NumPy's
    ``error``: "Python integer 1099511627776 out of bounds for int32", "Python int too large to
    convert to C long", or, where it converts the number to a float (a float tensor, a
    division), "int too large to convert to float"). NumPy, as PyTorch, converts the number to
    the tensor's dtype (a boolean tensor's: int64) rather than widen the result; the fix is to
    convert the tensor to a dtype that holds the number."""
    name = tensor._backend.dtype_name(tensor._data.dtype)
    digits = str(number)
    if len(digits) > 40:
        digits = f"{digits[:12]}... ({len(digits.lstrip('-'))} digits)"
    found = f"found the number {digits} with a tensor of dtype {name} and shape {tensor.shape}"
    try:
        target = np.result_type(np.dtype(name), 0)  # the dtype a Python int is converted to
    except TypeError:
        target = None
    to_float = "float" in str(error)
    if target is not None and target.kind in "iu" and not to_float:
        info = np.iinfo(target)
        meets = "" if target == np.dtype(name) else f" (a {name} tensor meets a Python int as {target})"
        holds = f"expected a number {target} holds, {info.min} to {info.max}{meets}"
    else:
        holds = "expected a number a float64 holds (its largest is about 1.8e308)"
    if to_float or not _float64_holds(number):
        fix = "No dtype holds it: use a smaller number, or float('inf')"
    elif _INT64.min <= number <= _INT64.max and target is not None and target != np.dtype(np.int64):
        fix = "Convert the tensor first, e.g. x.astype('int64')"
    else:
        fix = "Convert the tensor first, e.g. x.astype('float64') (exact for integers up to 2**53)"
    return DTypeError(f"{op}: a Python int out of range for the tensor's dtype: {found}; {holds}. {fix}")


def _float64_holds(number: int) -> bool:
    """Whether a float64 holds ``number`` (exactly only up to 2**53)."""
    try:
        float(number)
    except OverflowError:
        return False
    return True


def _with_shape(value: Any) -> str:
    """An operand as the boolean errors name it: a tensor by dtype and shape, a number by value."""
    if isinstance(value, Tensor):
        tensor = cast(AnyTensor, value)
        return f"a tensor of dtype {tensor._backend.dtype_name(tensor._data.dtype)} and shape {tensor.shape}"
    return f"the number {value!r}"


def boolean_subtract(op: str, left: Any, right: Any) -> DTypeError:
    """The error for a boolean minus a boolean (tensors, or a tensor and ``True``/``False``),
    which NumPy refuses (PyTorch too): ``True - True`` has no boolean result."""
    return DTypeError(
        f"{op}: subtraction is not defined for booleans: found {_with_shape(left)} minus {_with_shape(right)}; "
        "expected numbers. sg.logical_xor(a, b) is where two masks differ; for arithmetic convert first, "
        "e.g. a.astype('int64') - b"
    )


def boolean_unary(op: str, x: AnyTensor, error: TypeError, fix: str) -> DTypeError:
    """The error for a one-input op NumPy refuses on a boolean tensor (``-x``: "The numpy
    boolean negative ... is not supported"; ``sign``: no loop for booleans), naming ``fix``.
    Where ``x`` is not boolean it raises ``error`` itself (call it inside the ``except``)."""
    name = x._backend.dtype_name(x._data.dtype)
    if name != "bool":
        raise error  # not the boolean case: NumPy's error as it is
    return DTypeError(f"{op}: not defined for booleans: found a tensor of dtype bool and shape {x.shape}; {fix}")


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


FLOAT64 = np.dtype(np.float64)
_FLOAT32 = np.dtype(np.float32)


def torch_float(values: Any) -> Any:
    """The dtype PyTorch gives a result that NumPy made float64 from ``values`` (the raw
    operands: arrays and Python numbers), or None where NumPy agrees.

    NumPy promotes an integer or boolean array with a float (a Python float, a float32 array)
    to float64, and divides integers into float64; PyTorch gives the float operand's dtype
    (the widest float array's) or, with none, its default float32. ``sg.arange(n) * 0.5`` in
    float64 would make a positional encoding, and every weight it meets, float64: twice as
    slow, silently (element-wise ops promote), or a product's ``DTypeError`` far from its
    cause. Where an array is float64 (or complex) itself the result is float64 in both.
    """
    widest = None
    for value in values:
        dtype = getattr(value, "dtype", None)
        if dtype is None or dtype.kind in "biu":
            continue  # Python numbers, integer and boolean arrays: no float of their own
        if dtype.kind != "f" or dtype.itemsize >= 8:
            return None
        if widest is None or dtype.itemsize > widest.itemsize:
            widest = dtype
    return _FLOAT32 if widest is None else widest


def _as_float(xp: Any, values: Sequence[Any], dtype: Any) -> list[Any]:
    """``values`` with each integer or boolean array converted to ``dtype`` (Python numbers
    and float arrays as they are): the operands of :func:`torch_float`'s result."""
    return [
        xp.astype(value, dtype) if getattr(getattr(value, "dtype", None), "kind", "f") in "biu" else value
        for value in values
    ]


def torch_promoted(xp: Any, out: Any, operands: Sequence[Any], compute: Any) -> tuple[Any, Sequence[Any]]:
    """``out`` and its ``operands`` (the raw arrays and numbers it was computed from), or,
    where NumPy made ``out`` float64 from integers (:func:`torch_float`), ``compute`` called
    again on the operands converted to PyTorch's float dtype, and those operands. One
    identity test where ``out`` is not float64, the only dtype NumPy over-promotes to (CuPy's
    arrays hold NumPy's dtype objects too)."""
    if getattr(out, "dtype", None) is not FLOAT64:
        return out, operands
    target = torch_float(operands)
    if target is None:
        return out, operands
    converted = _as_float(xp, operands, target)
    return compute(*converted), converted


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


class Number:
    """A number as an operand of a binary op, in the inputs the engine records: no node and
    no parameter, so its gradient goes nowhere (and the rule, told by ``need``, does not
    compute it). One instance serves every op: the value itself is in the saved values."""

    __slots__ = ()
    _data = _node = _param = _backend = _version = None
    shape = ()


NUMBER = Number()

# A binary rule's ``need`` (whether each side wants a gradient), by index: left + 2 × right.
NEEDS = ((False, False), (True, False), (False, True), (True, True))


def binary(op: str, a: Any, b: Any, rule: Any, forward: Any) -> Any:
    """One path for every binary op: tensor with tensor, or with a number on either side.
    The number is a constant operand of the same rule, which gets ``need`` (whether each
    side wants a gradient) and computes only those. ``forward`` is a function of the two
    raw operands, or the name of the backend's function."""
    # Written for speed (it runs for every arithmetic op): no cast() calls, a Python float
    # taken as it is, same_backend's check inline.
    left: Any = a
    right: Any = b
    if isinstance(a, Tensor):
        left_is_tensor = True
        right_is_tensor = isinstance(b, Tensor)
        if not right_is_tensor and type(b) is not float:
            right = operand(b, left, op)
            right_is_tensor = isinstance(right, Tensor)
    elif isinstance(b, Tensor):
        left_is_tensor, right_is_tensor = False, True
        if type(a) is not float:
            left = operand(a, right, op)
            left_is_tensor = isinstance(left, Tensor)
    else:
        raise DTypeError(f"{op} expects at least one Tensor operand, found {type(a).__name__} and {type(b).__name__}")
    # The recorded inputs: a number's place is NUMBER's (no tuple of them built on the
    # common path below, only where a slower one needs it).
    first: Any
    second: Any
    if left_is_tensor and right_is_tensor:
        first, second = left, right
        backend = left._backend
        if right._backend is not backend:
            same_backend(left, right)  # raises, naming both
        x, y = left._data, right._data
    elif left_is_tensor:
        first, second = left, NUMBER
        backend = left._backend
        x, y = left._data, right
    else:
        first, second = NUMBER, right
        backend = right._backend
        x, y = left, right._data
    if forward.__class__ is str:
        forward = getattr(backend.xp, forward)
    try:
        out = forward(x, y)
    except (ValueError, OverflowError, TypeError) as error:
        raised = forward_error(op, left, right, error)
        if raised is error:
            raise
        raise raised from None
    if out.dtype is FLOAT64:  # an integer operand with a float (or divided): PyTorch's float dtype
        out, (x, y) = torch_promoted(backend.xp, out, (x, y), forward)
    first_node = first._node  # one statement each: four names at once build a tuple
    second_node = second._node
    first_param = first._param
    second_param = second._param
    if first_node is None and second_node is None and first_param is None and second_param is None:
        return untraced_result(out, rule, (first, second), backend)  # nothing to differentiate: no node, nothing saved
    # Whether each side wants a gradient (wants_grad, inline; a number has neither node nor
    # parameter), as an index into the shared tuples of NEEDS (no tuple built per op).
    needed = (first_node.wants if first_node is not None else first_param is not None and first_param.trainable) + 2 * (
        second_node.wants if second_node is not None else second_param is not None and second_param.trainable
    )
    table = READS.get(rule)
    saved = (x, y, out, NEEDS[needed])
    if table is None or first_param is not None or second_param is not None or _hooks.active:
        reads = None if table is None else table[needed + 4 * left_is_tensor + 8 * right_is_tensor]
        return record_traced(out, rule, (first, second), saved, backend, reads)
    # record_traced's work for the common case, without its frame: every arithmetic op comes here.
    result = _new(Tensor)
    result._data = out
    result._backend = backend
    result._param = None
    result._version = None
    try:
        bound = _bound_rules[backend][rule][out.dtype]
    except KeyError:
        bound = bind_rule(backend, rule, out.dtype)
    # Which operands' memory the rule reads, by what it is asked for (a number is never watched).
    result._node = record_binary_node(
        out, bound, first, second, saved, backend.xp, table[needed + 4 * left_is_tensor + 8 * right_is_tensor], result
    )
    if getattr(out, "base", None) is not None:
        share_view(out, (first, second), result)
    return result


# --------------------------------------------------------------------------- unary
def unary(x: AnyTensor, out: Any, rule: Any, saved: tuple[Any, ...]) -> Any:
    """The result of a one-input op: recorded when ``x`` is traced or a parameter."""
    node = x._node
    backend = x._backend
    if node is None or x._param is not None or _hooks.active:
        if node is None and x._param is None:
            return untraced_result(out, rule, (x,), backend)
        return record_traced(out, rule, (x,), saved, backend)
    # record_traced's work for a traced input, without its frame (as binary does).
    result = _new(Tensor)
    result._data = out
    result._backend = backend
    result._param = None
    result._version = None
    try:
        bound = _bound_rules[backend][rule][out.dtype]
    except KeyError:
        bound = bind_rule(backend, rule, out.dtype)
    result._node = record_unary_node(out, bound, x, saved, backend.xp, result)
    if getattr(out, "base", None) is not None:
        share_view(out, (x,), result)
    return result


def stable_sigmoid(xp: Any, x: Any) -> Any:
    """``1 / (1 + e^-x)`` with full relative precision on both sides: ``e^-|x|`` never
    overflows, and for x < 0 the result is ``e^x / (1 + e^x)``, which keeps the tiny values
    that ``1 - something`` (or ``(1 + tanh(x/2)) / 2``) would round to 0."""
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


# Which operands (and the result) each binary rule reads, by what it is asked for: the
# engine counts writes into those alone (a write into an addend changes no gradient).
# Rules not listed read everything they save.
def reads_table(reads: Any) -> tuple[tuple[bool, bool, bool], ...]:
    """``reads`` for every (need, which sides are tensors), indexed as ``binary`` does."""
    table: list[tuple[bool, bool, bool]] = []
    for index in range(16):
        need = (bool(index & 1), bool(index & 2))
        left_read, right_read, out_read = reads(need)
        table.append((left_read and bool(index & 4), right_read and bool(index & 8), out_read))
    return tuple(table)


def check_same_float(op: str, a: AnyTensor, b: AnyTensor, names: tuple[str, str] = ("left", "right")) -> None:
    """Refuse two floating-point operands of different precision in a product, or an
    integer (or boolean) operand with a floating-point one.

    Element-wise ops promote (float32 with float64 gives float64, as in NumPy and PyTorch),
    but a float64 batch meeting float32 weights in a matrix product is almost always data
    that was not converted (scikit-learn and NumPy default to float64): promoting would make
    the whole model run in float64, twice as slow, silently. PyTorch raises here too.
    """
    da, db = a._data.dtype, b._data.dtype
    if da == db:
        return
    name_a, name_b = a._backend.dtype_name(da), b._backend.dtype_name(db)
    float_a, float_b = name_a.startswith("float"), name_b.startswith("float")
    if float_a and float_b:
        raise DTypeError(
            f"{op}: {names[0]} is {name_a} {a.shape} but {names[1]} is {name_b} {b.shape}; expected one "
            f"floating dtype (shapegrad, like PyTorch, does not promote in products). Convert the data, "
            f"e.g. x.astype({name_b!r})"
        )
    if float_a != float_b:  # integers (or booleans) with floats: NumPy's product is float64
        target = name_a if float_a else name_b
        raise DTypeError(
            f"{op}: {names[0]} is {name_a} {a.shape} but {names[1]} is {name_b} {b.shape}; expected one "
            f"floating dtype (NumPy would give float64, PyTorch raises). Convert the integers, "
            f"e.g. x.astype({target!r})"
        )


def integer(op: str, what: str, value: Any) -> int:
    """``value`` as a plain int, for an argument that is an integer by meaning (an axis, a
    size, a count, an offset); ``DTypeError`` naming ``what`` otherwise.

    Python ints (``bool`` too, as Python does, and ``sg.Dim`` sizes) and NumPy integers are
    taken. A float was truncated (``reshape(2, 12.5)`` gave ``(2, 12)``) or failed deep inside
    with a builtin error, and a 0-d tensor failed with one too: PyTorch refuses both.
    """
    if type(value) is int:  # the hot path: reductions and reshapes run this per op
        return value
    if isinstance(value, (int, np.integer)):
        return int(cast(int, value))  # a NumPy integer (or an int subclass: a sg.Dim, a bool)
    if isinstance(value, Tensor):
        found = f"a tensor of shape {value.shape}" + (" (its .item() is a Python number)" if not value.shape else "")
    else:
        found = f"{type(value).__name__} {value!r}"
    raise DTypeError(f"{op} expects an integer {what}, found {found}")


def integers(op: str, what: str, values: Any) -> tuple[int, ...]:
    """Each of ``values`` as a plain int (see :func:`integer`), as a tuple."""
    return tuple(v if type(v) is int else integer(op, what, v) for v in values)


def checked_axis(x: AnyTensor, axis: int, op: str = "this op") -> int:
    """``axis`` of ``x`` as a non-negative index; ``DTypeError`` when it is not an integer,
    ``ShapeError`` when out of range."""
    if type(axis) is not int:
        axis = integer(op, "axis", axis)
    if not -max(x.ndim, 1) <= axis < max(x.ndim, 1):  # rank 0 takes 0 and -1, as PyTorch
        raise ShapeError(f"axis {axis} is out of range for a tensor of shape {x.shape}")
    return axis % x.ndim if x.ndim else 0


# Which operands (and the result) each binary rule reads, by what it is asked for: the
# engine counts writes into those alone (a write into an addend changes no gradient). The
# modules of binary ops register their rules here; rules not listed read everything they save.
READS: dict[Any, tuple[tuple[bool, bool, bool], ...]] = {}
