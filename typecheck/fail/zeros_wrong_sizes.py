r"""zeros() sizes that contradict the annotation."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    z: Tensor[NoTape, L[2], L[3]] = sg.zeros(3, 2)  # E
