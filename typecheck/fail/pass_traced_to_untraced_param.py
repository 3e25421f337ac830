r"""A traced tensor passed where the function wants an untraced one."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def describe(x: Tensor[NoTape, L[3]]) -> float:
    return x.sum().item()


def main() -> None:
    traced = sg.zeros(3).trace(sg.Gradients())
    describe(traced)  # E
