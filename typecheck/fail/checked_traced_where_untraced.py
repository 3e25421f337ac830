r"""A traced tensor where an untraced one is annotated.

runtime: untraced Tensor \(NoTape\)"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


@sg.checked
def stats(x: Tensor[NoTape, Batch]) -> Tensor[NoTape]:
    return x.mean()


def main() -> None:
    x = sg.zeros(Batch(3)).trace(sg.Gradients())
    stats(x)  # E
