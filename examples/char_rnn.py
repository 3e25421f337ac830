"""A character-level LSTM language model, typed end to end, trained on the Python standard
library's own source (the same text as gpt.py: no download).

    python examples/char_rnn.py            # a few minutes on 2 cores
    python examples/char_rnn.py --quick    # CI, well under 30 s: its validation loss must beat the unigram baseline

Character embeddings, a 2-layer ``sg.nn.LSTM`` and a linear head over every position;
Adam with gradient clipping; validation loss per epoch against the unigram baseline (the
entropy of the character frequencies), then text sampled one character at a time, the
LSTM's state carried from each call to the next, and a final table.
"""

from __future__ import annotations

import time
from typing import Literal as L, TypeVar

import numpy as np
from _cli import example_parser, parse
from gpt import corpus, unigram_baseline

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import LSTM, Embedding, Linear, Module

T = TypeVar("T")

Vocab = L[128]  # ASCII: one token per character
Width = L[64]  # embedding width
Hidden = L[128]  # the LSTM's state
VOCAB = 128


class Batch(sg.Dim): ...


class Steps(sg.Dim): ...


State = tuple[Tensor[NoTape, L[2], Batch, Hidden], Tensor[NoTape, L[2], Batch, Hidden]]  # (layers, B, H)


class CharLSTM(Module):
    """Characters in, next-character logits out at every position; the final state too."""

    def __init__(self, generator: sg.Generator | None = None) -> None:
        self.tokens = Embedding[Vocab, Width](generator=generator)
        self.lstm = LSTM[Width, Hidden](num_layers=2, generator=generator)
        self.head = Linear[Hidden, Vocab](generator=generator)

    def __call__(self, ids: Tensor[T, Batch, Steps]) -> Tensor[T, Batch, Steps, Vocab]:
        out, _ = self.lstm(self.tokens(ids))
        return self.head(out)

    def step(
        self, ids: Tensor[NoTape, Batch, Steps], state: State | None
    ) -> tuple[Tensor[NoTape, Batch, Steps, Vocab], State]:
        """Logits and the state after ``ids``, starting from ``state`` (None: zeros)."""
        out, final = self.lstm(self.tokens(ids), state)
        return self.head(out), final


def windows(data: np.ndarray, count: int, steps: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``count`` random windows of ``steps`` characters and, for each, the next character at every position."""
    starts = rng.integers(0, len(data) - steps - 1, count)
    rows = starts[:, None] + np.arange(steps)
    return data[rows], data[rows + 1]


def batch(x: np.ndarray, y: np.ndarray) -> tuple[Tensor[NoTape, Batch, Steps], Tensor[NoTape, Batch, Steps]]:
    return sg.cast(sg.tensor(x), Tensor[NoTape, Batch, Steps]), sg.cast(sg.tensor(y), Tensor[NoTape, Batch, Steps])


@sg.no_grad()  # evaluation: nothing recorded for a backward pass
def mean_loss(model: CharLSTM, data: np.ndarray, batches: int, batch_size: int, steps: int) -> float:
    rng = np.random.default_rng(123)  # the same validation windows every epoch
    total = 0.0
    for _ in range(batches):
        ids, targets = batch(*windows(data, batch_size, steps, rng))
        total += sg.losses.cross_entropy(model(ids), targets).item()
    return total / batches


@sg.no_grad()  # evaluation: nothing recorded for a backward pass
def sample(model: CharLSTM, prompt: str, length: int, temperature: float, rng: np.random.Generator) -> str:
    """Characters drawn one at a time, the prompt read once and the state carried along."""
    ids = [min(ord(c), VOCAB - 1) for c in prompt]
    logits, state = model.step(sg.cast(sg.tensor(np.array([ids])), Tensor[NoTape, Batch, Steps]), None)
    for _ in range(length):
        last = logits[0, logits.shape[1] - 1] * (1.0 / temperature)
        probabilities = sg.softmax(last, axis=-1).numpy().astype(np.float64)
        ids.append(int(rng.choice(VOCAB, p=probabilities / probabilities.sum())))
        logits, state = model.step(sg.cast(sg.tensor(np.array([ids[-1:]])), Tensor[NoTape, Batch, Steps]), state)
    return "".join(chr(i) for i in ids)


def main() -> None:
    parser = example_parser(__doc__)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--steps", type=int, default=200, help="training steps per epoch")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--length", type=int, default=64, help="characters per training window")
    parser.add_argument("--quick", action="store_true", help="2 epochs of 40 steps (CI)")
    args = parse(parser)
    epochs, steps = (2, 40) if args.quick else (args.epochs, args.steps)

    text = np.frombuffer(corpus().encode("ascii"), dtype=np.uint8).astype(np.int64)
    cut = int(0.9 * len(text))
    train, val = text[:cut], text[cut:]
    baseline = unigram_baseline(train, val)
    model = CharLSTM(generator=sg.Generator(0))
    grads = model.alloc_grads()
    opt = sg.optim.Adam(model, lr=1e-2 if args.quick else 3e-3, clip_norm=1.0)
    rng = np.random.default_rng(1)

    print(f"corpus: {len(text):,} characters; unigram baseline {baseline:.3f} nats/char")
    started = time.perf_counter()
    val_loss = float("nan")
    for epoch in range(epochs):
        for _ in range(steps):
            ids, targets = batch(*windows(train, args.batch_size, args.length, rng))
            grads.zero()
            logits: Tensor[OwnedTape[CharLSTM], Batch, Steps, Vocab] = model(ids.trace(grads))
            loss = sg.losses.cross_entropy(logits, targets)
            loss.backward()
            opt.update(model, grads)
        val_loss = mean_loss(model, val, 4 if args.quick else 16, args.batch_size, args.length)
        print(f"epoch {epoch + 1}: validation loss {val_loss:.3f} nats/char (unigram {baseline:.3f})")
    seconds = time.perf_counter() - started
    sg.save(model, args.output / "char_rnn.safetensors", optimizer=opt)
    text_out = sample(model, "def ", 120, temperature=0.8, rng=np.random.default_rng(2))
    print(f"\nsample (temperature 0.8):\n{text_out}\n")
    print("| parameters | steps | seconds | validation loss | unigram baseline |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    print(f"| {model.num_parameters():,} | {epochs * steps} | {seconds:.1f} | {val_loss:.3f} | {baseline:.3f} |")
    if args.quick:
        assert val_loss < baseline - 0.1, f"validation loss {val_loss:.3f} does not beat the unigram {baseline:.3f}"


if __name__ == "__main__":
    main()
