r"""Batched matmul with mismatched inner dims.

runtime: inner dims differ"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    a: Tensor[NoTape, L[2], L[3], L[4]] = sg.zeros(2, 3, 4)
    b: Tensor[NoTape, L[2], L[5], L[6]] = sg.zeros(2, 5, 6)
    a @ b  # E
