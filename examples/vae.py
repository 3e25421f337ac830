"""A variational autoencoder on scikit-learn's digits, typed end to end.

    python examples/vae.py            # under 10 s on 2 cores
    python examples/vae.py --quick    # CI: fewer epochs, the ELBO must improve on its start

The encoder gives a mean and a log-variance; ``z = mean + exp(logvar / 2) · ε`` with ε from
the library's seeded generator (the reparameterisation trick: the draw carries no gradient,
mean and logvar do); the decoder gives pixel logits. The loss is the negative ELBO per
image: Bernoulli reconstruction (cross-entropy with logits, summed over the 64 pixels) plus
``KL(q(z|x) ‖ N(0, I)) = -½ Σ (1 + logvar - mean² - e^logvar)``. Writes a PNG of test
images beside their reconstructions, and of samples decoded from the prior.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal as L, TypeVar

import numpy as np
from _cli import example_parser, parse
from train_digits import load_digits

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module

T = TypeVar("T")
Pixels = L[64]
Latent = L[8]


class Batch(sg.Dim): ...


class VAE(Module):
    def __init__(self, generator: sg.Generator) -> None:
        self.encode = Linear[Pixels, L[128]](generator=generator)
        self.mean = Linear[L[128], Latent](generator=generator)
        self.logvar = Linear[L[128], Latent](generator=generator)
        self.decode_hidden = Linear[Latent, L[128]](generator=generator)
        self.decode_out = Linear[L[128], Pixels](generator=generator)
        self.noise = generator

    def latent(self, x: Tensor[T, Batch, Pixels]) -> tuple[Tensor[T, Batch, Latent], Tensor[T, Batch, Latent]]:
        h = self.encode(x).relu()
        return self.mean(h), self.logvar(h)

    def decode(self, z: Tensor[T, Batch, Latent]) -> Tensor[T, Batch, Pixels]:
        return self.decode_out(self.decode_hidden(z).relu())

    def __call__(
        self, x: Tensor[T, Batch, Pixels]
    ) -> tuple[Tensor[T, Batch, Pixels], Tensor[T, Batch, Latent], Tensor[T, Batch, Latent]]:
        mean, logvar = self.latent(x)
        eps = sg.randn_like(mean, generator=self.noise)
        z = mean + (logvar * 0.5).exp() * eps
        return self.decode(z), mean, logvar


def negative_elbo(
    logits: Tensor[T, Batch, Pixels],
    x: Tensor[NoTape, Batch, Pixels],
    mean: Tensor[T, Batch, Latent],
    logvar: Tensor[T, Batch, Latent],
) -> Tensor[T]:
    """Reconstruction + KL, summed per image, averaged over the batch (nats per image)."""
    reconstruction = sg.losses.binary_cross_entropy_with_logits(logits, x, reduction="none").sum(axis=-1)
    kl = ((1.0 + logvar - mean * mean - logvar.exp()) * -0.5).sum(axis=-1)
    return (reconstruction + kl).mean()


def grid(path: Path, rows: list[np.ndarray], titles: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure: Any = plt.subplots(len(rows), 10, figsize=(10, 1.2 * len(rows)))
    fig, axes = figure
    for r, (images, title) in enumerate(zip(rows, titles, strict=True)):
        for c in range(10):
            axis = axes[r][c]
            axis.imshow(images[c].reshape(8, 8), cmap="gray_r", vmin=0, vmax=1)
            axis.set_xticks([])
            axis.set_yticks([])
        axes[r][0].set_ylabel(title, rotation=0, ha="right", va="center")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def main() -> None:
    parser = example_parser(__doc__)
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--quick", action="store_true", help="15 epochs (CI)")
    args = parse(parser)
    epochs = 15 if args.quick else args.epochs
    train_x, _, test_x, _ = load_digits()
    train_flat, test_flat = train_x.reshape(-1, 64), test_x.reshape(-1, 64)
    model = VAE(sg.Generator(0))
    grads = model.alloc_grads()
    opt = sg.optim.Adam(model, lr=2e-3)
    loader = sg.data.batches(train_flat, train_flat, batch_size=64, shuffle=True, generator=sg.Generator(1))
    test: Tensor[NoTape, Batch, Pixels] = sg.cast(sg.tensor(test_flat), Tensor[NoTape, Batch, Pixels])
    start_loss = _test_loss(model, test)
    from tqdm import tqdm

    started = time.perf_counter()
    for _ in tqdm(range(epochs), desc="VAE", unit="epoch"):
        for xb, _ in loader:
            x = sg.cast(xb, Tensor[NoTape, Batch, Pixels])
            grads.zero()
            logits, mean, logvar = model(x.trace(grads))
            loss: Tensor[OwnedTape[VAE]] = negative_elbo(logits, x, mean, logvar)
            loss.backward()
            opt.update(model, grads)
    seconds = time.perf_counter() - started
    end_loss = _test_loss(model, test)
    reconstructed = model.decode(model.latent(test)[0]).sigmoid().numpy()
    prior: Tensor[NoTape, Batch, Latent] = sg.cast(
        sg.randn(10, 8, generator=sg.Generator(7)), Tensor[NoTape, Batch, Latent]
    )
    samples = model.decode(prior).sigmoid().numpy()
    grid(
        args.output / "vae.png", [test_flat[:10], reconstructed[:10], samples], ["test", "reconstructed", "from prior"]
    )
    print(
        "\n| parameters | epochs | seconds | test -ELBO at start | test -ELBO at end |\n| ---: | ---: | ---: | ---: | ---: |"
    )
    print(f"| {model.num_parameters():,} | {epochs} | {seconds:.1f} | {start_loss:.1f} nats | {end_loss:.1f} nats |")
    print(f"reconstructions and samples: {args.output / 'vae.png'}")
    if args.quick:
        assert end_loss < 0.6 * start_loss, f"-ELBO {end_loss:.1f} did not fall enough from {start_loss:.1f}"


def _test_loss(model: VAE, test: Tensor[NoTape, Batch, Pixels]) -> float:
    logits, mean, logvar = model(test)
    return negative_elbo(logits, test, mean, logvar).item()


if __name__ == "__main__":
    main()
