r"""sg.backward of a non-scalar output without seeds.

runtime: rank-0"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


class Model: ...


def main() -> None:
    grads = sg.Gradients()
    x: Tensor[OwnedTape[None], Batch] = sg.ones(Batch(3)).trace(grads)
    loss = (x * x).sum()
    sg.backward(loss, x * 2)  # E: sg.backward() without seeds starts from rank-0 outputs
