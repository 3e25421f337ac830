"""Containers: ``Sequential`` chains layers, ``Residual`` adds a layer's input back."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast, overload

from typing_extensions import deprecated

from .._dims import Open
from .._errors import ShapegradError
from .._tensor import Tensor
from .._typevars import B, C, E, F, H, I, K, N, O, S, T
from ._module import Chan, ChanLayer, Layer

__all__ = ["Residual", "Sequential"]

# The sizes between the layers of a chain (Sequential's overloads): X0 in, X{k} after layer k.
X0 = TypeVar("X0")
X1 = TypeVar("X1")
X2 = TypeVar("X2")
X3 = TypeVar("X3")
X4 = TypeVar("X4")
X5 = TypeVar("X5")
X6 = TypeVar("X6")
X7 = TypeVar("X7")
X8 = TypeVar("X8")
X9 = TypeVar("X9")
X10 = TypeVar("X10")
X11 = TypeVar("X11")
X12 = TypeVar("X12")
X13 = TypeVar("X13")
X14 = TypeVar("X14")
X15 = TypeVar("X15")
X16 = TypeVar("X16")


class Sequential(Layer[I, O, I, O], checked=False):
    """Layers applied in order; its type is the chain's ``Layer[first in, last out]``.

    Construction is typed for chains of up to 16 layers: a 784→128 layer followed by a
    100→10 layer is a pyright error. Layers that all keep their size (``Sequential(*[Block()
    for _ in range(n)])``, each block a ``Layer[D, D]``) are typed at any length. (There is
    deliberately no catch-all overload for other chains, which would swallow every mismatch;
    a longer one is refused with a message that says to nest Sequentials.) Each link is a
    ``Layer`` or a ``ChanLayer``: ``BatchNorm1d[C]`` is both (``Layer[C, C]`` after a Linear,
    ``ChanLayer[Chan[C], Chan[C]]`` after a Conv1d); as the first link it reads as features. A
    module of your own goes into a typed chain as a ``Layer[I, O]`` subclass. Parameters are named by position:
    ``"0.weight"``, ``"2.bias"``.

    Examples:
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> from shapegrad.nn import Linear, ReLU, Sequential
        >>> mlp = Sequential(Linear[L[4], L[8]](), ReLU(), Linear[L[8], L[2]]())
        >>> [name for name, _ in mlp.named_parameters()]
        ['0.weight', '0.bias', '2.weight', '2.bias']
    """

    @overload
    def __init__(self: Sequential[X0, X1], l1: Layer[X0, X1] | ChanLayer[X0, X1], /) -> None: ...
    @overload
    def __init__(
        self: Sequential[X0, X2], l1: Layer[X0, X1] | ChanLayer[X0, X1], l2: Layer[X1, X2] | ChanLayer[X1, X2], /
    ) -> None: ...
    @overload
    def __init__(
        self: Sequential[X0, X3],
        l1: Layer[X0, X1] | ChanLayer[X0, X1],
        l2: Layer[X1, X2] | ChanLayer[X1, X2],
        l3: Layer[X2, X3] | ChanLayer[X2, X3],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: Sequential[X0, X4],
        l1: Layer[X0, X1] | ChanLayer[X0, X1],
        l2: Layer[X1, X2] | ChanLayer[X1, X2],
        l3: Layer[X2, X3] | ChanLayer[X2, X3],
        l4: Layer[X3, X4] | ChanLayer[X3, X4],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: Sequential[X0, X5],
        l1: Layer[X0, X1] | ChanLayer[X0, X1],
        l2: Layer[X1, X2] | ChanLayer[X1, X2],
        l3: Layer[X2, X3] | ChanLayer[X2, X3],
        l4: Layer[X3, X4] | ChanLayer[X3, X4],
        l5: Layer[X4, X5] | ChanLayer[X4, X5],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: Sequential[X0, X6],
        l1: Layer[X0, X1] | ChanLayer[X0, X1],
        l2: Layer[X1, X2] | ChanLayer[X1, X2],
        l3: Layer[X2, X3] | ChanLayer[X2, X3],
        l4: Layer[X3, X4] | ChanLayer[X3, X4],
        l5: Layer[X4, X5] | ChanLayer[X4, X5],
        l6: Layer[X5, X6] | ChanLayer[X5, X6],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: Sequential[X0, X7],
        l1: Layer[X0, X1] | ChanLayer[X0, X1],
        l2: Layer[X1, X2] | ChanLayer[X1, X2],
        l3: Layer[X2, X3] | ChanLayer[X2, X3],
        l4: Layer[X3, X4] | ChanLayer[X3, X4],
        l5: Layer[X4, X5] | ChanLayer[X4, X5],
        l6: Layer[X5, X6] | ChanLayer[X5, X6],
        l7: Layer[X6, X7] | ChanLayer[X6, X7],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: Sequential[X0, X8],
        l1: Layer[X0, X1] | ChanLayer[X0, X1],
        l2: Layer[X1, X2] | ChanLayer[X1, X2],
        l3: Layer[X2, X3] | ChanLayer[X2, X3],
        l4: Layer[X3, X4] | ChanLayer[X3, X4],
        l5: Layer[X4, X5] | ChanLayer[X4, X5],
        l6: Layer[X5, X6] | ChanLayer[X5, X6],
        l7: Layer[X6, X7] | ChanLayer[X6, X7],
        l8: Layer[X7, X8] | ChanLayer[X7, X8],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: Sequential[X0, X9],
        l1: Layer[X0, X1] | ChanLayer[X0, X1],
        l2: Layer[X1, X2] | ChanLayer[X1, X2],
        l3: Layer[X2, X3] | ChanLayer[X2, X3],
        l4: Layer[X3, X4] | ChanLayer[X3, X4],
        l5: Layer[X4, X5] | ChanLayer[X4, X5],
        l6: Layer[X5, X6] | ChanLayer[X5, X6],
        l7: Layer[X6, X7] | ChanLayer[X6, X7],
        l8: Layer[X7, X8] | ChanLayer[X7, X8],
        l9: Layer[X8, X9] | ChanLayer[X8, X9],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: Sequential[X0, X10],
        l1: Layer[X0, X1] | ChanLayer[X0, X1],
        l2: Layer[X1, X2] | ChanLayer[X1, X2],
        l3: Layer[X2, X3] | ChanLayer[X2, X3],
        l4: Layer[X3, X4] | ChanLayer[X3, X4],
        l5: Layer[X4, X5] | ChanLayer[X4, X5],
        l6: Layer[X5, X6] | ChanLayer[X5, X6],
        l7: Layer[X6, X7] | ChanLayer[X6, X7],
        l8: Layer[X7, X8] | ChanLayer[X7, X8],
        l9: Layer[X8, X9] | ChanLayer[X8, X9],
        l10: Layer[X9, X10] | ChanLayer[X9, X10],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: Sequential[X0, X11],
        l1: Layer[X0, X1] | ChanLayer[X0, X1],
        l2: Layer[X1, X2] | ChanLayer[X1, X2],
        l3: Layer[X2, X3] | ChanLayer[X2, X3],
        l4: Layer[X3, X4] | ChanLayer[X3, X4],
        l5: Layer[X4, X5] | ChanLayer[X4, X5],
        l6: Layer[X5, X6] | ChanLayer[X5, X6],
        l7: Layer[X6, X7] | ChanLayer[X6, X7],
        l8: Layer[X7, X8] | ChanLayer[X7, X8],
        l9: Layer[X8, X9] | ChanLayer[X8, X9],
        l10: Layer[X9, X10] | ChanLayer[X9, X10],
        l11: Layer[X10, X11] | ChanLayer[X10, X11],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: Sequential[X0, X12],
        l1: Layer[X0, X1] | ChanLayer[X0, X1],
        l2: Layer[X1, X2] | ChanLayer[X1, X2],
        l3: Layer[X2, X3] | ChanLayer[X2, X3],
        l4: Layer[X3, X4] | ChanLayer[X3, X4],
        l5: Layer[X4, X5] | ChanLayer[X4, X5],
        l6: Layer[X5, X6] | ChanLayer[X5, X6],
        l7: Layer[X6, X7] | ChanLayer[X6, X7],
        l8: Layer[X7, X8] | ChanLayer[X7, X8],
        l9: Layer[X8, X9] | ChanLayer[X8, X9],
        l10: Layer[X9, X10] | ChanLayer[X9, X10],
        l11: Layer[X10, X11] | ChanLayer[X10, X11],
        l12: Layer[X11, X12] | ChanLayer[X11, X12],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: Sequential[X0, X13],
        l1: Layer[X0, X1] | ChanLayer[X0, X1],
        l2: Layer[X1, X2] | ChanLayer[X1, X2],
        l3: Layer[X2, X3] | ChanLayer[X2, X3],
        l4: Layer[X3, X4] | ChanLayer[X3, X4],
        l5: Layer[X4, X5] | ChanLayer[X4, X5],
        l6: Layer[X5, X6] | ChanLayer[X5, X6],
        l7: Layer[X6, X7] | ChanLayer[X6, X7],
        l8: Layer[X7, X8] | ChanLayer[X7, X8],
        l9: Layer[X8, X9] | ChanLayer[X8, X9],
        l10: Layer[X9, X10] | ChanLayer[X9, X10],
        l11: Layer[X10, X11] | ChanLayer[X10, X11],
        l12: Layer[X11, X12] | ChanLayer[X11, X12],
        l13: Layer[X12, X13] | ChanLayer[X12, X13],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: Sequential[X0, X14],
        l1: Layer[X0, X1] | ChanLayer[X0, X1],
        l2: Layer[X1, X2] | ChanLayer[X1, X2],
        l3: Layer[X2, X3] | ChanLayer[X2, X3],
        l4: Layer[X3, X4] | ChanLayer[X3, X4],
        l5: Layer[X4, X5] | ChanLayer[X4, X5],
        l6: Layer[X5, X6] | ChanLayer[X5, X6],
        l7: Layer[X6, X7] | ChanLayer[X6, X7],
        l8: Layer[X7, X8] | ChanLayer[X7, X8],
        l9: Layer[X8, X9] | ChanLayer[X8, X9],
        l10: Layer[X9, X10] | ChanLayer[X9, X10],
        l11: Layer[X10, X11] | ChanLayer[X10, X11],
        l12: Layer[X11, X12] | ChanLayer[X11, X12],
        l13: Layer[X12, X13] | ChanLayer[X12, X13],
        l14: Layer[X13, X14] | ChanLayer[X13, X14],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: Sequential[X0, X15],
        l1: Layer[X0, X1] | ChanLayer[X0, X1],
        l2: Layer[X1, X2] | ChanLayer[X1, X2],
        l3: Layer[X2, X3] | ChanLayer[X2, X3],
        l4: Layer[X3, X4] | ChanLayer[X3, X4],
        l5: Layer[X4, X5] | ChanLayer[X4, X5],
        l6: Layer[X5, X6] | ChanLayer[X5, X6],
        l7: Layer[X6, X7] | ChanLayer[X6, X7],
        l8: Layer[X7, X8] | ChanLayer[X7, X8],
        l9: Layer[X8, X9] | ChanLayer[X8, X9],
        l10: Layer[X9, X10] | ChanLayer[X9, X10],
        l11: Layer[X10, X11] | ChanLayer[X10, X11],
        l12: Layer[X11, X12] | ChanLayer[X11, X12],
        l13: Layer[X12, X13] | ChanLayer[X12, X13],
        l14: Layer[X13, X14] | ChanLayer[X13, X14],
        l15: Layer[X14, X15] | ChanLayer[X14, X15],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: Sequential[X0, X16],
        l1: Layer[X0, X1] | ChanLayer[X0, X1],
        l2: Layer[X1, X2] | ChanLayer[X1, X2],
        l3: Layer[X2, X3] | ChanLayer[X2, X3],
        l4: Layer[X3, X4] | ChanLayer[X3, X4],
        l5: Layer[X4, X5] | ChanLayer[X4, X5],
        l6: Layer[X5, X6] | ChanLayer[X5, X6],
        l7: Layer[X6, X7] | ChanLayer[X6, X7],
        l8: Layer[X7, X8] | ChanLayer[X7, X8],
        l9: Layer[X8, X9] | ChanLayer[X8, X9],
        l10: Layer[X9, X10] | ChanLayer[X9, X10],
        l11: Layer[X10, X11] | ChanLayer[X10, X11],
        l12: Layer[X11, X12] | ChanLayer[X11, X12],
        l13: Layer[X12, X13] | ChanLayer[X12, X13],
        l14: Layer[X13, X14] | ChanLayer[X13, X14],
        l15: Layer[X14, X15] | ChanLayer[X14, X15],
        l16: Layer[X15, X16] | ChanLayer[X15, X16],
        /,
    ) -> None: ...
    # Sequential(*blocks), as PyTorch code builds a stack: layers that keep their size (a list
    # of transformer blocks) make a typed chain, a list of open layers an open one.
    @overload
    def __init__(self: Sequential[X0, X0], *layers: Layer[X0, X0]) -> None: ...
    @overload
    @deprecated(
        "Sequential is typed for chains of up to 16 layers: nest them "
        "(Sequential(Sequential(l1, ..., l8), Sequential(l9, ...))), which also names the parameters by block"
    )
    def __init__(
        self: Sequential[Any, Any],
        l1: Layer[Any, Any],
        l2: Layer[Any, Any],
        l3: Layer[Any, Any],
        l4: Layer[Any, Any],
        l5: Layer[Any, Any],
        l6: Layer[Any, Any],
        l7: Layer[Any, Any],
        l8: Layer[Any, Any],
        l9: Layer[Any, Any],
        l10: Layer[Any, Any],
        l11: Layer[Any, Any],
        l12: Layer[Any, Any],
        l13: Layer[Any, Any],
        l14: Layer[Any, Any],
        l15: Layer[Any, Any],
        l16: Layer[Any, Any],
        l17: Layer[Any, Any],
        /,
        *more: Layer[Any, Any],
    ) -> None: ...
    def __init__(self, *layers: Layer[Any, Any] | ChanLayer[Any, Any]) -> None:
        if not layers:
            raise ShapegradError("Sequential expects at least one layer, found none")
        # A ChanLayer is a second reading of a Layer (BatchNorm1d is both), never a layer alone.
        self.layers: tuple[Layer[Any, Any], ...] = tuple(cast(Layer[Any, Any], layer) for layer in layers)

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
    # The same for 1-D convolutions over (B, C, L) signals.
    @overload
    def __call__(self: Sequential[Chan[E], Chan[F]], x: Tensor[T, B, E, H]) -> Tensor[T, B, F, Open]: ...  # pyright: ignore[reportOverlappingOverload] -- a chain ending in channels first; one ending in features next
    @overload
    def __call__(self: Sequential[Chan[E], F], x: Tensor[T, B, E, H]) -> Tensor[T, B, F]: ...
    @overload
    def __call__(self, x: Tensor[T, *S, I]) -> Tensor[T, *S, O]: ...
    def __call__(self, x: Any) -> Any:
        y: Any = x
        for layer in self.layers:
            y = cast(Callable[[Any], Any], layer)(y)  # every concrete layer defines __call__
        return y


class Residual(Layer[N, N, N], checked=False):
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
