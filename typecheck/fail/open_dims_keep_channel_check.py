r"""A residual whose channels differ: the convolution's height and width are open, but its 8
channels against the shortcut's 4 are still a static error (open dims flow only where they
are open).

runtime: add"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor, nn


class Batch(sg.Dim): ...


def main() -> None:
    x: Tensor[NoTape, Batch, L[4], L[16], L[16]] = sg.randn(Batch(2), 4, 16, 16)
    conv = nn.Conv2d[L[4], L[8]](3, padding=1)
    conv(x) + x  # E


if __name__ == "__main__":
    main()
