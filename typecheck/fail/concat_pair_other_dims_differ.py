r"""A tuple pair whose batch sizes differ, joined along the features.

runtime: concat"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


def main() -> None:
    a: Tensor[NoTape, Batch, L[64]] = sg.zeros(Batch(2), 64)
    b: Tensor[NoTape, L[5], L[32]] = sg.zeros(5, 32)
    sg.concat((a, b), axis=-1)  # E
