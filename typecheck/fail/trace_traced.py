r"""trace() on a tensor that is already traced.

runtime: already traced"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    grads = sg.Gradients()
    x = sg.ones(3).trace(grads)
    x.trace(grads)  # E: Cannot access attribute "trace"
