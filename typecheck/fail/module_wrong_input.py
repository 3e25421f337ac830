r"""A model called with the wrong feature size.

runtime: Batch 4"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


class MLP(Module):
    def __init__(self) -> None:
        self.out = Linear[L[4], L[2]]()

    def __call__(self, x: Tensor[T, Batch, L[4]]) -> Tensor[T, Batch, L[2]]:
        return self.out(x)


def main() -> None:
    x: Tensor[NoTape, Batch, L[5]] = sg.zeros(Batch(3), 5)
    MLP()(x)  # E
