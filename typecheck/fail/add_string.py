r"""Adding a string to a tensor.

runtime: expects a Tensor or a Python number, found str"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    a: Tensor[NoTape, L[3]] = sg.zeros(3)
    a + "one"  # E
