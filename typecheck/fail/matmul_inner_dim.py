r"""The inner dims of a matmul differ.

runtime: inner dims differ.*784.*783"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    x: Tensor[NoTape, Batch, L[784]] = sg.zeros(Batch(2), 784)
    w: Tensor[NoTape, L[783], L[10]] = sg.zeros(783, 10)
    x @ w  # E: Operator "@" not supported
