# pyright: reportPrivateUsage=true
"""Data-parallel training over MPI (mpi4py), one process per CPU socket, node or GPU.

Every rank runs the same program on its shard of each batch; after ``backward`` the
gradients are averaged over the ranks (``comm.allreduce_mean(grads)``), so every rank
applies the same update and the weights stay identical, as in one process whose batch is
all the ranks' batches together. Launch with ``mpiexec -n 4 python train.py`` (or SLURM's
``srun``)::

    import shapegrad.distributed as dist

    comm = dist.init()                      # MPI world
    comm.broadcast_parameters(model)        # rank 0's weights everywhere
    for x, y in sg.data.batches(X, Y, batch_size=32, shuffle=True, generator=g, shard=comm):
        grads.zero()
        loss = sg.losses.cross_entropy(model(x.trace(grads)), y)
        loss.backward()
        comm.allreduce_mean(grads)          # the same Gradients[M], averaged over ranks
        opt.update(model, grads)
    dist.save(model, path, comm, optimizer=opt)

Gradients travel as one flat buffer per dtype (in buckets of ``bucket_bytes``). Arrays on
a device are staged through host memory for MPI; with ``init(backend="nccl")`` CuPy
arrays go over NCCL instead (one process per GPU, NCCL's id shared over MPI).
"""

from __future__ import annotations

import collections
import hashlib
import importlib
import json
import os
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from . import _hooks
from ._autodiff import new_leaf_key, note_written
from ._backend import Backend
from ._dims import Open
from ._distributed_exit import abort_on_early_exit, abort_on_uncaught_exception
from ._errors import BackendError, CheckpointError, CompileError, ShapegradError
from ._gradients import (
    Gradients,
    backward_passes,
    bookkeeping,
    buffer_backend,
    buffers,
    forget_passes,
    layout,
    mark_received,
    on_ready,
    received_keys,
    set_bookkeeping,
)
from ._serialize import load as _load, save as _save
from ._tensor import AnyTensor, Tensor, array_of, backend_of, parameter_info, record

__all__ = ["Comm", "all_sum", "init", "load", "save"]

M = TypeVar("M")
DEFAULT_BUCKET_BYTES = 25 * 2**20  # as PyTorch DDP
DEFAULT_EXIT_TIMEOUT_S = 1800.0  # as PyTorch's default process-group timeout


def _mpi() -> Any:
    try:
        return importlib.import_module("mpi4py.MPI")
    except ImportError as exc:
        raise BackendError(
            f"shapegrad.distributed needs mpi4py and an MPI library ({exc}); pip install 'shapegrad[mpi]' "
            "(mpi4py and PyPI's mpich), or mpi4py built against the cluster's MPI"
        ) from None


def init(
    backend: str = "mpi",
    *,
    comm: Any = None,
    abort_on_exception: bool = True,
    exit_timeout: float | None = DEFAULT_EXIT_TIMEOUT_S,
    cuda_aware: bool = False,
) -> Comm:
    """The communicator of this process's MPI job (``MPI.COMM_WORLD`` unless ``comm``).

    Args:
        backend: ``"mpi"`` (every array over MPI, device arrays staged through the host) or
            ``"nccl"`` (CuPy arrays over NCCL, one process per GPU: rank ``r`` uses device
            ``r % device count``).
        abort_on_exception: a rank that stops while the others go on ends the whole job
            instead of leaving them waiting in a collective forever: an uncaught exception
            aborts it with the exception's message and rank; ``sys.exit`` with a non-zero
            status (argparse, a failed check) aborts it unless every rank exits within a
            second; a rank ending with status 0 waits for every rank to end and aborts the
            job after ``exit_timeout``.
        exit_timeout: seconds a rank that has ended (status 0) waits for the other ranks to
            end before it aborts the job (``None``: for ever); 30 minutes by default, as
            PyTorch's process-group timeout.
        cuda_aware: the site's MPI reads GPU memory (a CUDA-aware Open MPI or MVAPICH):
            CuPy arrays are handed to MPI as they are instead of staged through the host.
            MPI cannot say so through mpi4py portably, so it is the caller's statement.

    Raises:
        BackendError: mpi4py is not installed, or NCCL was asked for without CuPy.
    """
    mpi = _mpi()
    world = mpi.COMM_WORLD if comm is None else comm
    if abort_on_exception:
        abort_on_uncaught_exception(world)
        abort_on_early_exit(mpi, world, exit_timeout)
    if backend == "mpi":
        return Comm(world, cuda_aware=cuda_aware)
    if backend == "nccl":
        return Comm(world, nccl=_NcclChannel(world))
    raise BackendError(f"unknown distributed backend {backend!r}; expected 'mpi' or 'nccl'")


def _structure(model: Any) -> list[tuple[str, tuple[int, ...], str, bool]]:
    """(path, shape, dtype, trainable) of every parameter and buffer, in order."""
    rows: list[tuple[str, tuple[int, ...], str, bool]] = []
    for path, tensor in model.named_tensors():
        info = parameter_info(tensor)
        rows.append((path, tuple(tensor.shape), tensor.backend_dtype_name(), bool(info and info.trainable)))
    return rows


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()


def _refuse_in_compile(what: str) -> None:
    """sg.compile records ``allreduce_mean`` only (as a host call); a replay would skip any
    other collective, leaving the other ranks waiting in theirs."""
    if _hooks.recorder is not None:
        raise CompileError(
            f"{what} inside a compiled step: of sg.distributed's collectives sg.compile records "
            "Comm.allreduce_mean only (without Comm.overlap); expected the step to call it outside "
            "the compiled step, or no sg.compile"
        )


# How many stated sample counts a Comm keeps (see Comm._stated).
_STATED_KEPT = 4096


class Comm:
    """One MPI job's communicator, as ``shapegrad`` uses it.

    ``rank`` and ``size`` are this process's place and the number of processes;
    ``backend`` says how gradients travel (``"mpi"`` through the host, ``"nccl"`` on GPUs).
    ``samples`` is this rank's sample count in the current step, which ``allreduce_mean``
    weights its gradient by: ``sg.data.batches(..., shard=comm)`` sets it at every batch it
    hands this rank; set it yourself for batches from elsewhere whose size differs between
    ranks (``None``, the start: every rank weighs the same).
    """

    def __init__(
        self,
        mpi_comm: Any,
        *,
        nccl: _NcclChannel | None = None,
        cuda_aware: bool = False,
        bucket_bytes: int = DEFAULT_BUCKET_BYTES,
    ):
        self.mpi = mpi_comm
        self._cuda_aware = cuda_aware
        self.rank: int = mpi_comm.Get_rank()
        self.size: int = mpi_comm.Get_size()
        self.bucket_bytes = bucket_bytes
        self._nccl = nccl
        self._checked_layouts: set[tuple[Any, ...]] = set()
        self._overlaps: dict[int, _Overlap] = {}
        self._samples: int | None = None
        # Each count stated, with when (the engine's counter): a backward pass weighs by the
        # count stated last before it. Bounded: an evaluation loop over sharded batches
        # states one per batch and reduces nothing.
        self._stated: collections.deque[tuple[int, int | None]] = collections.deque(maxlen=_STATED_KEPT)

    @property
    def samples(self) -> int | None:
        """This rank's sample count in the current batch, which ``allreduce_mean`` weighs
        its gradient by (``None``: every rank weighs the same). ``sg.data.batches(...,
        shard=comm)`` sets it at every batch; set it before the backward pass."""
        return self._samples

    @samples.setter
    def samples(self, count: int | None) -> None:
        self._samples = count
        self._stated.append((new_leaf_key(), count))

    def _counts_of_passes(self, grads: Gradients[Any]) -> tuple[int, ...] | None:
        """The count stated before each backward pass ``grads`` adds up (-1: none), where it
        adds up several with different counts; None where it holds one or none, where every
        pass had the same count, or where a pass is older than the counts kept."""
        passes = sorted(backward_passes(grads))
        if len(passes) < 2:
            return None
        stated = list(self._stated)
        if len(stated) == _STATED_KEPT and stated[0][0] > passes[0]:
            return None
        counts: list[int] = []
        for stamp in passes:
            before = [count for when, count in stated if when < stamp]
            count = before[-1] if before else None
            counts.append(-1 if count is None else count)
        # One count for every pass (two losses of one batch, or batches of one size): one
        # weight per rank is exact, whatever the other ranks' counts are.
        return None if len(set(counts)) == 1 else tuple(counts)

    @property
    def backend(self) -> str:
        """How device arrays travel: ``"nccl"``, ``"mpi-cuda-aware"`` (MPI reads GPU memory),
        or ``"mpi"`` (staged through host memory; NumPy arrays always go this way)."""
        if self._nccl is not None:
            return "nccl"
        return "mpi-cuda-aware" if self._cuda_aware else "mpi"

    def barrier(self) -> None:
        """Wait until every rank gets here."""
        _refuse_in_compile("Comm.barrier")
        self.mpi.Barrier()

    def broadcast_object(self, value: Any, *, root: int = 0) -> Any:
        """Rank ``root``'s ``value`` (any picklable object) on every rank; every rank calls it."""
        _refuse_in_compile("Comm.broadcast_object")
        return self.mpi.bcast(value, root=root)

    # -- agreement ---------------------------------------------------------------------
    def _agree(self, rows: list[Any], what: str) -> None:
        """Raise on every rank (the same message) unless every rank has the same ``rows``."""
        digests: list[str] = self.mpi.allgather(_digest(rows))
        if len(set(digests)) == 1:
            return
        everyone: list[list[Any]] = self.mpi.allgather(rows)
        reference = everyone[0]
        for rank, theirs in enumerate(everyone):
            if theirs == reference:
                continue
            for index in range(max(len(reference), len(theirs))):
                mine = reference[index] if index < len(reference) else None
                other = theirs[index] if index < len(theirs) else None
                if mine != other:
                    raise ShapegradError(
                        f"{what} differs between ranks: rank {rank} has {other!r} where rank 0 has {mine!r} "
                        f"(entry {index}); expected the same model on every rank. Nothing was changed."
                    )

    # -- parameters --------------------------------------------------------------------
    def broadcast_parameters(self, model: Any, *, root: int = 0) -> None:
        """Copy rank ``root``'s parameters and buffers to every rank, in place.

        The model's structure (dotted paths, shapes, dtypes) is compared first; a rank whose
        model differs makes every rank raise ``ShapegradError`` naming that rank and the first
        differing path, before any weight is changed (no rank is left waiting).
        """
        _refuse_in_compile("Comm.broadcast_parameters")
        self._agree([list(row[:3]) + [row[3]] for row in _structure(model)], "the model's structure")
        tensors = [tensor for _, tensor in model.named_tensors()]
        for group in _by_dtype(tensors):
            flat = _pack([array_of(t) for t in group], backend_of(group[0]))
            self.mpi.Bcast(flat, root=root)
            if self.rank != root:
                _unpack(flat, [array_of(t) for t in group], backend_of(group[0]))
                for tensor in group:
                    note_written(tensor)

    # -- gradients ---------------------------------------------------------------------
    def overlap(self, grads: Gradients[M]) -> Gradients[M]:
        """Reduce ``grads`` during the backward pass from now on, as PyTorch DDP does.

        Gradients are grouped into buckets (in the order a backward pass finishes them, the
        last layers first); a bucket's non-blocking ``Iallreduce`` starts as soon as each of
        its gradients is final, while the backward pass goes on with earlier layers.
        ``allreduce_mean(grads)`` then starts what is left and waits. Buckets start in the
        same order on every rank, so collectives always match. It assumes one backward pass
        per ``allreduce_mean``: a gradient that arrives again after its bucket started (two
        backward passes accumulating) raises ``ShapegradError`` rather than reduce half.
        Returns ``grads``.
        """
        _refuse_in_compile("Comm.overlap")
        self._overlaps[id(grads)] = _Overlap(self, grads)
        return grads

    def allreduce_mean(self, grads: Gradients[M]) -> Gradients[M]:
        """Average every parameter gradient in ``grads`` over the ranks, in place, each rank's
        weighted by its sample count: the result is the gradient one process gets from the
        mean loss over every rank's samples, also where the ranks' batches differ in size
        (the last batch of an epoch). Returns the same ``Gradients[M]`` (so
        ``opt.update(model, grads)`` keeps its checks).

        The count is ``comm.samples``, which ``sg.data.batches(..., shard=comm)`` sets at
        each batch it hands out; for batches from elsewhere set it before the backward pass
        (``Comm.overlap`` and ``all_sum``, hence ``SyncBatchNorm``, use it there). Where no
        rank states one (``None``), every rank weighs the same. A rank with 0 samples
        contributes zeros (not the NaN of an empty batch's mean). Gradients adding up several
        backward passes (accumulated batches) are each weighed by the count stated before
        their pass; where the ranks' counts differ in one of them, no one weight per rank is
        right, and the call is refused (call it after each backward pass instead).

        A parameter that received no gradient on a rank contributes zeros there. Whether a
        parameter was used is agreed across ranks: used on any rank counts as used on all,
        so ``UnusedParameterError`` is raised on every rank or on none.

        Inside ``sg.compile`` (without ``Comm.overlap``) it is recorded as one host call,
        run again at its place in every replay: ``comm.samples`` is read there at every
        step, and every rank runs the same collectives whether it replays, records or runs
        eagerly. Where a replay finds the ranks' used parameters differ from those its
        recording found (a parameter used on some rank only under some signatures), the
        update it recorded would be another: ``CompileError`` on every rank, nothing
        changed.

        Raises:
            ShapegradError: on every rank, before any gradient is changed, where the ranks'
                gradients differ in parameters, shapes or dtypes, where some ranks state a
                sample count and others do not, where no rank has a sample, or where the
                gradients add up backward passes whose counts differ between ranks.
            CompileError: inside a compiled step with ``Comm.overlap`` on ``grads``, or (on
                every rank) where a replay's used parameters differ from its recording's.
        """
        if _hooks.recorder is not None:
            # A step that did not zero grads depends on the bookkeeping it came in with.
            _hooks.recorder.touch(grads)
            overlap = self._overlaps.get(id(grads))
            if overlap is not None and overlap.grads is grads:
                _refuse_overlap()
            # What the eager run finds now, the replays find at this place too: a replay
            # restores the gradients' bookkeeping only at its end, so mid-replay it is the
            # previous call's (which buffers hold this step's gradient decides which are
            # zeroed here; grads.zero() forgets the buffers, it does not zero them).
            _hooks.recorder.host_call(
                _RecordedAllreduce(self._allreduce_mean, grads, bookkeeping(grads)),
                lambda: list(buffers(grads).values()),  # it writes the gradient buffers alone
            )
            return grads
        self._allreduce_mean(grads, None)
        return grads

    def _allreduce_mean(self, grads: Gradients[M], expected: frozenset[int] | None) -> frozenset[int]:
        """``allreduce_mean``'s work; returns the keys used on some rank. ``expected``: those
        this rank's replay was recorded with (None outside a replay)."""
        rows_of, slots = layout(grads), buffers(grads)
        key = (rows_of, tuple(slots[slot].dtype for _, slot, _ in rows_of))
        if key not in self._checked_layouts:
            # The dtype is part of the layout: buffers of different dtypes would not even
            # have the same byte count in MPI ("Message truncated").
            rows = [
                [path, list(shape), buffer_backend(grads, slot).dtype_name(slots[slot].dtype)]
                for path, slot, shape in rows_of
            ]
            self._agree(rows, "the gradients' parameters (path, shape, dtype)")
            self._checked_layouts.add(key)
        count = self.samples
        if count is not None and count < 0:
            raise ShapegradError(f"allreduce_mean: comm.samples must be a count of at least 0, found {count}")
        touched = received_keys(grads)
        overlap = self._overlaps.get(id(grads))
        if overlap is not None and overlap.grads is not grads:
            overlap = None
        if overlap is not None:
            overlap.fix_weight(count)
            overlap.launch_rest()
        # One collective agrees which parameters were used, every rank's count and, for the
        # ranks replaying a compiled step, whether they were recorded with the same used ones
        # (eager, recording and replaying ranks all send this one vector: the same collectives).
        # And, where the gradients add up several backward passes (eager only: a replay runs
        # no backward pass of Python), a fingerprint of each pass's count, which must agree
        n = len(rows_of)
        size = self.size
        passes = self._counts_of_passes(grads) if expected is None and _hooks.recorder is None else None
        shared = np.zeros(2 * n + 2 * size + 1, dtype=np.int64)
        shared[:n] = [slot in touched for _, slot, _ in rows_of]
        shared[n + self.rank] = -1 if count is None else count
        if expected is not None:
            shared[n + size : 2 * n + size] = [slot in expected for _, slot, _ in rows_of]
            shared[2 * n + 2 * size] = 1
        if passes is not None:
            shared[2 * n + size + self.rank] = (hash(passes) & 0x3FFF_FFFF_FFFF_FFFF) | 1  # never 0, "one pass"
        if size > 1:
            self.mpi.Allreduce(self._mpi_in_place(), shared, op=_mpi().SUM)
        used_flags = shared[:n].tolist()
        counts = shared[n : n + size].tolist()
        replaying = int(shared[2 * n + 2 * size])
        recorded = shared[n + size : 2 * n + size].tolist()
        fingerprints = shared[2 * n + size : 2 * n + 2 * size].tolist()
        if any(fingerprints) and len(set(fingerprints)) > 1:
            if overlap is not None:
                overlap.discard()
            mine = "one" if passes is None else f"{len(passes)}, with sample counts {list(passes)}"
            raise ShapegradError(
                f"allreduce_mean: the gradients add up several backward passes (this rank's: {mine}) and "
                "the ranks' sample counts differ in some pass, so no one weight per rank gives each pass "
                "its own: the average would not be one process's gradient over the same batches. Expected "
                "comm.allreduce_mean(grads) after each backward pass (the averaged gradients then keep "
                "adding up exactly), or batches of one size on every rank "
                "(sg.data.batches(..., drop_last=True)). No gradient was changed."
            )
        differ = [
            path
            for (path, _, _), used, seen in zip(rows_of, used_flags, recorded, strict=True)
            if seen != (replaying if used else 0)
        ]
        if differ:
            if overlap is not None:
                overlap.discard()
            raise CompileError(
                f"allreduce_mean in a compiled step: the parameters used on some rank ({', '.join(differ)} "
                "differing) are not those a replaying rank's recording was made with, so the update it "
                "recorded would be another; expected the same parameters used at every step with a given "
                "signature on every rank, or no sg.compile. No gradient was changed."
            )
        try:
            total = _total_samples(counts)
        except ShapegradError:
            if overlap is not None:
                overlap.discard()
            raise
        if overlap is not None:
            # Its buckets were weighted by this rank's count as they started.
            overlap.finish(1.0 / (self.size if total is None else total))
        else:
            # Equal counts weigh equally: the plain mean, as before counts were known.
            even = total is None or len(set(counts)) == 1
            weight, scale = (1.0, 1.0 / self.size) if even else (counts[self.rank] / total, 1.0)
            entries = [(slot, slots[slot], buffer_backend(grads, slot)) for _, slot, _ in rows_of]
            for slot, buffer, backend in entries:
                if slot not in touched:
                    backend.copy_into(buffer, backend.xp.zeros_like(buffer))
            for bucket in _buckets(entries, self.bucket_bytes):
                self._allreduce_sum([buffer for _, buffer, _ in bucket], bucket[0][2], scale, weight)
        for (_, slot, _), used in zip(rows_of, used_flags, strict=True):
            if used:
                mark_received(grads, slot)
        forget_passes(grads)  # averaged: passes added after this are weighed by their own counts
        last = self._stated[-1] if self._stated else None
        self._stated.clear()
        if last is not None:
            self._stated.append(last)
        return frozenset(slot for (_, slot, _), used in zip(rows_of, used_flags, strict=True) if used)

    def _mpi_in_place(self) -> Any:
        return _mpi().IN_PLACE

    def _allreduce_sum(self, arrays: list[Any], backend: Backend, scale: float = 1.0, weight: float = 1.0) -> None:
        """In place: each array times ``weight`` (this rank's), summed over the ranks, times
        ``scale`` (one flat buffer, weighted and scaled there: no extra pass over the arrays)."""
        if self.size == 1:
            return
        if self._nccl is not None and backend.name == "cupy":
            self._nccl.allreduce_sum(arrays, backend, scale, weight)
            return
        if self._cuda_aware and backend.name == "cupy":
            flat_device = backend.xp.concat([backend.xp.reshape(a, (-1,)) for a in arrays])
            _weigh(flat_device, weight)
            self.mpi.Allreduce(self._mpi_in_place(), flat_device, op=_mpi().SUM)
            if scale != 1.0:
                flat_device *= scale
            _unpack(flat_device, arrays, backend)
            return
        flat = _pack(arrays, backend)
        _weigh(flat, weight)
        self.mpi.Allreduce(self._mpi_in_place(), flat, op=_mpi().SUM)
        if scale != 1.0:
            flat *= scale
        _unpack(flat, arrays, backend)

    def sum_array(self, array: Any, backend: Backend, *, weight: float = 1.0, scale: float = 1.0) -> Any:
        """A new array: ``array`` times ``weight`` (this rank's), summed over the ranks, times
        ``scale`` (host-staged on a device)."""
        _refuse_in_compile("Comm.sum_array")
        out = backend.xp.asarray(array, copy=True)
        self._allreduce_sum([out], backend, scale, weight)
        return out

    def sum_int(self, value: int) -> int:
        """An integer summed over the ranks."""
        _refuse_in_compile("Comm.sum_int")
        return int(self.mpi.allreduce(int(value)))


def _refuse_overlap() -> None:
    raise CompileError(
        "Comm.overlap's gradients reduced inside a compiled step: sg.compile records allreduce_mean only "
        "without overlap (buckets started during a recorded backward pass would not start in a replay); "
        "expected no comm.overlap(grads) on gradients a compiled step reduces, or no sg.compile"
    )


class _RecordedAllreduce:
    """``allreduce_mean`` as ``sg.compile`` records it: one host call, run in the recording
    run and again at its place in every replay, on the bookkeeping the recording run found
    there (``state``: which buffers hold this step's gradient; a replay's backward pass
    writes the same ones), set before it runs so that it zeroes, reduces and marks exactly
    as eager does. ``used`` holds the keys the ranks used when recorded: a replay whose
    ranks use others is refused on every rank (the recorded update would be another)."""

    def __init__(
        self,
        reduce: Callable[[Gradients[Any], frozenset[int] | None], frozenset[int]],
        grads: Gradients[Any],
        state: tuple[frozenset[int], str | None],
    ) -> None:
        self.reduce, self.grads, self.state = reduce, grads, state
        self.used: frozenset[int] | None = None

    def __call__(self) -> None:
        if self.used is None:  # the recording run: the bookkeeping is this step's
            self.used = self.reduce(self.grads, None)
            return
        set_bookkeeping(self.grads, self.state)
        self.reduce(self.grads, self.used)


class _Overlap:
    """The buckets of one ``Gradients`` reduced while its backward pass runs (``Comm.overlap``)."""

    def __init__(self, comm: Comm, grads: Gradients[Any]) -> None:
        self.comm, self.grads = comm, grads
        # Backward passes finish the last parameters first: buckets run over the reversed layout.
        slots = buffers(grads)
        entries = [(slot, slots[slot], buffer_backend(grads, slot)) for _, slot, _ in reversed(layout(grads))]
        self.buckets = _buckets(entries, comm.bucket_bytes)
        self.bucket_of = {slot: i for i, bucket in enumerate(self.buckets) for slot, _, _ in bucket}
        self._reset()
        on_ready(grads, self.ready)

    def _reset(self) -> None:
        self.waiting = [len(bucket) for bucket in self.buckets]
        self.arrived: set[int] = set()
        self.launched = 0
        self.requests: list[tuple[int, np.ndarray[Any, Any], Any]] = []
        # This rank's sample count, fixed when the step's first bucket starts.
        self.weight_fixed, self.weight = False, None

    def fix_weight(self, count: int | None) -> None:
        """``count`` weights this step's buckets; refused where buckets already started with another."""
        if not self.weight_fixed:
            self.weight_fixed, self.weight = True, count
        elif count != self.weight:
            raise ShapegradError(
                f"allreduce_mean: comm.samples is {count}, but Comm.overlap started this step's buckets weighted "
                f"by {self.weight} samples; expected comm.samples set before the backward pass, not after"
            )

    def ready(self, slot: int) -> None:
        if _hooks.recorder is not None:
            _refuse_overlap()  # before any bucket starts: no rank is left in a collective
        index = self.bucket_of.get(slot)
        if index is None:
            return
        if slot in self.arrived:
            if index < self.launched:
                raise ShapegradError(
                    "a gradient arrived again after its bucket's reduction started: Comm.overlap expects one "
                    "backward pass per allreduce_mean (accumulate over several passes without overlap)"
                )
            return
        self.arrived.add(slot)
        self.waiting[index] -= 1
        while self.launched < len(self.buckets) and self.waiting[self.launched] == 0:
            self._launch(self.launched)

    def _launch(self, index: int) -> None:
        bucket = self.buckets[index]
        backend = bucket[0][2]
        touched = received_keys(self.grads)
        flat = _pack(
            [buffer if slot in touched else backend.xp.zeros_like(buffer) for slot, buffer, _ in bucket], backend
        )
        if not self.weight_fixed:
            self.fix_weight(self.comm.samples)
        _weigh(flat, 1 if self.weight is None else self.weight)
        request = None
        if self.comm.size > 1:
            request = self.comm.mpi.Iallreduce(_mpi().IN_PLACE, flat, op=_mpi().SUM)
        self.requests.append((index, flat, request))
        self.launched = index + 1

    def launch_rest(self) -> None:
        while self.launched < len(self.buckets):
            self._launch(self.launched)

    def finish(self, scale: float) -> None:
        for index, flat, request in self.requests:
            if request is not None:
                request.Wait()
            bucket = self.buckets[index]
            flat *= scale
            _unpack(flat, [buffer for _, buffer, _ in bucket], bucket[0][2])
        self._reset()

    def discard(self) -> None:
        """Wait for the started reductions and drop them: the gradients stay as they were."""
        for _, _, request in self.requests:
            if request is not None:
                request.Wait()
        self._reset()


def _total_samples(counts: list[int]) -> int | None:
    """The ranks' sample count (``None`` where no rank states one; -1 is a rank's "none")."""
    if all(count == -1 for count in counts):
        return None
    if -1 in counts:
        silent, stating = counts.index(-1), next(r for r, c in enumerate(counts) if c != -1)
        raise ShapegradError(
            f"allreduce_mean: rank {stating} has comm.samples = {counts[stating]} but rank {silent} has None; "
            "expected a sample count on every rank or on none"
        )
    total = sum(counts)
    if total == 0:
        raise ShapegradError("allreduce_mean: no rank has a sample in this step (every rank's count is 0)")
    return total


def _weigh(flat: Any, weight: float) -> None:
    """``flat`` times ``weight``, in place; weight 0 gives zeros, also where ``flat`` holds the
    NaN of an empty batch's mean."""
    if weight == 0:
        flat[...] = 0
    elif weight != 1:
        flat *= weight


def _buckets(buffers: Sequence[tuple[int, Any, Backend]], bucket_bytes: int) -> list[list[tuple[int, Any, Backend]]]:
    """Consecutive buffers of one dtype and backend, up to ``bucket_bytes`` each."""
    buckets: list[list[tuple[int, Any, Backend]]] = []
    size = 0
    for entry in buffers:
        _, buffer, backend = entry
        last = buckets[-1] if buckets else None
        nbytes = int(buffer.size) * int(buffer.dtype.itemsize)
        if (
            last is None
            or size + nbytes > bucket_bytes
            or last[0][1].dtype != buffer.dtype
            or last[0][2] is not backend
        ):
            buckets.append([entry])
            size = nbytes
        else:
            last.append(entry)
            size += nbytes
    return buckets


def _by_dtype(tensors: Sequence[AnyTensor]) -> list[list[AnyTensor]]:
    groups: dict[tuple[int, str], list[AnyTensor]] = {}
    for tensor in tensors:
        groups.setdefault((id(backend_of(tensor)), tensor.backend_dtype_name()), []).append(tensor)
    return list(groups.values())


def _pack(arrays: Sequence[Any], backend: Backend) -> np.ndarray[Any, Any]:
    """One contiguous host array holding every array, in order (one copy on NumPy)."""
    if not arrays:
        return np.zeros(0)
    return np.concatenate([np.reshape(backend.to_numpy(a), -1) for a in arrays])


def _unpack(flat: Any, arrays: Sequence[Any], backend: Backend) -> None:
    """Each array's values back from ``flat`` (a host buffer, or a device one on the NCCL and
    CUDA-aware paths, which ``asarray`` then takes as it is)."""
    offset = 0
    for array in arrays:
        n = int(array.size)
        backend.copy_into(array, backend.asarray(flat[offset : offset + n].reshape(tuple(array.shape)), None))
        offset += n


class _NcclChannel:
    """CuPy arrays summed over NCCL; the NCCL id is made on rank 0 and shared over MPI.

    Written against ``cupy.cuda.nccl``; it has not run here (no GPU in this project's CI):
    ``benchmarks/gpu_check.sh`` is where a lent GPU machine would exercise it.
    """

    def __init__(self, world: Any) -> None:
        try:
            cupy: Any = importlib.import_module("cupy")
            nccl: Any = importlib.import_module("cupy.cuda.nccl")
        except ImportError as exc:
            raise BackendError(f"init(backend='nccl') needs CuPy with NCCL ({exc}); use backend='mpi'") from None
        rank, size = world.Get_rank(), world.Get_size()
        cupy.cuda.Device(rank % cupy.cuda.runtime.getDeviceCount()).use()
        uid = nccl.get_unique_id() if rank == 0 else None
        uid = world.bcast(uid, root=0)
        self._cupy, self._nccl = cupy, nccl
        self._comm = nccl.NcclCommunicator(size, uid, rank)

    def allreduce_sum(self, arrays: list[Any], backend: Backend, scale: float = 1.0, weight: float = 1.0) -> None:
        cp = self._cupy
        flat = cp.concatenate([a.reshape(-1) for a in arrays])
        _weigh(flat, weight)
        kinds = {"float16": self._nccl.NCCL_FLOAT16, "float32": self._nccl.NCCL_FLOAT32}
        kind = kinds.get(backend.dtype_name(flat.dtype), self._nccl.NCCL_FLOAT64)
        stream = cp.cuda.get_current_stream().ptr
        self._comm.allReduce(flat.data.ptr, flat.data.ptr, flat.size, kind, self._nccl.NCCL_SUM, stream)
        if scale != 1.0:
            flat *= scale
        _unpack(flat, arrays, backend)


# --------------------------------------------------------------------------- a differentiable sum
def all_sum_backward(xp: Any, g: Any, comm: Comm, backend: Backend) -> tuple[Any, ...]:
    # Every rank's output depends on every rank's input with slope 1: the gradient of this
    # rank's input is the sum of every rank's upstream gradient g_s (all ranks run backward).
    # With sample counts, g_s counts n_s / n_r (its rank's samples over this rank's):
    # allreduce_mean then weights this rank's gradient by n_r / N, making this path
    # Σ_s n_s g_s / N, as one process's over every rank's samples. Weighting the gradients
    # after the backward pass alone would weight the other ranks' g_s by this rank's count.
    n = comm.samples
    if n:
        return (comm.sum_array(g, backend, weight=float(n), scale=1.0 / n),)
    # No counts (equal weights), or no sample here (this rank's gradient is dropped anyway).
    return (comm.sum_array(g, backend, weight=1.0 if n is None else 0.0),)


def all_sum(x: Tensor[Any, *tuple[Any, ...]], comm: Comm) -> Tensor[Any, *tuple[Open, ...]]:
    """``x`` summed over the ranks, differentiably: every rank must call it (and run the
    backward pass) in the same order. ``SyncBatchNorm`` builds its global statistics on it.
    d/dx_r = Σ_s g_s, or Σ_s (n_s / n_r) g_s where ``comm.samples`` holds each rank's
    sample count n (what ``allreduce_mean``'s weighting by count needs to be exact)."""
    backend = backend_of(x)
    return record(comm.sum_array(array_of(x), backend), all_sum_backward, (x,), (comm, backend), backend)


# --------------------------------------------------------------------------- checkpoints
def save(model: Any, path: str | os.PathLike[str], comm: Comm, optimizer: Any = None) -> None:
    """Rank 0 writes the checkpoint (atomically, as :func:`shapegrad.save`); every rank
    waits until it is written, and every rank raises ``CheckpointError`` if it failed."""
    error = ""
    if comm.rank == 0:
        try:
            _save(model, path, optimizer=optimizer)
        except Exception as exc:  # every rank must hear of it, not only rank 0
            error = f"{type(exc).__name__}: {exc}"
    error = comm.mpi.bcast(error, root=0)
    if error:
        raise CheckpointError(f"rank 0 could not write the checkpoint {os.fspath(path)!r}: {error}")


def load(model: Any, path: str | os.PathLike[str], comm: Comm, optimizer: Any = None) -> None:
    """Every rank loads the checkpoint (a file system all ranks see), after every rank has
    reached this point (so that a checkpoint rank 0 is still writing is not read half)."""
    comm.barrier()
    _load(model, path, optimizer=optimizer)
