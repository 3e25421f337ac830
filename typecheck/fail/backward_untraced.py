r"""backward() on a tensor that was never traced.

runtime: untraced|not traced|traced"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    x: Tensor[NoTape, L[3]] = sg.ones(3)
    x.sum().backward()  # E: backward() of an untraced tensor
