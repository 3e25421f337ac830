"""Cross-entropy against class probabilities (distillation, mixup): a float target of the
logits' own shape, told apart from integer labels (one axis fewer) by its rank."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def distill(
    student: Tensor[OwnedTape[None], Batch, L[10]], teacher: Tensor[NoTape, Batch, L[10]], labels: Tensor[NoTape, Batch]
) -> Tensor[OwnedTape[None]]:
    soft: Tensor[OwnedTape[None]] = sg.losses.cross_entropy(student, (teacher * 0.5).softmax(), label_smoothing=0.1)
    hard: Tensor[OwnedTape[None]] = sg.losses.cross_entropy(student, labels)
    return soft * 0.7 + hard * 0.3


def per_token(
    logits: Tensor[OwnedTape[None], Batch, Seq, L[10]], probs: Tensor[NoTape, Batch, Seq, L[10]]
) -> Tensor[OwnedTape[None], Batch, Seq]:
    return sg.losses.cross_entropy(logits, probs, weight=sg.ones(10), reduction="none")


def learned_targets(
    logits: Tensor[NoTape, Batch, L[4]], probs: Tensor[OwnedTape[None], Batch, L[4]]
) -> Tensor[OwnedTape[None]]:
    # the targets traced: the loss is traced too (their gradient reaches them)
    return sg.losses.cross_entropy(logits, probs, reduction="sum")


def main() -> None:
    grads = sg.Gradients()
    student: Tensor[NoTape, Batch, L[10]] = sg.randn(Batch(8), 10)
    teacher: Tensor[NoTape, Batch, L[10]] = sg.randn(Batch(8), 10)
    labels = sg.randint(0, 10, (Batch(8),))
    distill(student.trace(grads), teacher, labels).backward()
    logits: Tensor[NoTape, Batch, Seq, L[10]] = sg.randn(Batch(2), Seq(3), 10)
    probs: Tensor[NoTape, Batch, Seq, L[10]] = sg.randn(Batch(2), Seq(3), 10)
    per_token(logits.trace(grads), probs.softmax()).sum().backward()
    soft: Tensor[NoTape, Batch, L[4]] = sg.full((Batch(2), 4), 0.25)
    learned_targets(sg.randn(Batch(2), 4), soft.trace(grads)).backward()


if __name__ == "__main__":
    main()
