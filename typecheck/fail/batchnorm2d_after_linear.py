r"""BatchNorm2d (channels of an image) after a Linear (features) in a Sequential.

runtime: BatchNorm2d"""

from typing import Literal as L

import shapegrad as sg
from shapegrad.nn import BatchNorm2d, Linear, Sequential


def main() -> None:
    model = Sequential(Linear[L[4], L[8]](), BatchNorm2d[L[8]]())  # E: Chan[Literal[8]]
    model(sg.zeros(2, 4))
