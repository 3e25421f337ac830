"""A literal slice stop is a size: the wrong one is a static error."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


def film(cond: Tensor[NoTape, Batch, L[128]]) -> None:
    gamma: Tensor[NoTape, Batch, L[32]] = cond[:, :64]  # E: Literal[64]
    last: Tensor[NoTape, L[2], L[128]] = cond[-1:]  # E
    print(gamma, last)
