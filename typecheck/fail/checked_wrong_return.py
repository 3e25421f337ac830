r"""A checked function whose body returns the wrong dims.

runtime: (?s)return.*Batch 4"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


@sg.checked
def head(x: Tensor[NoTape, Batch, L[3]]) -> Tensor[NoTape, Batch, L[4]]:
    return x  # E


def main() -> None:
    head(sg.zeros(Batch(2), 3))
