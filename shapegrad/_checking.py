"""Run-time checking of ``Tensor[...]`` annotations: jaxtyping + beartype underneath.

``SHAPEGRAD_CHECKS=0`` (read at import) turns it off: ``checked`` then returns the function
itself, so nothing is left on the call path.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar, TypeVarTuple, cast as typing_cast

from . import _hooks
from ._bounded import remember
from ._dims import literal_size
from ._errors import AnnotationError, ShapeError
from ._tensor import Tensor
from ._typevars import S, T

__all__ = ["cast", "checked", "checks_enabled"]

F = TypeVar("F", bound=Callable[..., Any])


def checks_enabled() -> bool:
    """Whether run-time checking is on (``SHAPEGRAD_CHECKS`` unset or not ``0``)."""
    return _hooks.checks_enabled


def checked(fn: F) -> F:
    """Check ``fn``'s ``Tensor[...]`` annotations on every call.

    Every named dim (``Batch``, a TypeVar) is bound once per call across the arguments and
    the return value, and the tape kind (``NoTape``/``OwnedTape``) is checked. A mismatch
    raises jaxtyping's ``TypeCheckError`` naming the parameter, the expected dims and the
    dims bound so far.

    Annotations written as strings (``from __future__ import annotations``) are resolved at
    the first call, in the function's module and the scope it was defined in, so a dim
    defined further down the module or inside the enclosing function is found; one that
    cannot be resolved raises ``AnnotationError`` at that call instead of going unchecked.

    Examples:
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> from shapegrad import Tensor, NoTape
        >>> class Batch(sg.Dim): ...
        >>> @sg.checked
        ... def first(x: Tensor[NoTape, Batch, L[3]]) -> Tensor[NoTape, L[3]]:
        ...     return x[0]
        >>> first(sg.zeros(5, 3)).shape
        (3,)
    """
    if not _hooks.checks_enabled:
        return fn
    return _SignatureCachedCheck(fn, _defining_scope()).wrapper  # pyright: ignore[reportReturnType] -- same call signature as fn


def _defining_scope() -> dict[str, Any] | None:
    """The local names of the function whose body is defining the checked function (the
    first frame outside shapegrad), or None at module level: string annotations may name a
    dim defined there."""
    frame = sys._getframe(2)  # the one way to see the caller's scope
    while frame is not None and frame.f_globals.get("__name__", "").startswith("shapegrad."):
        frame = frame.f_back
    if frame is None or frame.f_locals is frame.f_globals:
        return None
    return dict(frame.f_locals)


def _resolved_signature(fn: Callable[..., Any], scope: dict[str, Any] | None) -> inspect.Signature:
    """``fn``'s signature with string annotations evaluated (jaxtyping alone would turn one it
    cannot evaluate at decoration time into ``Any``: no check at all)."""
    signature = inspect.signature(fn)
    annotations = [p.annotation for p in signature.parameters.values()] + [signature.return_annotation]
    if not any(isinstance(a, str) for a in annotations):
        return signature
    try:
        hints = typing.get_type_hints(fn, globalns=getattr(fn, "__globals__", None), localns=scope, include_extras=True)
    except Exception as exc:
        raise AnnotationError(
            f"the annotations of {getattr(fn, '__qualname__', fn)!r} could not be resolved at its first call "
            f"({type(exc).__name__}: {exc}); expected every name they use to be defined in its module or in the "
            "function that defines it, before that call. Unresolved, they would check nothing."
        ) from exc
    parameters = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in signature.parameters.values()]
    return signature.replace(parameters=parameters, return_annotation=hints.get("return", signature.return_annotation))


def _jaxtyped() -> Any:
    """jaxtyping's ``jaxtyped``, told not to import JAX.

    On its first use jaxtyping imports JAX, where JAX is installed, only to hide its own frames
    from JAX's tracebacks: ~140 MiB and half a second for a program that never uses JAX.
    shapegrad's checks run no JAX code, so the flag that asks for it is cleared first.
    """
    import jaxtyping._decorator as decorator_module

    module: Any = decorator_module
    if getattr(module, "_tb_flag", False):
        module._tb_flag = False
    return module.jaxtyped


_SCALARS = frozenset({int, float, bool, str, complex, type(None)})
_CACHE_LIMIT = 4096


def _describe(value: object) -> Any:
    """Everything a cache-safe check reads of ``value`` (a tensor's class, tape, shape and
    dtype; a scalar's type and value), or None where the check could read more than that
    (any other object)."""
    kind: type = type(value)
    if kind in _SCALARS:
        return (kind, value)
    if isinstance(value, Tensor):
        tensor: Any = typing_cast(Any, value)
        # The backend before the dtype: two backends' dtype objects are never compared.
        return (kind, tensor.traced, tensor.shape, tensor._backend, tensor._data.dtype)
    if isinstance(value, (tuple, list)):
        items = tuple(_describe(item) for item in typing_cast("tuple[object, ...] | list[object]", value))
        return None if None in items else (kind, items)
    return None


def _cache_safe(annotation: Any) -> bool:
    """Whether a check of ``annotation`` reads no more of a value than :func:`_describe`
    keeps: then a call that looks like one that passed passes too. ``Tensor[...]`` and
    jaxtyping's dtype annotations (``Float32[sg.Tensor, "b"]``) read class, tape, shape and
    dtype; a beartype validator (``Annotated[..., Is[...]]``), a protocol or an arbitrary
    class may read anything, so a function using one is checked in full on every call."""
    from jaxtyping import AbstractArray

    from ._annotations import run_time_check  # imports jaxtyping: not at import (SHAPEGRAD_CHECKS=0)

    annotation = run_time_check(annotation)  # a Tensor[...] holding TypeVars: its check class
    if annotation in (inspect.Parameter.empty, Any, Ellipsis, None, Tensor) or annotation in _SCALARS:
        return True
    if isinstance(annotation, TypeVar):
        bound, constraints = annotation.__bound__, annotation.__constraints__
        return (bound is None or _cache_safe(bound)) and all(_cache_safe(c) for c in constraints)
    if isinstance(annotation, type) and issubclass(annotation, AbstractArray):
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return True
    if origin in (tuple, list, typing.Union, types.UnionType):
        return all(_cache_safe(a) for a in typing.get_args(annotation))
    return False


class _SignatureCachedCheck:
    """jaxtyping + beartype's check of ``fn``, run in full only for argument and result
    signatures it has not yet passed.

    A ``Tensor[...]`` check reads a tensor's class, tape and shape and nothing else, so
    a call whose arguments and result look the same as an earlier call's that passed passes
    too: the second check of a training step's every call would repeat the first (~35 µs a
    call: argument binding and jaxtyping's dim scope). Any argument the check could read more
    of (a list of arrays, a config object under an annotation) sends the call through the full
    check, and so does every failure: error messages are jaxtyping's own. A function with
    an annotation that could read more (:func:`_cache_safe`) is checked in full every time.

    The check is built at the first call, when string annotations can be resolved.
    """

    def __init__(self, fn: Callable[..., Any], scope: dict[str, Any] | None) -> None:
        self.fn = fn
        self.scope = scope
        self.full: Callable[..., Any] | None = None  # built at the first call
        self.cacheable = False
        self.passed: set[Any] = set()  # (arguments, result) signatures that passed
        self.known_arguments: set[Any] = set()  # argument signatures that passed
        self.local = threading.local()  # a result already computed, for the check to return
        self.positional_checked: list[bool] = []
        self.keyword_checked: dict[str, bool] = {}
        self.extra_checked = False
        local = self.local

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            full = self.full
            if full is None:
                full = self.build()
            if not self.cacheable:
                return full(*args, **kwargs)
            arguments = self.arguments_signature(args, kwargs)
            if arguments is None or arguments not in self.known_arguments:
                result = full(*args, **kwargs)
                if arguments is not None:
                    self.remember(arguments, result)
                return result
            result = fn(*args, **kwargs)
            if (arguments, _describe(result)) in self.passed:
                return result
            local.result = result
            try:
                full(*args, **kwargs)
            finally:
                local.result = _NOTHING
            self.remember(arguments, result)
            return result

        # sg.summary resolves the annotations where this check does (fn and its defining scope
        # included); set once here, nothing on the call path.
        setattr(wrapper, "_shapegrad_check", self)
        self.wrapper = wrapper

    def build(self) -> Callable[..., Any]:
        """jaxtyping + beartype over a stand-in with ``fn``'s resolved signature."""
        from beartype import beartype

        fn = self.fn
        signature = _resolved_signature(fn, self.scope)
        parameters = list(signature.parameters.values())
        unchecked = (inspect.Parameter.empty, Any, "Any", "typing.Any")
        positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        # Per position: whether the check looks at that argument at all.
        self.positional_checked = [p.annotation not in unchecked for p in positional]
        self.keyword_checked = {p.name: p.annotation not in unchecked for p in parameters}
        star = [p for p in parameters if p.kind == p.VAR_POSITIONAL]
        self.extra_checked = bool(star) and star[0].annotation not in unchecked
        annotations = [p.annotation for p in parameters] + [signature.return_annotation]
        cacheable = all(_cache_safe(a) for a in annotations)

        local = self.local
        nothing = _NOTHING  # replay runs with fn's globals: everything it uses is a closure cell

        def replay(*args: Any, **kwargs: Any) -> Any:
            pending = getattr(local, "result", nothing)
            if pending is nothing:
                return fn(*args, **kwargs)
            local.result = nothing
            return pending

        # The stand-in must resolve fn's string annotations in fn's own module.
        globals_of: Any = getattr(fn, "__globals__", globals())
        stand_in: Any = types.FunctionType(replay.__code__, globals_of, fn.__name__, None, replay.__closure__)
        functools.update_wrapper(stand_in, fn)
        del stand_in.__wrapped__  # jaxtyping must read the resolved signature, not fn's strings
        stand_in.__signature__ = signature
        stand_in.__annotations__ = {
            **{p.name: p.annotation for p in parameters if p.annotation is not inspect.Parameter.empty},
            **(
                {}
                if signature.return_annotation is inspect.Signature.empty
                else {"return": signature.return_annotation}
            ),
        }
        decorate: Any = _jaxtyped()(typechecker=beartype)
        full: Callable[..., Any] = decorate(stand_in)
        self.cacheable = cacheable
        self.full = full
        return full

    def arguments_signature(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        described: list[Any] = []
        checked = self.positional_checked
        for i, value in enumerate(args):
            if i < len(checked) and not checked[i]:
                described.append(_OPAQUE)
                continue
            if i >= len(checked) and not self.extra_checked:
                described.append(_OPAQUE)
                continue
            d = _describe(value)
            if d is None:
                return None
            described.append(d)
        for name, value in kwargs.items():
            if not self.keyword_checked.get(name, True):
                described.append((name, _OPAQUE))
                continue
            d = _describe(value)
            if d is None:
                return None
            described.append((name, d))
        return tuple(described)

    def remember(self, arguments: Any, result: Any) -> None:
        described = _describe(result)
        if described is None:
            return
        if len(self.passed) >= _CACHE_LIMIT:
            self.passed.clear()
            self.known_arguments.clear()
        self.known_arguments.add(arguments)
        self.passed.add((arguments, described))


_NOTHING: Any = object()
_OPAQUE: Any = ("unchecked",)


# cast's input has TypeVars of its own, each used once on purpose: an `Any` parameter would give
# the expression inside the cast an expected type that solves a function-form op's TypeVars to
# Any (`sg.cast(sg.concat([a, b], axis=1), ...)` with mismatched dims accepted); with these the
# expression is checked as if it stood alone (issue #23).
_InTape = TypeVar("_InTape")
_InDims = TypeVarTuple("_InDims")


def cast(x: Tensor[_InTape, *_InDims], to: type[Tensor[T, *S]]) -> Tensor[T, *S]:
    """``x``, now typed as ``to``, after checking at run time that it fits.

    Python cannot compute sizes in types, so ops such as ``reshape``, ``concat`` and
    ``flatten`` return open dims; ``cast`` states the real ones and verifies them.
    Fixed sizes, rank and tape are checked; named dims are checked for consistency
    within ``to``. Rank and literal sizes are checked even with ``SHAPEGRAD_CHECKS=0``.

    The expression inside a cast is type-checked as if it stood alone: casting
    ``sg.concat([a, b], axis=1)`` states the joined axis, while mismatched dims of ``a`` and
    ``b`` are still reported. Cast only the dims Python cannot compute; a cast that
    contradicts a size the input's type already says (``L[8]`` to ``L[16]``) passes the
    static check but raises ``ShapeError`` when it runs.

    Examples:
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> from shapegrad import Tensor, NoTape
        >>> y = sg.cast(sg.zeros(2, 3).reshape(6), Tensor[NoTape, L[6]])
        >>> y.shape
        (6,)
    """
    if not _hooks.checks_enabled:
        # A cast is a statement about sizes: its literal sizes hold even with checks off (a
        # comparison of ints, not jaxtyping's check).
        _literal_sizes_fit(x, to)
        return x  # pyright: ignore[reportReturnType] -- named dims unchecked (SHAPEGRAD_CHECKS=0)
    key = _cast_key(x, to)
    if key is not None and key in _casts_passed:
        return x  # pyright: ignore[reportReturnType] -- this target and signature passed before
    _check_cast(x, to)
    if key is not None:
        if len(_casts_passed) >= _CACHE_LIMIT:
            _casts_passed.clear()
        _casts_passed.add(key)
    return x  # pyright: ignore[reportReturnType] -- verified above


# (target, described input) pairs whose cast passed. jaxtyping checks a cast in a scope of its
# own (the enclosing call's dims play no part) and reads the input's class, tape, shape and
# dtype only, all in :func:`_describe`: an input described alike passes alike. The full check
# costs ~10 µs (jaxtyping builds a decorated function per call); a decoding step makes a few.
_casts_passed: set[Any] = set()
# target -> whether its check reads no more than _describe keeps (:func:`_cache_safe`)
_cast_targets_safe: dict[Any, bool] = {}


def _cast_key(x: Any, to: Any) -> Any:
    """The cache key of ``cast(x, to)``, or None where its outcome may depend on more than
    the key holds (a target with a validator; an unhashable target)."""
    try:
        safe = _cast_targets_safe.get(to)
        if safe is None:
            safe = remember(_cast_targets_safe, to, _cache_safe(to), _CACHE_LIMIT)
    except TypeError:  # an unhashable target: checked in full every time
        return None
    if not safe:
        return None
    described = _describe(x)
    return None if described is None else (to, described)


def _check_cast(x: Any, to: Any) -> None:
    """jaxtyping's check of ``x`` against ``to``, in a fresh scope for its named dims;
    ``ShapeError`` saying why when it fails."""
    from ._annotations import run_time_check

    jaxtyped = _jaxtyped()
    spec: Any = run_time_check(to)  # Tensor[T, ...] (a generic alias): the class that checks it
    checker: Any = getattr(spec, "__class__")

    def _check() -> str:
        # jaxtyping's check of one annotation, in a fresh scope for its named dims.
        return str(checker.__instancecheck_str__(spec, x))

    within_scope: Any = jaxtyped(typechecker=None)
    reason: str = within_scope(_check)()
    if reason:
        dims, kind = getattr(spec, "dim_str", "?"), getattr(spec, "array_type", spec)
        raise ShapeError(f"cast to {kind!r} with dims ({dims}) failed: {reason}; found {x!r}")


def _literal_sizes_fit(x: Tensor[Any, *tuple[Any, ...]], to: Any) -> None:
    """Refuse a cast whose target's rank or literal sizes contradict ``x``'s shape (``to`` is
    the plain generic alias ``Tensor[tape, *dims]`` that checks-off mode builds)."""
    dims = typing.get_args(to)[1:]
    if not all(isinstance(d, type) or literal_size(d) is not None for d in dims):
        return  # a TypeVar, a variadic or a starred dim: no fixed rank to compare
    shape = tuple(x.shape)
    if len(dims) != len(shape):
        raise ShapeError(f"cast to {to!r} failed: expected rank {len(dims)}, found shape {shape}")
    for axis, (dim, size) in enumerate(zip(dims, shape, strict=True)):
        expected = literal_size(dim)  # L[784], or Sum/Prod/Half/Twice of literals
        if expected is not None and expected != size:
            raise ShapeError(
                f"cast to {to!r} failed: axis {axis} expected size {expected}, found {size} (shape {shape})"
            )
