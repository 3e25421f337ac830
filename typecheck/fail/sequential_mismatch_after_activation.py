r"""The mismatch is found through an activation.

runtime: inner dims differ"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    model = Sequential(Linear[L[784], L[128]](), sg.nn.ReLU(), Linear[L[100], L[10]]())  # E
    model(sg.zeros(2, 784))
