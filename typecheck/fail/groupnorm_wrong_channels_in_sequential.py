r"""GroupNorm of other channels than the convolution before it gives (a diffusion U-Net's
norm after a change of width).

runtime: GroupNorm\(8, 32\) expects input \(batch, 32"""

from typing import Literal as L

import shapegrad as sg
from shapegrad.nn import Conv2d, GroupNorm, SiLU, Sequential


def main() -> None:
    model = Sequential(Conv2d[L[3], L[16]](3, padding=1), GroupNorm[L[32]](8), SiLU())  # E
    model(sg.zeros(2, 3, 8, 8))
