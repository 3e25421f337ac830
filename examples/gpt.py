"""A character-level GPT, typed end to end, trained on the Python standard library's own
source (every machine with Python has it: no download).

    python examples/gpt.py            # about 100 s on 2 cores
    python examples/gpt.py --quick    # CI, 5-6 s: its validation loss must beat the unigram baseline

Token and learned positional embeddings, pre-norm causal transformer blocks with exact GELU,
the output head tied to the token embedding, AdamW with warmup and a cosine schedule and
gradient clipping; validation loss per epoch, text sampled with temperature and top-k at
the end, a checkpoint, and a final table.
"""

from __future__ import annotations

import importlib
import inspect
import time
from typing import Literal as L, TypeVar

import numpy as np
from _cli import example_parser, parse

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Embedding, LayerNorm, Module, TransformerEncoderBlock

T = TypeVar("T")

Vocab = L[128]  # ASCII: one token per character
Context = L[64]  # characters the model sees at once
Width = L[96]  # embedding width
VOCAB, CONTEXT, WIDTH = 128, 64, 96


class Batch(sg.Dim): ...


class GPT(Module):
    """Characters in, next-character logits out, for every position at once."""

    def __init__(self, layers: int = 2, heads: int = 4, generator: sg.Generator | None = None) -> None:
        self.tokens = Embedding[Vocab, Width](generator=generator)
        # GPT-2's scale for the embedding the head shares (N(0, 1), PyTorch's default for an
        # Embedding, would start the tied head at logits of std ~10 and a loss of ~70).
        self.tokens.weight[...] = self.tokens.weight * 0.02
        table = sg.cast(sg.randn(CONTEXT, WIDTH, generator=generator) * 0.02, Tensor[NoTape, Context, Width])
        self.positions = sg.nn.parameter(table)
        self.blocks = [
            TransformerEncoderBlock[Width](num_heads=heads, ff_dim=4 * WIDTH, approximate="none", generator=generator)
            for _ in range(layers)
        ]
        self.norm = LayerNorm[Width]()

    def __call__(self, ids: Tensor[T, Batch, Context]) -> Tensor[T, Batch, Context, Vocab]:
        h: Tensor[T, Batch, Context, Width] = self.tokens(ids) + self.positions
        for block in self.blocks:
            h = block(h, causal=True)
        # The head is the token embedding, transposed (weight tying): (B, S, D) @ (D, V).
        logits = self.norm(h) @ self.tokens.weight.T
        return sg.cast(logits, Tensor[T, Batch, Context, Vocab])


def corpus() -> str:
    """The source of a few standard-library modules, as ASCII text."""
    names = ["textwrap", "string", "shlex", "fractions", "difflib", "heapq", "bisect", "calendar", "argparse"]
    text = "\n".join(inspect.getsource(importlib.import_module(name)) for name in names)
    return text.encode("ascii", "replace").decode("ascii")


def windows(data: np.ndarray, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``count`` random windows of the text and, for each, the next character at every position."""
    starts = rng.integers(0, len(data) - CONTEXT - 1, count)
    rows = starts[:, None] + np.arange(CONTEXT)
    return data[rows], data[rows + 1]


@sg.no_grad()  # evaluation: nothing recorded for a backward pass
def mean_loss(model: GPT, data: np.ndarray, batches: int, batch_size: int) -> float:
    rng = np.random.default_rng(123)  # the same validation windows every epoch
    model.eval()
    total = 0.0
    for _ in range(batches):
        x, y = windows(data, batch_size, rng)
        ids = sg.cast(sg.tensor(x), Tensor[NoTape, Batch, Context])
        targets = sg.cast(sg.tensor(y), Tensor[NoTape, Batch, Context])
        total += sg.losses.cross_entropy(model(ids), targets).item()
    model.train()
    return total / batches


def unigram_baseline(train: np.ndarray, val: np.ndarray) -> float:
    """Cross-entropy on the validation text of the training text's character frequencies."""
    counts: np.ndarray = np.bincount(train, minlength=VOCAB).astype(np.float64) + 1.0
    log_probabilities: np.ndarray = np.log(counts / counts.sum())
    return -float(log_probabilities[val].mean())


@sg.no_grad()  # evaluation: nothing recorded for a backward pass
def sample(model: GPT, prompt: str, length: int, temperature: float, top_k: int, rng: np.random.Generator) -> str:
    """Characters drawn one at a time from the model's softmax over its ``top_k`` best."""
    model.eval()
    ids = [min(ord(c), VOCAB - 1) for c in prompt][-CONTEXT:]
    for _ in range(length):
        window = ([ord(" ")] * CONTEXT + ids)[-CONTEXT:]
        context = sg.cast(sg.tensor(np.array([window])), Tensor[NoTape, Batch, Context])
        logits = model(context)[0, CONTEXT - 1] * (1.0 / temperature)
        values, indices = sg.topk(logits, top_k)
        probabilities = sg.softmax(values, axis=-1).numpy().astype(np.float64)
        ids.append(int(indices.numpy()[rng.choice(top_k, p=probabilities / probabilities.sum())]))
    model.train()
    return "".join(chr(i) for i in ids)


def main() -> None:
    parser = example_parser(__doc__)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--steps", type=int, default=200, help="steps per epoch")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--quick", action="store_true", help="2 epochs of 40 steps (CI)")
    args = parse(parser)
    epochs, steps = (2, 40) if args.quick else (args.epochs, args.steps)

    text = np.frombuffer(corpus().encode("ascii"), dtype=np.uint8).astype(np.int64)
    cut = int(0.9 * len(text))
    train, val = text[:cut], text[cut:]
    baseline = unigram_baseline(train, val)
    model = GPT(generator=sg.Generator(0))
    grads = model.alloc_grads()
    total_steps = epochs * steps
    schedule = sg.optim.schedules.warmup(sg.optim.schedules.cosine(3e-3, total_steps, min_lr=3e-4), total_steps // 10)
    opt = sg.optim.AdamW(model, lr=schedule, weight_decay=0.01, clip_norm=1.0)
    rng = np.random.default_rng(1)
    from tqdm import tqdm

    print(f"corpus: {len(text):,} characters; unigram baseline {baseline:.3f} nats/char")
    started = time.perf_counter()
    val_loss = float("nan")
    for epoch in range(epochs):
        bar = tqdm(range(steps), desc=f"epoch {epoch + 1}/{epochs}", unit="step", leave=False)
        for _ in bar:
            x, y = windows(train, args.batch_size, rng)
            ids = sg.cast(sg.tensor(x), Tensor[NoTape, Batch, Context])
            targets = sg.cast(sg.tensor(y), Tensor[NoTape, Batch, Context])
            grads.zero()
            logits: Tensor[OwnedTape[GPT], Batch, Context, Vocab] = model(ids.trace(grads))
            loss = sg.losses.cross_entropy(logits, targets)
            loss.backward()
            opt.update(model, grads)
            bar.set_postfix_str(f"loss={loss:.3f}")
        val_loss = mean_loss(model, val, 4 if args.quick else 16, args.batch_size)
        print(f"epoch {epoch + 1}: validation loss {val_loss:.3f} nats/char (unigram {baseline:.3f})")
    seconds = time.perf_counter() - started
    sg.save(model, args.output / "gpt.safetensors", optimizer=opt)
    text_out = sample(model, "def ", 120, temperature=0.8, top_k=8, rng=np.random.default_rng(2))
    print(f"\nsample (temperature 0.8, top-k 8):\n{text_out}\n")
    print("| parameters | steps | seconds | validation loss | unigram baseline |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    print(f"| {model.num_parameters():,} | {total_steps} | {seconds:.1f} | {val_loss:.3f} | {baseline:.3f} |")
    if args.quick:
        assert val_loss < baseline - 0.1, f"validation loss {val_loss:.3f} does not beat the unigram {baseline:.3f}"


if __name__ == "__main__":
    main()
