"""sg.no_grad keeps a decorated function's signature, with parentheses or without, and is a
context manager: evaluation code written as PyTorch's type-checks."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad.nn import Linear


class Batch(sg.Dim): ...


layer = Linear[L[4], L[3]]()


@sg.no_grad()
def predict(x: Tensor[NoTape, Batch, L[4]]) -> Tensor[NoTape, Batch]:
    return layer(x).argmax(-1)


@sg.no_grad
def scores(x: Tensor[NoTape, Batch, L[4]]) -> Tensor[NoTape, Batch, L[3]]:
    return layer(x)


def main() -> None:
    x: Tensor[NoTape, Batch, L[4]] = sg.randn(Batch(8), 4)
    labels: Tensor[NoTape, Batch] = predict(x)
    logits: Tensor[NoTape, Batch, L[3]] = scores(x)
    with sg.no_grad():
        probabilities: Tensor[NoTape, Batch, L[3]] = sg.softmax(layer(x), axis=-1)
    print(labels.shape, logits.shape, probabilities.shape)


if __name__ == "__main__":
    main()
