"""sg.checked functions keep their static signature."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


@sg.checked
def normalize(x: Tensor[T, Batch, L[8]]) -> Tensor[T, Batch, L[8]]:
    return x - x.mean(axis=-1, keepdims=True)


def main(x: Tensor[NoTape, Batch, L[8]]) -> None:
    y: Tensor[NoTape, Batch, L[8]] = normalize(x)
    print(y)
