r"""An MLP whose __call__ returns the wrong dims.

runtime: (?s)return.*Batch 2"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


class MLP(Module):
    def __init__(self) -> None:
        self.hidden = Linear[L[4], L[8]]()

    def __call__(self, x: Tensor[T, Batch, L[4]]) -> Tensor[T, Batch, L[2]]:
        return self.hidden(x)  # E


def main() -> None:
    MLP()(sg.zeros(Batch(3), 4))
