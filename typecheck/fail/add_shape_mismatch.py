r"""Element-wise add of tensors with different last dims.

runtime: do not broadcast.*axis -1 is 10 vs 11"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    a: Tensor[NoTape, Batch, L[10]] = sg.zeros(Batch(2), 10)
    b: Tensor[NoTape, Batch, L[11]] = sg.zeros(Batch(2), 11)
    a + b  # E: Operator "+" not supported
