"""The digits CNN trained data-parallel over MPI: every rank trains on its shard of each
global batch, gradients are averaged over the ranks, and every rank ends with the same
weights as one process training on the global batches would.

    pip install -e ".[demo,mpi]"
    mpiexec -n 4 python examples/train_digits_distributed.py
    mpiexec -n 2 python examples/train_digits_distributed.py --quick     # CI

Rank 0 shows the progress bar, writes the checkpoint and prints the final table; every rank
reports its own share.
"""

from __future__ import annotations

import time
from typing import Any, Literal as L

from _cli import example_parser, parse
from train_digits import CNN, Batch, accuracy, load_digits

import shapegrad as sg
import shapegrad.distributed as dist
from shapegrad import NoTape, Tensor


def main() -> None:
    parser = example_parser(__doc__)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--quick", action="store_true", help="8 epochs and an accuracy floor (CI)")
    parser.add_argument("--floor", type=float, default=0.95)
    args = parse(parser)
    epochs = 8 if args.quick else args.epochs

    comm = dist.init()
    x_train, y_train, x_test, y_test = load_digits()
    model = CNN(sg.Generator(0))
    comm.broadcast_parameters(model)  # identical start everywhere (seeded anyway; this checks it)
    grads = model.alloc_grads()
    opt = sg.optim.Adam(model, lr=2e-3 * comm.size**0.5)  # a larger global batch takes a larger step
    loader = sg.data.batches(
        x_train,
        y_train,
        batch_size=args.batch_size,
        shuffle=True,
        generator=sg.Generator(1),
        drop_last=True,
        shard=comm,
    )
    progress: Any = range(epochs)
    if comm.rank == 0:
        from tqdm import tqdm

        progress = tqdm(progress, desc=f"CNN on {comm.size} ranks", unit="epoch")
    started = time.perf_counter()
    samples = 0
    loss_value = float("nan")
    for _ in progress:
        for xb, yb in loader:
            images: Tensor[NoTape, Batch, L[1], L[8], L[8]] = sg.cast(xb, Tensor[NoTape, Batch, L[1], L[8], L[8]])
            grads.zero()
            loss = sg.losses.cross_entropy(model(images.trace(grads)), yb)
            loss.backward()
            comm.allreduce_mean(grads)
            opt.update(model, grads)
            samples += yb.shape[0]
            loss_value = loss.item()
    seconds = time.perf_counter() - started
    model.eval()
    test_accuracy = accuracy(model, x_test, y_test)
    shares = comm.mpi.gather((comm.rank, samples, loss_value), root=0)
    dist.save(model, args.output / "cnn_distributed.safetensors", comm, optimizer=opt)
    if comm.rank == 0:
        print("\n| rank | samples trained | last local loss |\n| ---: | ---: | ---: |")
        for rank, count, last in shares:
            print(f"| {rank} | {count} | {last:.4f} |")
        print(
            f"\nranks {comm.size}, global batch {args.batch_size * comm.size}, epochs {epochs}, "
            f"steps {len(loader) * epochs}, {seconds:.1f} s, test accuracy {test_accuracy:.4f} "
            f"(the same on every rank: identical weights)"
        )
    if args.quick:
        assert test_accuracy >= args.floor, f"test accuracy {test_accuracy:.4f} below the floor {args.floor}"


if __name__ == "__main__":
    main()
