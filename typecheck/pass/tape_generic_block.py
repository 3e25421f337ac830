"""User code generic over the tape: the same block runs traced and untraced."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")
B = TypeVar("B")


def block(x: Tensor[T, B, L[4]], w: Tensor[NoTape, L[4], L[3]], b: Tensor[NoTape, L[3]]) -> Tensor[T, B, L[3]]:
    return (x @ w + b).tanh()


class Model: ...


def main(
    x: Tensor[NoTape, L[2], L[4]], w: Tensor[NoTape, L[4], L[3]], b: Tensor[NoTape, L[3]], grads: sg.Gradients[Model]
) -> None:
    plain: Tensor[NoTape, L[2], L[3]] = block(x, w, b)
    traced: Tensor[OwnedTape[Model], L[2], L[3]] = block(x.trace(grads), w, b)
    result: sg.Gradients[Model] = traced.sum().backward()
    print(plain, result)
