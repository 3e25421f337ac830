r"""Two arguments disagree on Batch.

runtime: Batch=2"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


@sg.checked
def pair(x: Tensor[NoTape, Batch, L[3]], y: Tensor[NoTape, Batch, L[3]]) -> Tensor[NoTape, Batch, L[3]]:
    return x + y


class Other(sg.Dim): ...


def main() -> None:
    x: Tensor[NoTape, Batch, L[3]] = sg.zeros(Batch(2), 3)
    y: Tensor[NoTape, Other, L[3]] = sg.zeros(Other(5), 3)
    pair(x, y)  # E
