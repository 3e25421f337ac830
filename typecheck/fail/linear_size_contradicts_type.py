r"""A size argument that contradicts the type argument.

runtime: in_features=783 contradicts the type.s 784"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def main() -> None:
    sg.nn.Linear[L[784], L[10]](783, 10)  # E
