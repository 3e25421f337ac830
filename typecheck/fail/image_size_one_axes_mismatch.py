r"""Size-1 axes for images that do not fit: a time embedding of 32 features over 16
channels, one put channels-last against a channels-first map (16 channels of 8×8: NumPy
broadcasts (2, 1, 1, 16) against (2, 16, 8, 8) only where the sizes happen to agree), and a
schedule of 7 values over a batch. They were an open rank, which pyright let through.

runtime: mul"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


def main() -> None:
    h: Tensor[NoTape, Batch, L[16], L[8], L[8]] = sg.randn(Batch(2), 16, 8, 8)
    wide: Tensor[NoTape, Batch, L[32]] = sg.randn(Batch(2), 32)
    emb: Tensor[NoTape, Batch, L[16]] = sg.randn(Batch(2), 16)
    a = sg.rand(7)
    h * a[:, None, None, None]  # E
    h + emb[:, None, None, :]  # E
    h + wide[:, :, None, None]  # E


if __name__ == "__main__":
    main()
