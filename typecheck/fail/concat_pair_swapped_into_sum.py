r"""A pair joined in the other order than the next layer's Sum says (the features would be
read in the wrong order: the sizes alone cannot tell, so the run time accepts it)."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Sum, Tensor
from shapegrad.nn import Linear


class Batch(sg.Dim): ...


def main() -> None:
    text: Tensor[NoTape, Batch, L[64]] = sg.zeros(Batch(2), 64)
    image: Tensor[NoTape, Batch, L[32]] = sg.zeros(Batch(2), 32)
    head = Linear[Sum[L[32], L[64]], L[10]]()
    head(sg.concat((text, image), axis=-1))  # E: Sum[Literal[64], Literal[32]]
