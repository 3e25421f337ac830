r"""A reshape's open dim passed on as if it were 784 wide.

runtime: 784|inner dims differ"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def main() -> None:
    img: Tensor[NoTape, Batch, L[14], L[28]] = sg.zeros(Batch(2), 14, 28)
    head = sg.nn.Linear[L[784], L[10]]()
    flat = img.reshape(2, -1)  # 392 wide, not 784
    head(flat)  # E
