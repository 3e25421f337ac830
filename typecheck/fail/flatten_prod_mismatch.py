r"""A flattened 28x28 image into a head for 16x7x7 feature maps.

runtime: inner dims differ|784"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


from shapegrad import Prod


def main() -> None:
    img: Tensor[NoTape, Batch, L[1], L[28], L[28]] = sg.zeros(Batch(2), 1, 28, 28)
    head = sg.nn.Linear[Prod[L[16], L[7], L[7]], L[10]]()
    head(img[:, :, :14].flatten())  # E
