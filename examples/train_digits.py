"""Train a typed MLP and a small CNN on scikit-learn's bundled handwritten digits.

    python examples/train_digits.py            # full run (4-20 s on 2 cores, by how busy they are)
    python examples/train_digits.py --quick    # CI: fewer epochs, asserts an accuracy floor (3-9 s)

Prints a progress bar per epoch and a final table, saves a checkpoint per model and a PNG
plot of loss and accuracy under ``examples/output/`` (or ``--output DIR``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal as L, TypeVar

import numpy as np
from _cli import example_parser, parse

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Prod, Tensor
from shapegrad.nn import Conv2d, Flatten, Linear, MaxPool2d, Module

T = TypeVar("T")


class Batch(sg.Dim): ...


class MLP(Module):
    """64 pixels -> 128 hidden units -> 10 classes."""

    def __init__(self, generator: sg.Generator) -> None:
        # Flatten makes (B, 1, 8, 8) a (B, Prod[1, 8, 8]): the layer takes that product as it is.
        self.hidden = Linear[Prod[L[1], L[8], L[8]], L[128]](generator=generator)
        self.out = Linear[L[128], L[10]](generator=generator)

    def __call__(self, x: Tensor[T, Batch, L[1], L[8], L[8]]) -> Tensor[T, Batch, L[10]]:
        return self.out(self.hidden(Flatten()(x)).relu())


class CNN(Module):
    """Two 3×3 convolutions with max pooling, then a linear classifier."""

    def __init__(self, generator: sg.Generator) -> None:
        self.conv1 = Conv2d[L[1], L[16]](kernel_size=3, padding=1, generator=generator)
        self.conv2 = Conv2d[L[16], L[32]](kernel_size=3, padding=1, generator=generator)
        self.pool = MaxPool2d(2)
        self.head = Linear[L[128], L[10]](generator=generator)

    def __call__(self, x: Tensor[T, Batch, L[1], L[8], L[8]]) -> Tensor[T, Batch, L[10]]:
        h = self.pool(self.conv1(x).relu())  # (B, 16, Open, Open): pooled sizes are computed
        h2 = self.pool(self.conv2(h).relu())
        # 32 channels of 2×2: stated, and checked at run time, where the type cannot compute it.
        flat = sg.cast(Flatten()(h2), Tensor[T, Batch, L[128]])
        return self.head(flat)


@dataclass
class History:
    loss: list[float] = field(default_factory=list[float])
    test_accuracy: list[float] = field(default_factory=list[float])
    seconds: float = 0.0


def load_digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The 1,797 8×8 digit images scaled to [0, 1], split 80/20 with a fixed seed."""
    from sklearn import datasets  # pyright: ignore[reportMissingTypeStubs] -- scikit-learn ships no stubs

    digits: Any = getattr(datasets, "load_digits")()
    images: np.ndarray = (np.asarray(digits.images) / 16.0).astype(np.float32)[:, None, :, :]
    labels: np.ndarray = np.asarray(digits.target).astype(np.int64)
    order = np.random.default_rng(0).permutation(len(labels))
    cut = int(0.8 * len(labels))
    train, test = order[:cut], order[cut:]
    return images[train], labels[train], images[test], labels[test]


@sg.no_grad()  # evaluation: nothing recorded for a backward pass
def accuracy(model: MLP | CNN, images: np.ndarray, labels: np.ndarray) -> float:
    x = sg.cast(sg.tensor(images), Tensor[NoTape, Batch, L[1], L[8], L[8]])
    predictions = model(x).numpy().argmax(axis=-1)
    return float((predictions == labels).mean())


def train(
    name: str, model: MLP | CNN, data: tuple[np.ndarray, ...], epochs: int, lr: float, batch_size: int = 64
) -> History:
    from tqdm import tqdm

    train_x, train_y, test_x, test_y = data
    grads = model.alloc_grads()
    opt = sg.optim.Adam(model, lr=sg.optim.schedules.cosine(lr, total_steps=epochs * (len(train_y) // batch_size + 1)))
    loader = sg.data.batches(train_x, train_y, batch_size=batch_size, shuffle=True, generator=sg.Generator(1))
    history = History()
    start = time.perf_counter()
    for epoch in tqdm(range(epochs), desc=f"{name:>3}", unit="epoch", leave=True):
        total = 0.0
        for xb, yb in loader:
            # Batches have an open first dim: state it, checked at run time.
            x = sg.cast(xb, Tensor[NoTape, Batch, L[1], L[8], L[8]])
            y = sg.cast(yb, Tensor[NoTape, Batch])
            grads.zero()
            logits: Tensor[OwnedTape[Any], Batch, L[10]] = model(x.trace(grads))
            loss = sg.losses.cross_entropy(logits, y)
            loss.backward()
            opt.update(model, grads)  # pyright: ignore[reportArgumentType] -- MLP | CNN: one optimizer per model
            total += loss.item() * y.shape[0]
        history.loss.append(total / len(train_y))
        history.test_accuracy.append(accuracy(model, test_x, test_y))
        del epoch
    history.seconds = time.perf_counter() - start
    return history


def plot(histories: dict[str, History], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure: Any = plt.subplots(1, 2, figsize=(10, 4))  # matplotlib's types are partial
    fig, (left, right) = figure
    for name, history in histories.items():
        epochs = range(1, len(history.loss) + 1)
        left.plot(epochs, history.loss, label=name)
        right.plot(epochs, [100 * a for a in history.test_accuracy], label=name)
    left.set(title="training loss", xlabel="epoch", ylabel="cross-entropy")
    right.set(title="test accuracy", xlabel="epoch", ylabel="%")
    left.legend()
    right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = example_parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="few epochs; assert the accuracy floor (for CI)")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--floor", type=float, default=0.95, help="minimum test accuracy, checked at the end")
    args = parse(parser)
    epochs = args.epochs or (8 if args.quick else 25)
    data = load_digits()
    generator = sg.Generator(seed=0)
    models: dict[str, MLP | CNN] = {"MLP": MLP(generator), "CNN": CNN(generator)}
    rates = {"MLP": 1e-2, "CNN": 1e-2}
    histories: dict[str, History] = {}
    for name, model in models.items():
        histories[name] = train(name, model, data, epochs, rates[name])
        sg.save(model, args.output / f"{name.lower()}.safetensors")
    plot(histories, args.output / "training.png")

    print()
    print(f"{'model':<6} {'parameters':>10} {'epochs':>6} {'final loss':>10} {'test acc':>9} {'seconds':>8}")
    for name, history in histories.items():
        print(
            f"{name:<6} {models[name].num_parameters():>10,} {epochs:>6} {history.loss[-1]:>10.4f} "
            f"{100 * history.test_accuracy[-1]:>8.2f}% {history.seconds:>8.1f}"
        )
    print(f"\ncheckpoints and plot in {args.output}")
    worst = min(h.test_accuracy[-1] for h in histories.values())
    if worst < args.floor:
        raise SystemExit(f"test accuracy {100 * worst:.2f}% is below the floor {100 * args.floor:.0f}%")


if __name__ == "__main__":
    main()
