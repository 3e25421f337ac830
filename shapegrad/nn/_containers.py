"""Containers: ``Sequential`` chains layers, ``Residual`` adds a layer's input back."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, cast, overload

from .._dims import Open
from .._errors import ShapegradError
from .._tensor import Tensor
from .._typevars import A, B, C, D, E, F, G, H, I, J, K, N, O, S, T
from ._module import Chan, Layer

__all__ = ["Residual", "Sequential"]


class Sequential(Layer[I, O], checked=False):
    """Layers applied in order; its type is the chain's ``Layer[first in, last out]``.

    Construction is typed for chains of up to 8 layers: a 784→128 layer followed by a
    100→10 layer is a pyright error. (There is deliberately no catch-all overload, which
    would swallow every mismatch; nest Sequentials for longer chains.) Parameters are
    named by position: ``"0.weight"``, ``"2.bias"``.

    Examples:
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> from shapegrad.nn import Linear, ReLU, Sequential
        >>> mlp = Sequential(Linear[L[4], L[8]](), ReLU(), Linear[L[8], L[2]]())
        >>> [name for name, _ in mlp.named_parameters()]
        ['0.weight', '0.bias', '2.weight', '2.bias']
    """

    @overload
    def __init__(self: Sequential[A, B], l1: Layer[A, B], /) -> None: ...
    @overload
    def __init__(self: Sequential[A, C], l1: Layer[A, B], l2: Layer[B, C], /) -> None: ...
    @overload
    def __init__(self: Sequential[A, D], l1: Layer[A, B], l2: Layer[B, C], l3: Layer[C, D], /) -> None: ...
    @overload
    def __init__(
        self: Sequential[A, E], l1: Layer[A, B], l2: Layer[B, C], l3: Layer[C, D], l4: Layer[D, E], /
    ) -> None: ...
    @overload
    def __init__(
        self: Sequential[A, F], l1: Layer[A, B], l2: Layer[B, C], l3: Layer[C, D], l4: Layer[D, E], l5: Layer[E, F], /
    ) -> None: ...
    @overload
    def __init__(
        self: Sequential[A, G],
        l1: Layer[A, B],
        l2: Layer[B, C],
        l3: Layer[C, D],
        l4: Layer[D, E],
        l5: Layer[E, F],
        l6: Layer[F, G],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: Sequential[A, H],
        l1: Layer[A, B],
        l2: Layer[B, C],
        l3: Layer[C, D],
        l4: Layer[D, E],
        l5: Layer[E, F],
        l6: Layer[F, G],
        l7: Layer[G, H],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: Sequential[A, J],
        l1: Layer[A, B],
        l2: Layer[B, C],
        l3: Layer[C, D],
        l4: Layer[D, E],
        l5: Layer[E, F],
        l6: Layer[F, G],
        l7: Layer[G, H],
        l8: Layer[H, J],
        /,
    ) -> None: ...
    def __init__(self, *layers: Layer[Any, Any]) -> None:
        if not layers:
            raise ShapegradError("Sequential expects at least one layer, found none")
        self.layers: tuple[Layer[Any, Any], ...] = tuple(layers)

    def named_children(self) -> Iterator[tuple[str, Any]]:
        """The layers, named by position (``"0"``, ``"1"``, ...)."""
        for i, layer in enumerate(self.layers):
            yield str(i), layer

    def __len__(self) -> int:
        return len(self.layers)

    def __getitem__(self, index: int) -> Layer[Any, Any]:
        return self.layers[index]

    # A chain of convolutions takes images and gives feature maps (whose spatial sizes are
    # computed: open); one that ends in Flatten and Linear gives features; a chain of
    # Linear layers maps the last axis.
    @overload
    def __call__(self: Sequential[Chan[E], Chan[F]], x: Tensor[T, B, E, H, K]) -> Tensor[T, B, F, Open, Open]: ...  # pyright: ignore[reportOverlappingOverload] -- a chain ending in channels first; one ending in features (Flatten, then Linear) next
    @overload
    def __call__(self: Sequential[Chan[E], F], x: Tensor[T, B, E, H, K]) -> Tensor[T, B, F]: ...
    @overload
    def __call__(self, x: Tensor[T, *S, I]) -> Tensor[T, *S, O]: ...
    def __call__(self, x: Any) -> Any:
        y: Any = x
        for layer in self.layers:
            y = cast(Callable[[Any], Any], layer)(y)  # every concrete layer defines __call__
        return y


class Residual(Layer[N, N], checked=False):
    """``x + inner(x)``: a shape-preserving layer with a skip connection."""

    def __init__(self, inner: Layer[N, N]) -> None:
        self.inner = inner

    @overload
    def __call__(self: Residual[Chan[C]], x: Tensor[T, B, C, H, K]) -> Tensor[T, B, C, H, K]: ...
    @overload
    def __call__(self, x: Tensor[T, *S, N]) -> Tensor[T, *S, N]: ...
    def __call__(self, x: Any) -> Any:
        inner: Any = cast(Callable[[Any], Any], self.inner)(x)
        return x + inner
