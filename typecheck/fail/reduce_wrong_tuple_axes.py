r"""Global pooling over the wrong axes.

runtime: Batch 16|16"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


@sg.checked
def gap(fmap: Tensor[NoTape, Batch, L[16], L[8], L[8]]) -> Tensor[NoTape, Batch, L[16]]:
    return fmap.mean((1, 2))  # E


def main() -> None:
    gap(sg.zeros(Batch(2), 16, 8, 8))
