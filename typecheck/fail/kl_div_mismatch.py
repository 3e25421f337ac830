r"""KL divergence between distributions of different sizes.

runtime: one shape"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    p: Tensor[NoTape, Batch, L[3]] = sg.zeros(Batch(2), 3)
    q: Tensor[NoTape, Batch, L[4]] = sg.zeros(Batch(2), 4)
    sg.losses.kl_div(p, q)  # E
