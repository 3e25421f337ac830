r"""A checked function called with a wrong fixed dim.

runtime: Batch 784"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


@sg.checked
def project(x: Tensor[T, Batch, L[784]]) -> Tensor[T, Batch]:
    return x.sum(axis=-1)


def main() -> None:
    x: Tensor[NoTape, Batch, L[783]] = sg.zeros(Batch(2), 783)
    project(x)  # E
