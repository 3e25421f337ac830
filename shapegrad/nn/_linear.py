"""Dense layers: ``Linear`` and ``Embedding``."""

from __future__ import annotations

import math
from typing import Any, overload

import numpy as np
from typing_extensions import TypeVar

from .._autodiff import NoTape
from .._dims import Open
from .._errors import HyperparameterError
from .._tensor import Tensor, wrap
from .._typevars import K, S, T
from ..ops._toolkit import integer
from ..ops.creation import Generator, default_generator
from ..ops.linalg import linear
from ._module import Layer, out_in, parameter
from ._torch_config import expect_kind, same, supported

__all__ = ["Embedding", "Linear", "uniform_parameter"]

# Sizes given as plain ints (Linear(n_embd, 4 * n_embd)) leave these unsolved: Open, the
# size the type could not compute, never int (which matches no dim) nor Unknown.
I = TypeVar("I", default=Open)
O = TypeVar("O", default=Open)
V = TypeVar("V", default=Open)
D = TypeVar("D", default=Open)


def uniform_parameter(shape: tuple[int, ...], bound: float, generator: Generator | None, dtype: str) -> Any:
    """A parameter drawn from ``U(-bound, bound)`` (PyTorch's default for dense and conv)."""
    gen = generator or default_generator()
    return parameter(wrap(gen.uniform(shape, -bound, bound, dtype=dtype), gen.backend))


class Linear(Layer[I, O, I, O], checked=False):
    """``y = x @ weight + bias``, mapping the last axis from ``I`` to ``O`` features.

    Args:
        in_features: the input size ``I``: needed when it is not a ``Literal`` type argument;
            given with one (``Linear[L[64], L[256]](n_embd, 4 * n_embd)``), it must agree
            (a ``ShapeError`` names both). Plain ints without type arguments make the
            sizes ``Open``; ``sg.Dim`` instances keep their class.
        out_features: the output size ``O``, as ``in_features``.
        bias: whether to add a learned bias.
        generator: the source of the initial values (``U(±1/√in)``, as PyTorch).
        dtype: the parameters' dtype.

    ``weight`` has shape ``(in, out)`` so the forward pass needs no transpose; PyTorch's
    ``nn.Linear.weight`` is its transpose.

    Examples:
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> layer = sg.nn.Linear[L[3], L[2]](generator=sg.Generator(0))
        >>> layer(sg.ones(5, 3)).shape
        (5, 2)
    """

    def __init__(
        self,
        in_features: I | int | None = None,
        out_features: O | int | None = None,
        *,
        bias: bool = True,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None:
        self.in_features = self._size_arg(0, in_features, "in_features")
        self.out_features = self._size_arg(1, out_features, "out_features")
        bound = 1.0 / math.sqrt(self.in_features) if self.in_features else 0.0
        self.weight: Tensor[NoTape, I, O] = uniform_parameter(
            (self.in_features, self.out_features), bound, generator, dtype
        )
        self.bias: Tensor[NoTape, O] | None = (
            uniform_parameter((self.out_features,), bound, generator, dtype) if bias else None
        )

    def torch_layout(self, name: str, array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """PyTorch's ``weight`` is ``(out, in)``: transposed into ours."""
        return np.ascontiguousarray(array.T) if name == "weight" and array.ndim == 2 else array

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch module other than ``nn.Linear`` (its settings are all in its tensors)."""
        expect_kind(torch_module, path, self, "Linear")

    # A layer built from plain ints (Linear(n_embd, vocab): Linear[Open, ...]) does not know
    # its input size: it takes any last axis, which the run time checks against its weight.
    @overload
    def __call__(self: Linear[Open, K], x: Tensor[T, *S, Any]) -> Tensor[T, *S, K]: ...
    @overload
    def __call__(self, x: Tensor[T, *S, I]) -> Tensor[T, *S, O]: ...
    def __call__(self, x: Any) -> Any:
        # One fused op (see ops.linalg.linear); its dims are stated by the signatures above.
        return linear(x, self.weight, self.bias)


class Embedding(Layer[V, D, V, D], checked=False):
    """A table of ``V`` learned ``D``-vectors, looked up by integer ids.

    Trace the ids (``ids.trace(grads)``) to put the lookup on a tape: integer tensors carry
    the tape without receiving a gradient. Initialised from ``N(0, 1)`` as PyTorch.

    Args:
        num_embeddings: the number of rows ``V`` (as ``Linear``'s sizes: needed when it is
            not a ``Literal`` type argument).
        embedding_dim: the size ``D`` of each row.
        padding_idx: a row that stays fixed, as PyTorch's ``padding_idx``: initialised to
            zeros, and its gradient is always zero (ids equal to it still look it up), so
            an optimizer without weight decay never moves it. Negative values count from
            the end (``-1`` is the last row) and are stored as the non-negative index; one
            outside ``[-V, V)`` raises ``HyperparameterError``.
        generator: the source of the initial values.
        dtype: the parameters' dtype.

    Examples:
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> emb = sg.nn.Embedding[L[10], L[4]]()
        >>> emb(sg.tensor([[1, 2, 3]])).shape
        (1, 3, 4)
        >>> sg.nn.Embedding(10, 4, padding_idx=-1).padding_idx
        9
    """

    def __init__(
        self,
        num_embeddings: V | int | None = None,
        embedding_dim: D | int | None = None,
        *,
        padding_idx: int | None = None,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None:
        self.num_embeddings = self._size_arg(0, num_embeddings, "num_embeddings")
        self.embedding_dim = self._size_arg(1, embedding_dim, "embedding_dim")
        self.padding_idx = self._padding_arg(padding_idx)
        gen = generator or default_generator()
        data = gen.normal((self.num_embeddings, self.embedding_dim), dtype)
        if self.padding_idx is not None:
            data[self.padding_idx, ...] = 0  # drawn with the others, then zeroed, as PyTorch
        # (V, D) is PyTorch's layout too: kaiming_* reads fan_in = D, as PyTorch's.
        self.weight: Tensor[NoTape, V, D] = out_in(parameter(wrap(data, gen.backend)))

    def _padding_arg(self, padding_idx: Any) -> int | None:
        if padding_idx is None:
            return None
        index = integer(type(self).__name__, "padding_idx", padding_idx)
        n = self.num_embeddings
        if not -n <= index < n:
            raise HyperparameterError(
                f"{type(self).__name__}: padding_idx must lie in [-{n}, {n}) for num_embeddings={n}, found {index}"
            )
        return index + n if index < 0 else index

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch ``nn.Embedding`` whose lookups or gradients would differ: another
        ``padding_idx`` (its row's gradient is zero), or ``max_norm``/``scale_grad_by_freq``,
        which shapegrad's has not. ``sparse=True`` is taken: the same gradient, stored densely."""
        expect_kind(torch_module, path, self, "Embedding")
        same(torch_module, path, "padding_idx", self.padding_idx)
        supported(
            torch_module,
            path,
            "max_norm",
            None,
            "PyTorch rescales each looked-up row to at most that norm, in place (build it with max_norm=None)",
        )
        supported(
            torch_module,
            path,
            "scale_grad_by_freq",
            False,
            "PyTorch divides each row's gradient by its count in the batch (build it with scale_grad_by_freq=False)",
        )

    def __call__(self, ids: Tensor[T, *S]) -> Tensor[T, *S, D]:
        from ..ops.indexing import embedding_lookup, gather

        if self.padding_idx is None:
            return gather(self.weight, ids)
        out: Tensor[T, *S, D] = embedding_lookup(self.weight, ids, self.padding_idx)
        return out
