r"""An untraced tensor where a traced one is annotated.

runtime: traced Tensor \(OwnedTape\)"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


@sg.checked
def loss_of(x: Tensor[OwnedTape[None], Batch]) -> Tensor[OwnedTape[None]]:
    return x.sum()


def main() -> None:
    x: Tensor[NoTape, Batch] = sg.zeros(Batch(3))
    loss_of(x)  # E
