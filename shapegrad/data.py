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
from ._errors import ShapeError, ShapegradError
from ._tensor import AnyTensor, Tensor
from .ops.creation import Generator, default_generator, tensor

__all__ = ["Batches", "batches"]


class Shard(Protocol):
    """What sharding needs of a communicator (``shapegrad.distributed.Comm``)."""

    rank: int
    size: int

    @property
    def samples(self) -> int | None:
        """Set to each batch's size on this rank: allreduce_mean weighs by it."""
        ...

    @samples.setter
    def samples(self, count: int | None) -> None: ...

    def broadcast_object(self, value: Any, *, root: int = 0) -> Any:
        """Rank ``root``'s ``value`` on every rank."""
        ...


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
            reproducibility). When sharded, every rank uses rank 0's order (each rank draws
            from its own generator, so generators seeded alike stay alike, and rank 0's
            draw is sent to the others): the shards are disjoint whatever the seeds.
        drop_last: leave out a last, smaller batch.
        shard: a communicator (``shapegrad.distributed.init()``): every rank gets disjoint
            samples of one permutation per epoch; rank ``r`` gets the ``r``-th part of each
            global batch of ``batch_size · size`` samples. With ``drop_last`` every rank gets
            the same number of full batches; without it, the last global batch is split as
            evenly as it goes (sizes differing by one; ``allreduce_mean`` weights each
            rank's gradient by its sample count, which the loader leaves in
            ``shard.samples``), and a last global batch with fewer samples than ranks is
            left out, so that no rank is ever handed an empty batch. Every rank gets the
            same number of batches.
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
        self.shard = shard
        self.rank, self.size = (0, 1) if shard is None else (shard.rank, shard.size)

    def __len__(self) -> int:
        step = self.batch_size * self.size  # one global batch: every rank's batch together
        full, rest = divmod(len(self.x), step)
        # A rest smaller than the rank count would leave some rank an empty batch: left out.
        return full if self.drop_last or rest < self.size else full + 1

    def _order(self) -> np.ndarray[Any, Any]:
        n = len(self.x)
        if not self.shuffle:
            return np.arange(n)
        order = (self.generator or default_generator()).permutation(n)
        if self.shard is None:
            return order
        # Generators seeded differently (or not at all) would give the ranks overlapping
        # shards: rank 0's order is everyone's.
        agreed = np.asarray(self.shard.broadcast_object(order, root=0))
        if len(agreed) != n:
            raise ShapeError(
                f"batches: rank 0 shuffles {len(agreed)} samples but rank {self.rank} has {n}; "
                "expected the same data on every rank"
            )
        return agreed

    # Spelt out rather than aliased: pyright's messages print an alias's name, and "Batch"
    # is what users call their batch dim.
    def __iter__(self) -> Iterator[tuple[Tensor[NoTape, *tuple[Any, ...]], Tensor[NoTape, *tuple[Any, ...]]]]:
        order = self._order()
        step = self.batch_size * self.size
        for k in range(len(self)):
            global_batch = order[k * step : (k + 1) * step]
            # Rank r takes the r-th part of each global batch, so that N ranks with batch b
            # see exactly what one process with batch N·b sees.
            mine = np.array_split(global_batch, self.size)[self.rank]
            if self.shard is not None:
                self.shard.samples = len(mine)
            yield tensor(self.x[mine]), tensor(self.y[mine])


batches = Batches
"""``sg.data.batches(x, y, batch_size=..., ...)``: the :class:`Batches` of ``x`` and ``y``."""
