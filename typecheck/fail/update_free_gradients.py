r"""Free-standing Gradients given to an optimizer.

runtime: free-standing"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


class A(Module):
    def __init__(self) -> None:
        self.w = Linear[L[2], L[1]]()


def main() -> None:
    a = A()
    opt = sg.optim.Adam(a)
    opt.update(a, sg.Gradients())  # E
