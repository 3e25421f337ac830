"""Run-time checking of ``Tensor[...]`` annotations: jaxtyping + beartype underneath.

``SHAPEGRAD_CHECKS=0`` (read at import) turns it off: ``checked`` then returns the function
itself, so nothing is left on the call path.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast as typing_cast

from . import _hooks
from ._errors import ShapeError
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
    return _SignatureCachedCheck(fn).wrapper  # pyright: ignore[reportReturnType] -- same call signature as fn


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
    """Everything a ``Tensor[...]`` check reads of ``value`` (class, tape, shape: the dims are
    ``Shaped``, any dtype), or None where the check could read more than that (any other
    object)."""
    kind: type = type(value)
    if kind in _SCALARS:
        return (kind, value)
    if isinstance(value, Tensor):
        tensor: Any = typing_cast(Any, value)
        return (kind, tensor.traced, tensor.shape)
    if isinstance(value, (tuple, list)):
        items = tuple(_describe(item) for item in typing_cast("tuple[object, ...] | list[object]", value))
        return None if None in items else (kind, items)
    return None


class _SignatureCachedCheck:
    """jaxtyping + beartype's check of ``fn``, run in full only for argument and result
    signatures it has not yet passed.

    A ``Tensor[...]`` check reads a tensor's class, tape and shape and nothing else, so
    a call whose arguments and result look the same as an earlier call's that passed passes
    too: the second check of a training step's every call would repeat the first (~35 µs a
    call: argument binding and jaxtyping's dim scope). Any argument the check could read more
    of (a list of arrays, a config object under an annotation) sends the call through the full
    check, and so does every failure: error messages are jaxtyping's own.
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        import inspect
        import types

        from beartype import beartype

        jaxtyped = _jaxtyped()

        self.passed: set[Any] = set()  # (arguments, result) signatures that passed
        self.known_arguments: set[Any] = set()  # argument signatures that passed
        self.local = threading.local()  # a result already computed, for the check to return

        parameters = list(inspect.signature(fn).parameters.values())
        unchecked = (inspect.Parameter.empty, Any, "Any", "typing.Any")
        positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        # Per position: whether the check looks at that argument at all.
        self.positional_checked = [p.annotation not in unchecked for p in positional]
        self.keyword_checked = {p.name: p.annotation not in unchecked for p in parameters}
        star = [p for p in parameters if p.kind == p.VAR_POSITIONAL]
        self.extra_checked = bool(star) and star[0].annotation not in unchecked

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
        decorate: Any = jaxtyped(typechecker=beartype)
        self.full: Callable[..., Any] = decorate(stand_in)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            arguments = self.arguments_signature(args, kwargs)
            if arguments is None or arguments not in self.known_arguments:
                result = self.full(*args, **kwargs)
                if arguments is not None:
                    self.remember(arguments, result)
                return result
            result = fn(*args, **kwargs)
            if (arguments, _describe(result)) in self.passed:
                return result
            local.result = result
            try:
                self.full(*args, **kwargs)
            finally:
                local.result = nothing
            self.remember(arguments, result)
            return result

        self.wrapper = wrapper

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


def cast(x: Tensor[Any, *tuple[Any, ...]], to: type[Tensor[T, *S]]) -> Tensor[T, *S]:
    """``x``, now typed as ``to``, after checking at run time that it fits.

    Python cannot compute sizes in types, so ops such as ``reshape``, ``concat`` and
    ``flatten`` return open dims; ``cast`` states the real ones and verifies them.
    Fixed sizes, rank and tape are checked; named dims are checked for consistency
    within ``to``.

    Examples:
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> from shapegrad import Tensor, NoTape
        >>> y = sg.cast(sg.zeros(2, 3).reshape(6), Tensor[NoTape, L[6]])
        >>> y.shape
        (6,)
    """
    if not _hooks.checks_enabled:
        return x  # pyright: ignore[reportReturnType] -- checking is off (SHAPEGRAD_CHECKS=0)
    jaxtyped = _jaxtyped()
    spec: Any = to
    checker: Any = getattr(spec, "__class__")

    def _check() -> str:
        # jaxtyping's check of one annotation, in a fresh scope for its named dims.
        return str(checker.__instancecheck_str__(spec, x))

    within_scope: Any = jaxtyped(typechecker=None)
    reason: str = within_scope(_check)()
    if reason:
        dims = getattr(to, "dim_str", "?")
        raise ShapeError(f"cast to {getattr(to, 'array_type', to)!r} with dims ({dims}) failed: {reason}; found {x!r}")
    return x  # pyright: ignore[reportReturnType] -- verified above
