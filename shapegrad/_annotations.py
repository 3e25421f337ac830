"""The run-time meaning of ``Tensor[Tape, *Dims]``: a jaxtyping check of dims and tape.

``Tensor.__class_getitem__`` hands its parameters here. Literal sizes become fixed dims,
``sg.Dim`` subclasses and TypeVars become named dims that a checked call binds once,
``int``/``Any`` are unchecked, a TypeVarTuple becomes a variadic dim. The tape parameter
picks the array type jaxtyping checks first: untraced, traced, or either.
"""

from __future__ import annotations

import functools
import types
import typing
from typing import Any, TypeVar, TypeVarTuple, cast, get_args, get_origin

from jaxtyping import Shaped

from ._autodiff import NoTape, OwnedTape
from ._dims import Dim, Half, Open, Prod, Sum, Twice, literal_size
from ._no_grad import inside_no_grad

__all__ = ["GenericTensor", "run_time_check", "tensor_annotation"]


class _TapeCheck(type):
    """Metaclass of the tape checks: isinstance tests the tape, repr reads as prose."""

    label: str
    wants_traced: bool | None

    def __instancecheck__(cls, obj: object) -> bool:
        from ._tensor import Tensor

        if not isinstance(obj, Tensor):
            return False
        wanted = cls.wants_traced
        if wanted is None or obj.traced == wanted:
            return True
        # Inside sg.no_grad() ops give untraced results where the types say traced: a model
        # annotated for training is evaluated there as it is
        return wanted and inside_no_grad()

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
    if _is_unpacked(param):
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
    """The object that checks ``Tensor[*params]`` at run time.

    Without TypeVars it is a jaxtyping class. With TypeVars it is a :class:`GenericTensor`,
    which ``typing`` and builtin generics see as a generic alias (``tuple[Vec, Vec][NoTape]``
    substitutes into it) and beartype checks as its jaxtyping class.
    """
    if not params:
        raise TypeError("Tensor[...] expects a tape first (NoTape, OwnedTape[M] or a TypeVar), then the dims")
    tape, *dims = params
    check: Any = Shaped[_tape_check(tape), _dims_string(tuple(dims))]
    variables = _type_variables(params)
    if not variables:
        return check
    # The check class of the alias: jaxtyping's, plus what substitution reads (summary reads
    # the params too), plus a subscription that rebuilds the alias from its params, which is
    # how typing.get_type_hints re-evaluates a builtin generic alias (``origin[args]``).
    origin: Any = type(check.__name__, (check,), {"__class_getitem__": classmethod(_rebuild)})
    origin.__qualname__ = check.__qualname__
    origin.__module__ = check.__module__
    origin._shapegrad_params = params
    origin._shapegrad_variables = variables
    return GenericTensor(origin, params)


class GenericTensor(types.GenericAlias):
    """``Tensor[...]`` holding TypeVars at run time: a generic alias that is not a class.

    ``typing`` and builtin generics skip classes when they collect the TypeVars of their
    arguments, so a class here left ``Hidden = tuple[Vec, Vec]`` with no parameters and
    ``Hidden[T]`` a TypeError. As a ``types.GenericAlias`` (origin: the jaxtyping check class,
    args: the ``Tensor`` params) it is collected and substituted like ``list[T]``, and
    beartype checks it as its origin class, as it does any unrecognized builtin alias.

    Attribute reads other than the alias's own dunders go to the origin class (GenericAlias
    forwards them), so the methods here read their data from ``__origin__``.
    """

    @property
    def __parameters__(self) -> tuple[Any, ...]:
        # The TypeVars substitution replaces, in its order (not GenericAlias's own collection,
        # which would also find TypeVars inside dims that substitution leaves alone).
        origin: Any = self.__origin__
        return origin._shapegrad_variables

    def __getitem__(self, arguments: Any) -> Any:
        """``Vec[NoTape]``: the Tensor annotation with the arguments in place of the TypeVars."""
        return _substitute(self.__origin__, arguments)

    def __repr__(self) -> str:
        # As its check class is named (``jaxtyping.Shaped[Tensor, 'Batch 3']``): jaxtyping's
        # messages print the dims it checks, whatever the alias is nested in.
        origin: Any = self.__origin__
        return f"{origin.__module__}.{origin.__qualname__}"


def run_time_check(annotation: Any) -> Any:
    """The class ``isinstance`` checks ``annotation`` with: a :class:`GenericTensor`'s origin,
    or ``annotation`` itself."""
    return annotation.__origin__ if isinstance(annotation, GenericTensor) else annotation


def _rebuild(_origin: Any, params: Any) -> Any:
    return tensor_annotation(_as_tuple(params))


def _as_tuple(arguments: Any) -> tuple[Any, ...]:
    """A subscription's arguments: ``X[a]`` hands ``a`` over, ``X[a, b]`` a tuple."""
    return arguments if isinstance(arguments, tuple) else (arguments,)  # pyright: ignore[reportUnknownVariableType] -- any type arguments


def _is_unpacked(param: Any) -> bool:
    return get_origin(param) is typing.Unpack or type(cast(object, param)).__name__ == "_UnpackGenericAlias"


def _type_variables(params: tuple[Any, ...]) -> tuple[Any, ...]:
    found: list[Any] = []
    for param in params:
        inner = get_args(param)[0] if _is_unpacked(param) else param
        if isinstance(inner, (TypeVar, TypeVarTuple)) and inner not in found:
            found.append(inner)
        elif get_origin(inner) is OwnedTape:
            found.extend(a for a in get_args(inner) if isinstance(a, TypeVar) and a not in found)
    return tuple(found)


def _bind(origin: Any, args: tuple[Any, ...]) -> dict[Any, Any]:
    """Each TypeVar of ``origin`` mapped to its argument, as ``typing`` maps them: a
    TypeVarTuple takes the arguments the TypeVars around it leave (a tuple of them)."""
    variables: tuple[Any, ...] = origin._shapegrad_variables
    variadic = [i for i, v in enumerate(variables) if isinstance(v, TypeVarTuple)]
    fits = len(args) >= len(variables) - 1 if variadic else len(args) == len(variables)
    if not fits:
        names = ", ".join(v.__name__ for v in variables)
        raise TypeError(f"{origin.__name__} takes {len(variables)} type arguments ({names}), found {len(args)}")
    if not variadic:
        return dict(zip(variables, args, strict=True))
    # One variadic dim per Tensor (jaxtyping allows one): the TypeVars after it take the last
    # arguments. Builtin and typing aliases hand ``tuple[Vec, Vec][NoTape, B, S]`` down flat.
    at = variadic[0]
    after = len(variables) - at - 1
    end = len(args) - after
    return {
        **dict(zip(variables[:at], args[:at], strict=True)),
        variables[at]: args[at:end],
        **dict(zip(variables[at + 1 :], args[end:], strict=True)),
    }


def _substitute(origin: Any, arguments: Any) -> Any:
    args = _as_tuple(arguments)
    mapping = _bind(origin, args)
    params: list[Any] = []
    for param in origin._shapegrad_params:
        inner = get_args(param)[0] if _is_unpacked(param) else param
        if isinstance(inner, TypeVarTuple) and inner in mapping:
            for value in mapping[inner]:
                # ``tuple[B, S]`` (or ``*tuple[B, S]``) given for the variadic dims: its dims.
                params.extend(get_args(value) if get_origin(value) is tuple else (value,))
        elif isinstance(inner, TypeVar) and inner in mapping:
            params.append(mapping[inner])
        elif get_origin(inner) is OwnedTape:
            owned: Any = OwnedTape
            params.append(owned[tuple(mapping.get(a, a) for a in get_args(inner))])
        else:
            params.append(param)
    return tensor_annotation(tuple(params))
