"""Run-time checking of ``Tensor[...]`` annotations: jaxtyping + beartype underneath.

``SHAPEGRAD_CHECKS=0`` (read at import) turns it off: ``checked`` then returns the function
itself, so nothing is left on the call path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

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
    from beartype import beartype
    from jaxtyping import jaxtyped  # pyright: ignore[reportUnknownVariableType] -- partly untyped upstream

    decorate: Any = jaxtyped(typechecker=beartype)
    return decorate(fn)


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
    from jaxtyping import jaxtyped  # pyright: ignore[reportUnknownVariableType] -- partly untyped upstream

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
