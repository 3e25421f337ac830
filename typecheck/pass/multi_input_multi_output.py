"""Several inputs on one tape, several outputs in one backward pass."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor


def main() -> None:
    grads = sg.Gradients()
    image: Tensor[NoTape, L[2], L[3]] = sg.ones(2, 3)
    text: Tensor[NoTape, L[2], L[3]] = sg.zeros(2, 3)
    a = image.trace(grads)
    b = text.trace(grads)
    joint: Tensor[OwnedTape[None], L[2], L[3]] = a * b + a
    first: Tensor[OwnedTape[None]] = joint.sum()
    second: Tensor[OwnedTape[None]] = (joint * joint).mean()
    returned: sg.Gradients[None] = sg.backward(first, second)
    grad_a: Tensor[object, L[2], L[3]] | None = None
    print(returned[a], grad_a)
