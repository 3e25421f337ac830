r"""A summary asked for with an example input the model does not take.

runtime: Batch 784"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad.nn import Linear, Module

T = TypeVar("T")


class Batch(sg.Dim): ...


class MLP(Module):
    def __init__(self) -> None:
        self.out = Linear[L[784], L[10]]()

    def __call__(self, x: Tensor[T, Batch, L[784]]) -> Tensor[T, Batch, L[10]]:
        return self.out(x)


def main() -> None:
    x: Tensor[NoTape, Batch, L[783]] = sg.zeros(Batch(2), 783)
    sg.summary(MLP(), x)  # E
