r"""backward() on a traced tensor that is not rank 0.

runtime: rank-0"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


def main() -> None:
    grads = sg.Gradients()
    x = sg.ones(3).trace(grads)
    (x * 2.0).backward()  # E: backward() without a seed starts from a rank-0 tensor (a loss)
