"""Batching arrays already in memory: ``sg.data.batches``. Not a dataset framework.

Examples:
    >>> import numpy as np
    >>> import shapegrad as sg
    >>> x, y = np.zeros((10, 3), dtype=np.float32), np.arange(10)
    >>> loader = sg.data.batches(x, y, batch_size=4, shuffle=True, generator=sg.Generator(0))
    >>> len(loader), [tuple(xb.shape) for xb, _ in loader]
    (3, [(4, 3), (4, 3), (2, 3)])
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, cast

import numpy as np

from ._autodiff import NoTape
from ._creation import Generator, default_generator, tensor
from ._errors import ShapeError, ShapegradError
from ._tensor import AnyTensor, Tensor

__all__ = ["Batches", "batches"]

Batch = tuple[Tensor[NoTape, *tuple[Any, ...]], Tensor[NoTape, *tuple[Any, ...]]]


class Shard(Protocol):
    """What sharding needs of a communicator (``shapegrad.distributed.Comm``)."""

    rank: int
    size: int


def _host(data: Any, name: str) -> np.ndarray[Any, Any]:
    if isinstance(data, Tensor):
        source = cast(AnyTensor, data)
        return np.asarray(source.detach().numpy())
    array = np.asarray(data)
    if array.ndim == 0:
        raise ShapeError(f"batches: {name} must have a first (sample) axis, found a scalar")
    return array


class Batches:
    """Mini-batches of arrays (NumPy arrays or tensors) already in memory: pairs
    ``(x_batch, y_batch)`` of tensors on the active backend; iterate once per epoch.
    ``len()`` is the number of batches (so ``tqdm`` shows a bar). ``sg.data.batches`` is
    this class.

    Args:
        x: the inputs, samples along the first axis.
        y: the targets, samples along the first axis (as many as ``x``).
        batch_size: samples per batch (per rank when sharded).
        shuffle: a new order each epoch, drawn from ``generator`` (seed it for
            reproducibility; when sharded, seed it identically on every rank).
        drop_last: leave out a last, smaller batch.
        shard: a communicator (``shapegrad.distributed.init()``): every rank gets disjoint
            samples of one permutation per epoch; rank ``r`` gets the ``r``-th part of each
            global batch of ``batch_size · size`` samples. With ``drop_last`` every rank gets
            the same number of full batches; without it, the last global batch is split as
            evenly as it goes (and every rank still gets the same number of batches).
    """

    def __init__(
        self,
        x: Any,
        y: Any,
        *,
        batch_size: int,
        shuffle: bool = False,
        generator: Generator | None = None,
        drop_last: bool = False,
        shard: Shard | None = None,
    ) -> None:
        self.x, self.y = _host(x, "x"), _host(y, "y")
        if len(self.x) != len(self.y):
            raise ShapeError(f"batches: x has {len(self.x)} samples but y has {len(self.y)}; expected the same number")
        if batch_size < 1:
            raise ShapegradError(f"batches: batch_size must be at least 1, found {batch_size}")
        self.batch_size, self.shuffle, self.drop_last = batch_size, shuffle, drop_last
        self.generator = generator
        self.rank, self.size = (0, 1) if shard is None else (shard.rank, shard.size)

    def __len__(self) -> int:
        step = self.batch_size * self.size  # one global batch: every rank's batch together
        n = len(self.x)
        return n // step if self.drop_last else -(-n // step)

    def _order(self) -> np.ndarray[Any, Any]:
        n = len(self.x)
        if not self.shuffle:
            return np.arange(n)
        # Every rank draws the same permutation from its own identically seeded generator.
        return (self.generator or default_generator()).permutation(n)

    def __iter__(self) -> Iterator[Batch]:
        order = self._order()
        step = self.batch_size * self.size
        for k in range(len(self)):
            global_batch = order[k * step : (k + 1) * step]
            # Rank r takes the r-th part of each global batch, so that N ranks with batch b
            # see exactly what one process with batch N·b sees.
            mine = np.array_split(global_batch, self.size)[self.rank]
            yield tensor(self.x[mine]), tensor(self.y[mine])


batches = Batches
"""``sg.data.batches(x, y, batch_size=..., ...)``: the :class:`Batches` of ``x`` and ``y``."""
