r"""BatchNorm2d of other channels than the convolution before it gives.

runtime: BatchNorm2d"""

from typing import Literal as L

import shapegrad as sg
from shapegrad.nn import BatchNorm2d, Conv2d, ReLU, Sequential


def main() -> None:
    model = Sequential(Conv2d[L[3], L[16]](3, padding=1), BatchNorm2d[L[32]](), ReLU())  # E
    model(sg.zeros(2, 3, 8, 8))
