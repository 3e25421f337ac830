r"""A LayerNorm of one size fed another.

runtime: layer_norm: weight of shape \(10,\) for input \(2, 12\); expected \(12,\)"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    norm = sg.nn.LayerNorm[L[10]]()
    x: Tensor[NoTape, Batch, L[12]] = sg.zeros(Batch(2), 12)
    norm(x)  # E
