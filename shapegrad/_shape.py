"""``Tensor.shape``: the sizes as ints at run time, typed by the tensor's own dims.

``B, S, C = x.shape`` on a ``Tensor[T, Batch, Seq, L[32]]`` gives ``Batch``, ``Seq`` and
``L[32]`` to the checker, so ``x.reshape(B, S, C)``, ``sg.zeros(B, C)`` or ``sg.arange(S)``
keep those dims instead of turning them open. A dim is an ``int`` at run time whatever its
type (``Batch`` is an ``int`` subclass, ``L[32]`` a literal int), so the types say nothing
false about the values.

The descriptor's overloads type a shape only where every dim is an int to the checker: a
literal, a ``sg.Dim`` (``Open`` included), a ``Prod``/``Sum``/``Half``/``Twice``, or a TypeVar
bound to int. A tensor with a dim of an unbounded TypeVar (``def f(x: Tensor[T, B, D])``),
a TypeVarTuple or an open rank gets ``tuple[int, ...]`` as before: its sizes stay usable in
arithmetic, ``range`` and ``math.sqrt`` (an unbounded TypeVar is an ``object`` to the checker).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Never, overload

from typing_extensions import TypeVar

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = ["ShapeOf"]

_I0 = TypeVar("_I0", bound=int)
_I1 = TypeVar("_I1", bound=int)
_I2 = TypeVar("_I2", bound=int)
_I3 = TypeVar("_I3", bound=int)
_I4 = TypeVar("_I4", bound=int)


class ShapeOf:
    """The type of ``Tensor.shape`` as the checker sees it, per rank (1-5); at run time the
    attribute is a property returning ``tuple(x._data.shape)``."""

    @overload
    def __get__(self, tensor: None, owner: type[Any], /) -> ShapeOf: ...
    @overload
    def __get__(self, tensor: Tensor[Any, *tuple[Never, ...]], owner: type[Any], /) -> tuple[int, ...]: ...
    @overload
    def __get__(self, tensor: Tensor[Any, _I0], owner: type[Any], /) -> tuple[_I0]: ...
    @overload
    def __get__(self, tensor: Tensor[Any, _I0, _I1], owner: type[Any], /) -> tuple[_I0, _I1]: ...
    @overload
    def __get__(self, tensor: Tensor[Any, _I0, _I1, _I2], owner: type[Any], /) -> tuple[_I0, _I1, _I2]: ...
    @overload
    def __get__(self, tensor: Tensor[Any, _I0, _I1, _I2, _I3], owner: type[Any], /) -> tuple[_I0, _I1, _I2, _I3]: ...
    @overload
    def __get__(
        self, tensor: Tensor[Any, _I0, _I1, _I2, _I3, _I4], owner: type[Any], /
    ) -> tuple[_I0, _I1, _I2, _I3, _I4]: ...
    @overload
    def __get__(self, tensor: Tensor[Any, *tuple[Any, ...]], owner: type[Any], /) -> tuple[int, ...]: ...
    def __get__(self, tensor: Tensor[Any, *tuple[Any, ...]] | None, owner: type[Any], /) -> Any:
        """The size of each axis."""
        return self if tensor is None else tuple(tensor._data.shape)
