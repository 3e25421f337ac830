r"""Plain ints where the type arguments are sg.Dim sizes.

runtime: is not a Hidden size"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


class Hidden(sg.Dim): ...


class Out(sg.Dim): ...


def main() -> None:
    sg.nn.Linear[Hidden, Out](64, 32)  # E
