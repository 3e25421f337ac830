"""A function decorated with sg.no_grad is checked as it was: a batch of the wrong width, or
one argument too many, is an error (with parentheses or without)."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad.nn import Linear


class Batch(sg.Dim): ...


layer = Linear[L[4], L[3]]()


@sg.no_grad()
def predict(x: Tensor[NoTape, Batch, L[4]]) -> Tensor[NoTape, Batch, L[3]]:
    return layer(x)


@sg.no_grad
def scores(x: Tensor[NoTape, Batch, L[4]]) -> Tensor[NoTape, Batch, L[3]]:
    return layer(x)


def main() -> None:
    wrong: Tensor[NoTape, Batch, L[5]] = sg.randn(Batch(8), 5)
    predict(wrong)  # E: "Tensor[NoTape, Batch, Literal[5]]" is not assignable to "Tensor[NoTape, Batch, Literal[4]]"
    scores(wrong)  # E: "Tensor[NoTape, Batch, Literal[5]]" is not assignable to "Tensor[NoTape, Batch, Literal[4]]"
    predict(sg.randn(Batch(8), 4), 3)  # E: Expected 1 positional argument
