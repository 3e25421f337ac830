"""The run-time meaning of ``Tensor[Tape, *Dims]``: a jaxtyping check of dims and tape.

``Tensor.__class_getitem__`` hands its parameters here. Literal sizes become fixed dims,
``sg.Dim`` subclasses and TypeVars become named dims that a checked call binds once,
``int``/``Any`` are unchecked, a TypeVarTuple becomes a variadic dim. The tape parameter
picks the array type jaxtyping checks first: untraced, traced, or either.
"""

from __future__ import annotations

import functools
import typing
from typing import Any, TypeVar, TypeVarTuple, cast, get_args, get_origin

from jaxtyping import Shaped

from ._autodiff import NoTape, OwnedTape
from ._dims import Dim, Half, Open, Prod, Sum, Twice, literal_size

__all__ = ["tensor_annotation"]


class _TapeCheck(type):
    """Metaclass of the tape checks: isinstance tests the tape, repr reads as prose."""

    label: str
    wants_traced: bool | None

    def __instancecheck__(cls, obj: object) -> bool:
        from ._tensor import Tensor

        if not isinstance(obj, Tensor):
            return False
        return cls.wants_traced is None or obj.traced == cls.wants_traced

    def __instancecheck_str__(cls, obj: object) -> str:
        if cls.__instancecheck__(obj):
            return ""
        return f"expected {cls.label}, found {obj!r}"

    def __repr__(cls) -> str:
        return cls.label


class UntracedTensor(metaclass=_TapeCheck):
    """Matches a Tensor with no tape (``NoTape``)."""

    label = "an untraced Tensor (NoTape)"
    wants_traced = False


class TracedTensor(metaclass=_TapeCheck):
    """Matches a traced Tensor (``OwnedTape[...]``)."""

    label = "a traced Tensor (OwnedTape)"
    wants_traced = True


class AnyTapeTensor(metaclass=_TapeCheck):
    """Matches a Tensor with or without a tape."""

    label = "a Tensor"
    wants_traced = None


# jaxtyping prints ``Shaped[<array type name>, 'dims']`` in its messages: let the name say
# which tape was expected.
for _check in (UntracedTensor, TracedTensor, AnyTapeTensor):
    _check.__name__ = _check.__qualname__ = _check.label.removeprefix("an ").removeprefix("a ")


def _tape_check(param: Any) -> type:
    if param is NoTape:
        return UntracedTensor
    if param is OwnedTape or get_origin(param) is OwnedTape:
        return TracedTensor
    return AnyTapeTensor


def _dim_name(param: Any) -> str:
    origin = get_origin(param)
    size = literal_size(param)  # L[784], and size arithmetic of literals (Half[L[7]] is 3)
    if size is not None:
        return str(size)
    if param is Open or origin in (Prod, Sum, Half, Twice):
        # A size the type could not compute, or arithmetic over a symbolic size: unchecked
        # here (stated by sg.cast, or checked where the size is a number).
        return "_"
    if isinstance(param, type) and issubclass(param, Dim):
        return param.__name__
    if isinstance(param, TypeVar):
        return param.__name__
    if isinstance(param, TypeVarTuple):
        return f"*{param.__name__}"
    if origin is typing.Unpack or type(cast(object, param)).__name__ == "_UnpackGenericAlias":
        inner = get_args(param)[0]
        if isinstance(inner, TypeVarTuple):
            return f"*{inner.__name__}"
        return "..."  # *tuple[Any, ...]: any number of unchecked dims
    if param is int or param is Any:
        return "_"
    raise TypeError(f"Tensor dims must be Literal sizes, sg.Dim subclasses, TypeVars, int or Any; found {param!r}")


def _dims_string(params: tuple[Any, ...]) -> str:
    names: list[str] = []
    for param in params:
        if isinstance(param, TypeVarTuple):
            names.append(f"*{param.__name__}")
            continue
        # ``*Ts`` inside a subscription arrives already unpacked as a starred TypeVarTuple.
        unpacked = getattr(param, "__typing_unpacked_tuple_args__", None)
        if unpacked is not None:
            names.append("...")
            continue
        names.append(_dim_name(param))
    return " ".join(names)


@functools.cache
def tensor_annotation(params: tuple[Any, ...]) -> Any:
    """The jaxtyping class that checks ``Tensor[*params]`` at run time.

    Where the parameters hold TypeVars, the class can be subscripted again as a generic
    alias is (``Vec = Tensor[T, Batch, L[3]]``, then ``Vec[NoTape]``): the arguments replace
    the TypeVars in the order they first appear, as ``typing`` does.
    """
    if not params:
        raise TypeError("Tensor[...] expects a tape first (NoTape, OwnedTape[M] or a TypeVar), then the dims")
    tape, *dims = params
    check: Any = Shaped[_tape_check(tape), _dims_string(tuple(dims))]
    variables = _type_variables(params)
    if not variables:
        return check
    alias: Any = type(check.__name__, (check,), {"__class_getitem__": classmethod(_substitute)})
    alias.__qualname__ = check.__qualname__
    alias.__module__ = check.__module__
    alias._shapegrad_params = params
    alias._shapegrad_variables = variables
    return alias


def _type_variables(params: tuple[Any, ...]) -> tuple[Any, ...]:
    found: list[Any] = []
    for param in params:
        inner = param
        if get_origin(param) is typing.Unpack or type(cast(object, param)).__name__ == "_UnpackGenericAlias":
            inner = get_args(param)[0]
        if isinstance(inner, (TypeVar, TypeVarTuple)) and inner not in found:
            found.append(inner)
        elif get_origin(inner) is OwnedTape:
            found.extend(a for a in get_args(inner) if isinstance(a, TypeVar) and a not in found)
    return tuple(found)


def _substitute(alias: Any, arguments: Any) -> Any:
    args: tuple[Any, ...] = arguments if isinstance(arguments, tuple) else (arguments,)  # pyright: ignore[reportUnknownVariableType] -- any type arguments
    variables: tuple[Any, ...] = alias._shapegrad_variables
    if len(args) != len(variables):
        names = ", ".join(v.__name__ for v in variables)
        raise TypeError(f"{alias.__name__} takes {len(variables)} type arguments ({names}), found {len(args)}")
    mapping = dict(zip(variables, args, strict=True))
    params: list[Any] = []
    for param in alias._shapegrad_params:
        unpacked = get_origin(param) is typing.Unpack or type(cast(object, param)).__name__ == "_UnpackGenericAlias"
        inner = get_args(param)[0] if unpacked else param
        if isinstance(inner, TypeVarTuple) and inner in mapping:
            value = mapping[inner]
            params.extend(get_args(value) if get_origin(value) is tuple else (value,))
        elif isinstance(inner, TypeVar) and inner in mapping:
            params.append(mapping[inner])
        elif get_origin(inner) is OwnedTape:
            owned: Any = OwnedTape
            params.append(owned[tuple(mapping.get(a, a) for a in get_args(inner))])
        else:
            params.append(param)
    return tensor_annotation(tuple(params))
