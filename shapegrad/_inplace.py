"""In-place arithmetic: ``x += y``, ``p -= lr * g``, ``mask &= other``.

Without these methods Python runs ``x = x + y`` for ``x += y``: a new tensor bound to the name,
and nothing written. A port of PyTorch code then does nothing where PyTorch writes: the update
loop ``with sg.no_grad(): for p in model.parameters(): p -= lr * grads[p]`` left the weights
as they were, and ``v = y[0]; v += 1`` left ``y`` unchanged, with no error.

- **Untraced operands** (a buffer, a parameter under ``sg.no_grad()``, an EMA's weights): the
  result is written into ``x``'s memory, as PyTorch does. Every name for ``x``, the tensor ``x``
  is a view of, and the views of ``x`` see it; ``x``'s write counter rises, so a backward pass
  through values an op saved from it raises ``TapeError``.
- **A traced operand** (``out += identity`` in a residual block, ``total += loss``): ``x += y``
  is ``x = x + y``, a new traced tensor, so that the gradient flows through the sum (a write
  into ``x``'s memory would cut it). A view of another tensor's memory is refused
  (``TapeError``): PyTorch would write through to the other tensor, and a new tensor would not.
- **A parameter, outside** ``sg.no_grad()``: refused (``TapeError``), as PyTorch refuses an
  in-place op on a leaf that requires grad: the update would be recorded as an op.

The result keeps ``x``'s shape and dtype, as PyTorch's: a ``y`` that broadcasts ``x`` to a
larger shape raises ``ShapeError``, and a result ``x``'s dtype cannot hold without changing
kind (a float into an integer tensor) raises ``DTypeError``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from ._errors import DTypeError, ShapeError, TapeError

__all__ = ["apply_in_place", "install_in_place_operators"]


def apply_in_place(target: Any, other: Any, op: Callable[[Any, Any], Any], symbol: str) -> Any:
    """``target symbol= other``: the tensor the name ``target`` is bound to afterwards (see the
    module's docstring for when that is ``target`` itself, written in place)."""
    result = op(target, other)
    name = f"x {symbol}= y"
    if tuple(result.shape) != tuple(target.shape):
        raise ShapeError(
            f"{name} writes into x, of shape {tuple(target.shape)}, and y of shape "
            f"{tuple(getattr(other, 'shape', ()))} broadcasts it to {tuple(result.shape)}; expected a result "
            f"of x's shape, as PyTorch requires. Write x = x {symbol} y for a tensor of the new shape"
        )
    if result._node is not None:  # a traced operand, or a parameter outside no_grad: recorded
        if target._param is not None:
            raise TapeError(
                f"{name} on a parameter outside sg.no_grad() would record the update as an op of the "
                "next forward pass; expected the update under `with sg.no_grad():` (PyTorch refuses an "
                "in-place op on a leaf that requires grad the same way), or an optimizer's update"
            )
        if target._version is not None and getattr(target._data, "base", None) is not None:
            raise TapeError(
                f"{name} with a traced operand makes x a new tensor (x = x {symbol} y), so that the "
                "gradient flows through it; this x is a view of another tensor's memory (a slice, "
                "reshape or transpose), which PyTorch would write through and this would not. Expected "
                "x not to be a view: write x = x "
                f"{symbol} y if the other tensor need not change, or y_full = y_full.at[index].add(...) "
                "to change it"
            )
        return result
    written = result._data
    if written.dtype != target._data.dtype and not _same_kind(target, written):
        raise DTypeError(
            f"{name} writes the result into x, of dtype {target.backend_dtype_name()}, and the result is "
            f"{target._backend.dtype_name(written.dtype)}; expected a result x's dtype can hold, as PyTorch "
            f"requires. Write x = x {symbol} y for a tensor of the result's dtype"
        )
    target[...] = result  # a parameter's write counter rises; read-only memory is refused there
    return target


def _same_kind(target: Any, written: Any) -> bool:
    xp = target._backend.xp
    try:
        return bool(xp.can_cast(written.dtype, target._data.dtype, casting="same_kind"))
    except TypeError:  # an Array-API namespace: can_cast without casting rules
        result_kind = target._backend.dtype_name(written.dtype).rstrip("0123456789")
        target_kind = target.backend_dtype_name().rstrip("0123456789")
        return result_kind == target_kind


# The augmented assignments and the operator module's functions they stand for.
_OPERATORS = (
    ("__iadd__", "add", "+"),
    ("__isub__", "sub", "-"),
    ("__imul__", "mul", "*"),
    ("__itruediv__", "truediv", "/"),
    ("__ifloordiv__", "floordiv", "//"),
    ("__imod__", "mod", "%"),
    ("__ipow__", "pow", "**"),
    ("__imatmul__", "matmul", "@"),
    ("__iand__", "and_", "&"),
    ("__ior__", "or_", "|"),
    ("__ixor__", "xor", "^"),
)


def install_in_place_operators(cls: type) -> None:
    """Give ``cls`` (``Tensor``) the augmented assignments, at run time only: the type checkers
    then check ``x += y`` as ``x = x + y``, which is the shape rule it keeps."""
    for name, function, symbol in _OPERATORS:
        op: Callable[[Any, Any], Any] = getattr(operator, function)  # typeshed leaves some untyped

        def method(self: Any, other: Any, op: Callable[[Any, Any], Any] = op, symbol: str = symbol) -> Any:
            return apply_in_place(self, other, op, symbol)

        method.__name__ = method.__qualname__ = name
        method.__doc__ = f"``x {symbol}= y``: in place where both are untraced (see shapegrad._inplace)."
        setattr(cls, name, method)
