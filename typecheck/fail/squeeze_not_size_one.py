r"""squeeze(-1) of an axis of size 8.

runtime: axis -1 of shape \(2, 8\) is expected to have size 1"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def main() -> None:
    x: Tensor[NoTape, Batch, L[8]] = sg.zeros(Batch(2), 8)
    x.squeeze(-1)  # E
