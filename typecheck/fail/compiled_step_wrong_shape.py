r"""A compiled step is checked as the step is: a batch of the wrong width is an error.

runtime: inner dims differ"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad.nn import Linear


class Batch(sg.Dim): ...


def main() -> None:
    layer = Linear[L[784], L[10]]()

    def predict(x: Tensor[NoTape, Batch, L[784]]) -> Tensor[NoTape, Batch, L[10]]:
        return layer(x)

    forward = sg.compile(predict)
    wrong: Tensor[NoTape, Batch, L[100]] = sg.randn(Batch(8), 100)
    forward(wrong)  # E: "Tensor[NoTape, Batch, Literal[100]]" is not assignable to "Tensor[NoTape, Batch, Literal[784]]"
    forward(sg.randn(Batch(8), 784), 3)  # E: Expected 1 positional argument
