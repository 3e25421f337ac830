r"""sg.matmul names both argument types when the inner dims differ.

runtime: inner dims differ"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    x: Tensor[NoTape, Batch, L[784]] = sg.zeros(Batch(2), 784)
    w: Tensor[NoTape, L[783], L[10]] = sg.zeros(783, 10)
    sg.matmul(x, w)  # E: Tensor[NoTape, Literal[783], Literal[10]]
