r"""sg.layer_norm with a gain of another width than the features.

runtime: layer_norm: weight of shape \(16,\)"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


def main() -> None:
    h: Tensor[NoTape, Batch, L[32]] = sg.zeros(Batch(2), 32)
    gain: Tensor[NoTape, L[16]] = sg.ones(16)
    shift: Tensor[NoTape, L[16]] = sg.zeros(16)
    sg.layer_norm(h, gain, shift)  # E
