r"""A power with an exponent tensor of another shape.

runtime: do not broadcast"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    a: Tensor[NoTape, L[3]] = sg.ones(3)
    b: Tensor[NoTape, L[2]] = sg.ones(2)
    a**b  # E
