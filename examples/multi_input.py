"""Two inputs, one tape, no threading: an image branch and a text branch trained together.

python examples/multi_input.py
"""

from __future__ import annotations

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad.nn import Embedding, Linear, Module

T = TypeVar("T")


class Batch(sg.Dim): ...


class Words(sg.Dim): ...


class TwoBranches(Module):
    def __init__(self, generator: sg.Generator) -> None:
        self.image = Linear[L[16], L[8]](generator=generator)
        self.words = Embedding[L[20], L[8]](generator=generator)
        self.head = Linear[L[8], L[2]](generator=generator)

    def __call__(self, image: Tensor[T, Batch, L[16]], words: Tensor[T, Batch, Words]) -> Tensor[T, Batch, L[2]]:
        text: Tensor[T, Batch, L[8]] = self.words(words).mean(axis=1)
        return self.head((self.image(image) + text).tanh())


def main() -> None:
    gen = sg.Generator(seed=0)
    model = TwoBranches(gen)
    grads = model.alloc_grads()
    opt = sg.optim.Adam(model, lr=0.05)
    image: Tensor[NoTape, Batch, L[16]] = sg.randn(Batch(32), 16, generator=gen)
    words: Tensor[NoTape, Batch, Words] = sg.cast(
        sg.tensor((gen.permutation(32 * 5) % 20).reshape(32, 5)), Tensor[NoTape, Batch, Words]
    )
    labels = sg.cast(sg.tensor((image.numpy().sum(axis=1) > 0).astype("int64")), Tensor[NoTape, Batch])
    for step in range(60):
        grads.zero()
        # Both inputs are traced with the same grads: they share one tape.
        logits = model(image.trace(grads), words.trace(grads))
        loss = sg.losses.cross_entropy(logits, labels)
        loss.backward()
        opt.update(model, grads)
        if step % 20 == 0 or step == 59:
            print(f"step {step:2d}  loss {loss.item():.4f}")
    print("every parameter of both branches got a gradient:", sorted(grads.received()))


if __name__ == "__main__":
    main()
