"""What each rank of the distributed tests runs: ``mpiexec -n N python mpi_worker.py SCENARIO``.

Rank 0 prints ``PASSED <scenario>`` when every check held; any failure is an uncaught
exception, which (through ``shapegrad.distributed``) aborts the whole job with its message.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

import shapegrad as sg
import shapegrad.distributed as dist
from shapegrad import nn


class Net(nn.Module, checked=False):
    """Linear → (batch norm) → tanh → Linear, in float64. ``norm``: none, ``"local"``
    (BatchNorm1d, this process's batch) or a communicator (SyncBatchNorm1d, every rank's)."""

    def __init__(self, hidden: int = 8, norm: Any = None) -> None:
        self.fc = nn.Linear(4, hidden, dtype="float64", generator=sg.Generator(1))
        self.norm: Any = None
        if norm == "local":
            self.norm = nn.BatchNorm1d(hidden, dtype="float64")
        elif norm is not None:
            self.norm = nn.SyncBatchNorm1d(hidden, comm=norm, dtype="float64")
        self.out = nn.Linear(hidden, 3, dtype="float64", generator=sg.Generator(2))

    def __call__(self, x: Any) -> Any:
        h = self.fc(x)
        return self.out((h if self.norm is None else self.norm(h)).tanh())


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return rng.standard_normal((96, 4)), rng.integers(0, 3, 96)


def _train(model: Net, loader: Any, steps: int, comm: dist.Comm | None, overlap: bool = False) -> sg.optim.Adam[Net]:
    opt = sg.optim.Adam(model, lr=0.05, weight_decay=0.01)
    grads = model.alloc_grads()
    if comm is not None and overlap:
        comm.bucket_bytes = 200  # several small buckets, so that some start during backward
        comm.overlap(grads)
    done = 0
    while done < steps:
        for x, y in loader:
            grads.zero()
            sg.losses.cross_entropy(model(x.trace(grads)), y).backward()
            if comm is not None and overlap:  # buckets started during the backward pass
                assert comm._overlaps[id(grads)].launched > 0
            if comm is not None:
                comm.allreduce_mean(grads)
            opt.update(model, grads)
            done += 1
            if done == steps:
                break
    return opt


def _epochs(
    model: Net, loader: Any, epochs: int, comm: dist.Comm | None, overlap: bool = False, ranks: int = 1
) -> None:
    """Every batch of ``loader`` for ``epochs`` epochs, SGD (one process: the batches of at
    least ``ranks`` samples, as the ranks get them). Not Adam: the bias before a BatchNorm
    has a gradient of rounding noise only, which Adam would scale up to whole steps."""
    opt = sg.optim.Sgd(model, lr=0.1)
    grads = model.alloc_grads()
    if comm is not None and overlap:
        comm.overlap(grads)
    for _ in range(epochs):
        for x, y in loader:
            if len(y) < ranks:
                continue
            assert len(y) >= 1, "a rank was handed an empty batch"
            grads.zero()
            sg.losses.cross_entropy(model(x.trace(grads)), y).backward()
            if comm is not None:
                comm.allreduce_mean(grads)
            opt.update(model, grads)


def _host(value: Any) -> Any:
    """``value`` as a NumPy array: a CuPy one (``SHAPEGRAD_BACKEND=cupy`` on a GPU, or the
    emulated CuPy) copied over with ``.get()``, as CuPy refuses ``np.asarray``."""
    if not isinstance(value, np.ndarray) and callable(getattr(value, "get", None)) and hasattr(value, "dtype"):
        return value.get()
    return np.asarray(value)


def _close(a: Any, b: Any, what: str) -> None:
    # Relative to the array's largest value, not element by element: the ranks sum the same
    # terms in another order, which moves an element that nearly cancels (6.1e-06 in an Adam
    # moment whose largest is 1.5e-03) by a few ulps of the terms: 7e-18, 1e-12 of itself.
    a, b = _host(a), _host(b)
    scale = max(float(np.max(np.abs(b))), 1e-300) if b.size else 1.0
    worst = float(np.max(np.abs(a - b))) / scale if a.size else 0.0
    assert worst <= 1e-12, f"{what}: relative difference {worst:.3e} > 1e-12"


def uneven(comm: dist.Comm, sync: bool, overlap: bool) -> None:
    """issue #24 item 12: a last global batch that does not split evenly (7 samples at 4
    ranks: 2+2+2+1; 9 at 2: 6, then 2+1) ends with the weights of one process over the same
    global batches; one with fewer samples than ranks (7 at 2 ranks: 6, then 1; 15 at 4:
    12, then 3) is left out on the ranks, never handed to a rank as an empty batch."""
    rng = np.random.default_rng(11)
    for n in (7, 9, 15):
        x, y = rng.standard_normal((n, 4)), rng.integers(0, 3, n)
        model = Net(norm=comm if sync else None)
        loader = sg.data.batches(x, y, batch_size=3, shuffle=True, generator=sg.Generator(4), shard=comm)
        _epochs(model, loader, 2, comm, overlap)
        reference = Net(norm="local" if sync else None)
        whole = sg.data.batches(x, y, batch_size=3 * comm.size, shuffle=True, generator=sg.Generator(4))
        _epochs(reference, whole, 2, None, ranks=comm.size)
        for (path, ours), (_, theirs) in zip(model.named_tensors(), reference.named_tensors(), strict=True):
            _close(ours.numpy(), theirs.numpy(), f"{n} samples, {path}")
    comm.barrier()


def equivalence(comm: dist.Comm, sync: bool, overlap: bool = False) -> None:
    """N ranks × batch b for k steps == 1 process × batch N·b over the same samples; then
    the same with uneven last batches (``uneven``)."""
    uneven(comm, sync, overlap)
    x, y = _data()
    b, steps = 6, 7
    model = Net(norm=comm if sync else None)
    comm.broadcast_parameters(model)
    loader = sg.data.batches(x, y, batch_size=b, shuffle=True, generator=sg.Generator(3), drop_last=True, shard=comm)
    opt = _train(model, loader, steps, comm, overlap)
    if comm.rank != 0:
        comm.barrier()
        return
    reference = Net(norm="local" if sync else None)  # one process: its batch is the global batch
    whole = sg.data.batches(x, y, batch_size=b * comm.size, shuffle=True, generator=sg.Generator(3), drop_last=True)
    ref_opt = _train(reference, whole, steps, None)
    for (path, ours), (_, theirs) in zip(model.named_tensors(), reference.named_tensors(), strict=True):
        _close(ours.numpy(), theirs.numpy(), path)
    for name, value in opt.state_arrays().items():
        _close(value, ref_opt.state_arrays()[name], f"optimizer {name}")
    assert opt.slot_steps() == ref_opt.slot_steps()
    comm.barrier()


def mismatch(comm: dist.Comm) -> None:
    """A rank with another model: every rank gets the error, naming the rank and the path."""
    model = Net(hidden=8 if comm.rank != 1 else 9)
    before = model.fc.weight.numpy().copy()
    try:
        comm.broadcast_parameters(model)
    except sg.ShapegradError as exc:
        assert "rank 1" in str(exc) and "fc.weight" in str(exc), str(exc)
        assert np.array_equal(model.fc.weight.numpy(), before)
    else:
        raise AssertionError("broadcast_parameters accepted different models")
    comm.barrier()


def _refused_everywhere(
    comm: dist.Comm, attempt: Any, *expected: str, kind: type[Exception] = sg.ShapegradError
) -> None:
    try:
        attempt()
    except kind as exc:
        assert all(text in str(exc) for text in expected), str(exc)
    else:
        raise AssertionError(f"accepted on rank {comm.rank}, expected a {kind.__name__} with {expected}")


def gradient_dtypes(comm: dist.Comm) -> None:
    """issue #24 item 14: gradients of another dtype on rank 1 are refused on every rank,
    naming the rank, the path and both dtypes (MPI said "Message truncated"), unchanged."""
    model = nn.Linear(2, 1, dtype="float32" if comm.rank == 1 else "float64", generator=sg.Generator(0))
    grads = model.alloc_grads()
    model(sg.ones(3, 2, dtype=model.weight.dtype).trace(grads)).sum().backward()
    before = grads[model.weight].numpy().copy()
    _refused_everywhere(comm, lambda: comm.allreduce_mean(grads), "rank 1", "weight", "float32", "float64")
    assert np.array_equal(grads[model.weight].numpy(), before)
    comm.barrier()


def sample_counts(comm: dist.Comm) -> None:
    """issue #24 item 12: a rank with no sample (its mean loss NaN) contributes zeros, the
    others are weighted by their counts; a count on some ranks only is refused everywhere."""
    model = nn.Linear(1, 1, dtype="float64", generator=sg.Generator(0))
    grads = model.alloc_grads()
    x = sg.tensor([[float("nan") if comm.rank == 1 else float(comm.rank + 1)]], dtype="float64")
    model(x.trace(grads)).sum().backward()
    comm.samples = 0 if comm.rank == 1 else comm.rank + 1
    comm.allreduce_mean(grads)
    counts = [0 if r == 1 else r + 1 for r in range(comm.size)]
    expected = sum(c * c for c in counts) / sum(counts)  # d/dw of each rank's w·x, x = its count
    assert np.allclose(grads[model.weight].numpy(), [[expected]]), (grads[model.weight].numpy(), expected)
    grads.zero()
    model(sg.ones(1, 1, dtype="float64").trace(grads)).sum().backward()
    comm.samples = 2 if comm.rank == 0 else None
    _refused_everywhere(comm, lambda: comm.allreduce_mean(grads), "rank 0 has comm.samples = 2", "rank 1 has None")
    comm.samples = None
    comm.barrier()


def accumulated(comm: dist.Comm) -> None:
    """Several batches' gradients added up before one allreduce_mean: where the ranks' counts
    differ in one of them (an epoch's last batch), refused on every rank with nothing changed
    (the last batch's counts weighed them all, a wrong average and no error); allreduce_mean
    after each backward pass gives one process's gradient over the same batches; even batches
    still add up, counts stated for evaluation batches in between (no backward) being ignored."""
    model = nn.Linear(1, 1, dtype="float64", generator=sg.Generator(0))
    grads = model.alloc_grads()
    # batch b on rank r: its samples' x; the loss is the mean of w·x over the rank's samples
    batches = [
        [float(comm.rank + 1), float(comm.rank + 2)],
        [float(10 + comm.rank)] * (2 if comm.rank == 0 else 1),
    ]
    every = [
        [[float(r + 1), float(r + 2)] for r in range(comm.size)],
        [[10.0, 10.0]] + [[10.0 + r] for r in range(1, comm.size)],
    ]
    expected = sum(np.mean(np.concatenate(ranks)) for ranks in every)  # d/dw of the global batches' mean losses

    def backward(xs: list[float]) -> None:
        comm.samples = len(xs)
        model(sg.tensor([[v] for v in xs], dtype="float64").trace(grads)).mean().backward()

    for xs in batches:
        backward(xs)
    before = grads[model.weight].numpy().copy()
    _refused_everywhere(comm, lambda: comm.allreduce_mean(grads), "several backward passes", "after each backward pass")
    assert np.array_equal(grads[model.weight].numpy(), before)
    grads.zero()
    for xs in batches:
        backward(xs)
        comm.allreduce_mean(grads)
    assert np.allclose(grads[model.weight].numpy(), [[expected]]), (grads[model.weight].numpy(), expected)
    grads.zero()
    for xs in ([1.0, 2.0], [3.0, 5.0]):
        comm.samples = comm.rank + 1  # an evaluation batch: stated, no backward pass
        backward(xs)
    comm.allreduce_mean(grads)
    assert np.allclose(grads[model.weight].numpy(), [[1.5 + 4.0]])
    # two losses of one uneven batch (the same count in both passes): one weight per rank is exact
    grads.zero()
    xs = [1.0, 2.0] if comm.rank == 0 else [3.0]
    backward(xs)
    backward(xs)
    comm.allreduce_mean(grads)
    every_x = [1.0, 2.0] + [3.0] * (comm.size - 1)
    assert np.allclose(grads[model.weight].numpy(), [[2 * np.mean(every_x)]])
    comm.samples = None
    comm.barrier()


def sharded_shuffle(comm: dist.Comm) -> None:
    """issue #24 item 14: ranks whose generators differ (or are unseeded) still get disjoint
    shards: rank 0's order is everyone's."""
    x, y = np.arange(20.0).reshape(20, 1), np.arange(20)
    generator = None if comm.rank == 1 else sg.Generator(100 + comm.rank)
    loader = sg.data.batches(x, y, batch_size=2, shuffle=True, generator=generator, shard=comm)
    mine = [int(v) for _, yb in loader for v in yb.tolist()]
    everyone: list[list[int]] = comm.mpi.allgather(mine)
    seen = sum(everyone, [])
    assert len(seen) == len(set(seen)), f"samples on two ranks: {everyone}"
    comm.barrier()


def unused(comm: dist.Comm) -> None:
    """Used on one rank counts as used on all; unused everywhere raises on every rank."""

    class Two(nn.Module, checked=False):
        def __init__(self) -> None:
            self.a = nn.parameter(sg.tensor([1.0, 2.0], dtype="float64"))
            self.b = nn.parameter(sg.tensor([3.0], dtype="float64"))

    model = Two()
    opt = sg.optim.Sgd(model, lr=0.1)
    grads = model.alloc_grads()
    loss = (model.a.trace(grads) * float(comm.rank + 1)).sum()
    if comm.rank == 0:
        loss = loss + model.b.trace(grads).sum()
    loss.backward()
    comm.allreduce_mean(grads)
    assert sorted(grads.received()) == ["a", "b"]
    mean_rank = (comm.size + 1) / 2
    assert np.allclose(grads[model.a].numpy(), [mean_rank, mean_rank])
    assert np.allclose(grads[model.b].numpy(), [1.0 / comm.size])
    opt.update(model, grads)
    grads.zero()
    (model.a.trace(grads) * 1.0).sum().backward()
    comm.allreduce_mean(grads)
    try:
        opt.update(model, grads)
    except sg.UnusedParameterError as exc:
        assert exc.paths == ("b",)
    else:
        raise AssertionError("an unused parameter was accepted")
    comm.barrier()


class Heads(nn.Module, checked=False):
    """A trunk and two heads, in float64: ``aux`` is used where the step says so."""

    def __init__(self) -> None:
        self.fc = nn.Linear(4, 8, dtype="float64", generator=sg.Generator(1))
        self.out = nn.Linear(8, 3, dtype="float64", generator=sg.Generator(2))
        self.aux = nn.Linear(8, 2, dtype="float64", generator=sg.Generator(3))


def _data_parallel(comm: dist.Comm, compiled: bool) -> tuple[Heads, list[float], Any]:
    """20 Adam steps of a data-parallel step, eager or under sg.compile: batches of another
    size on each rank and at some steps (several signatures; rank 0 records its second one
    at step 10, while rank 1 replays), ``comm.samples`` changing between replays of one
    signature, and ``aux`` used
    on rank 0 only (rank 1's buffer for it keeps the last step's reduced gradient unless the
    allreduce zeroes it again at every replay)."""
    model = Heads()
    opt = sg.optim.Adam(model, lr=0.05)
    grads = model.alloc_grads()

    def step(x: Any, y: Any) -> Any:
        grads.zero()
        h = model.fc(x.trace(grads)).tanh()
        loss = sg.losses.cross_entropy(model.out(h), y)
        if comm.rank == 0:
            loss = loss + (model.aux(h) ** 2).mean()
        loss.backward()
        comm.allreduce_mean(grads)
        opt.update(model, grads)
        return loss

    run = sg.compile(step) if compiled else step
    rng = np.random.default_rng(21 + comm.rank)
    losses: list[float] = []
    for i in range(20):
        size = (2 if i == 10 else 4) if comm.rank == 0 else 1 + i % 3
        x, y = rng.standard_normal((size, 4)), rng.integers(0, 3, size)
        # a stated count that changes while the signature does not: read at every replay
        comm.samples = size + (i % 4 == 1)
        losses.append(run(sg.tensor(x, dtype="float64"), sg.tensor(y)).item())
    comm.samples = None
    return model, losses, run


def compiled_step(comm: dist.Comm) -> None:
    """issue #26: allreduce_mean inside sg.compile. The compiled data-parallel step gives the
    eager one's losses and weights on every rank (``_data_parallel``), and the ranks' weights
    stay equal; a replay whose ranks use other parameters than its recording found is
    refused on every rank with nothing changed; other collectives stay refused."""
    # Replays are the NumPy backend's (on CuPy a compiled step runs eagerly, test_compile's
    # concern), so this scenario holds them to it whatever SHAPEGRAD_BACKEND names.
    sg.set_backend("numpy")
    eager, eager_losses, _ = _data_parallel(comm, compiled=False)
    model, losses, run = _data_parallel(comm, compiled=True)
    assert run.eager_reason is None, run.eager_reason
    assert sum(r.replays for r in run.recordings) >= 14, run.recordings
    assert all(r.host_calls == 2 for r in run.recordings), run.recordings  # the allreduce and the update
    _close(losses, eager_losses, "losses")
    for (path, ours), (_, theirs) in zip(model.named_tensors(), eager.named_tensors(), strict=True):
        _close(ours.numpy(), theirs.numpy(), f"compiled {path}")
    everyone = comm.mpi.allgather([t.numpy() for _, t in model.named_tensors()])
    for theirs in everyone[1:]:
        for a, b in zip(everyone[0], theirs, strict=True):
            _close(a, b, "the ranks' weights")

    # aux used on rank 0 at its second call only: rank 1 replays a recording made when no
    # rank used it, so its recorded update (fc and out) is not eager's (aux too).
    model = Heads()
    opt = sg.optim.Sgd(model, lr=0.1, unused="ignore")
    grads = model.alloc_grads()

    def step(x: Any, aux: bool) -> Any:
        grads.zero()
        h = model.fc(x.trace(grads)).tanh()
        loss = (model.out(h) ** 2).mean()
        if aux:
            loss = loss + (model.aux(h) ** 2).mean()
        loss.backward()
        comm.allreduce_mean(grads)
        opt.update(model, grads)
        return loss

    run = sg.compile(step)
    x = sg.ones(2, 4, dtype="float64")
    run(x, False)
    before = [t.numpy().copy() for _, t in model.named_tensors()]
    _refused_everywhere(
        comm, lambda: run(x, comm.rank == 0), "aux.weight", "replaying rank's recording", kind=sg.CompileError
    )
    for (_, tensor), old in zip(model.named_tensors(), before, strict=True):
        assert np.array_equal(tensor.numpy(), old), "a refused step changed a weight"
    comm.barrier()


def save(comm: dist.Comm, directory: str) -> None:
    """dist.save writes once (rank 0); every rank loads the same weights."""
    model = Net()
    comm.broadcast_parameters(model)
    opt = sg.optim.Adam(model)
    path = Path(directory) / "model.safetensors"
    dist.save(model, path, comm, optimizer=opt)
    fresh = Net(hidden=8)
    fresh.fc.weight.data[...] = 0.0
    dist.load(fresh, path, comm)
    assert np.array_equal(fresh.fc.weight.numpy(), model.fc.weight.numpy())
    comm.barrier()


def crash(comm: dist.Comm) -> None:
    """Rank 1 fails while the others wait in a collective: the job must end, not hang."""
    if comm.rank == 1:
        raise RuntimeError("boom on purpose in rank 1")
    comm.barrier()


def exit_with_status(comm: dist.Comm) -> None:
    """Rank 1's argparse rejects its arguments (sys.exit(2)) while the others wait."""
    if comm.rank == 1:
        argparse.ArgumentParser(prog="rank-one").parse_args(["--no-such-option"])
    comm.barrier()


def exit_early(comm: dist.Comm) -> None:
    """Rank 1 ends (status 0) while the others wait for it in a collective."""
    if comm.rank == 1:
        sys.exit(0)
    comm.barrier()


def main() -> None:
    scenario = sys.argv[1]
    if os.environ.get("SHAPEGRAD_TEST_DEFAULT_BACKEND") == "emulated-cupy":
        # The tests' emulated-CuPy pass reaches the ranks too, as SHAPEGRAD_BACKEND=cupy does.
        from emulated_cupy import make_module

        from shapegrad_backends.cupy_backend import CupyBackend

        sg.set_backend(CupyBackend(module=make_module()))
    comm = dist.init(exit_timeout=3.0) if scenario == "exit-early" else dist.init()
    if scenario == "equivalence":
        equivalence(comm, sync=False)
    elif scenario == "equivalence-sync":
        equivalence(comm, sync=True)
    elif scenario == "equivalence-overlap":
        equivalence(comm, sync=False, overlap=True)
    elif scenario == "checks":
        mismatch(comm)
        gradient_dtypes(comm)
        unused(comm)
        sample_counts(comm)
        accumulated(comm)
        sharded_shuffle(comm)
        save(comm, comm.mpi.bcast(tempfile.mkdtemp() if comm.rank == 0 else None, root=0))
    elif scenario == "compiled":
        compiled_step(comm)
    elif scenario == "crash":
        crash(comm)
    elif scenario == "exit-status":
        exit_with_status(comm)
    elif scenario == "exit-early":
        exit_early(comm)
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")
    if comm.rank == 0:
        print(f"PASSED {scenario} on {comm.size} ranks", flush=True)


if __name__ == "__main__":
    main()
