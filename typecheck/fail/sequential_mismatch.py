r"""A 784->128 layer followed by a 100->10 layer.

runtime: inner dims differ"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    model = Sequential(Linear[L[784], L[128]](), Linear[L[100], L[10]]())  # E: Linear[Literal[100], Literal[10]]
    model(sg.zeros(2, 784))
