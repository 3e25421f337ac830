r"""A reduction's result declared with the reduced axis."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main(x: Tensor[NoTape, Batch, L[10]]) -> None:
    y: Tensor[NoTape, Batch, L[10]] = x.sum(axis=-1)  # E
