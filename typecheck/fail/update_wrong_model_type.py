r"""An optimizer for one model type updating another.

runtime: built for another model"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


class A(Module):
    def __init__(self) -> None:
        self.w = Linear[L[2], L[1]]()


class B(Module):
    def __init__(self) -> None:
        self.w = Linear[L[2], L[1]]()


def main() -> None:
    a, b = A(), B()
    opt = sg.optim.Adam(a)
    opt.update(b, b.alloc_grads())  # E
