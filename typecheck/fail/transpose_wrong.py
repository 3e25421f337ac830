r"""A transpose declared untransposed."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main(m: Tensor[NoTape, L[3], L[4]]) -> None:
    t: Tensor[NoTape, L[3], L[4]] = m.transpose()  # E
