r"""A padding mask over the wrong axis: ``(B, 1, S)`` where the values are ``(B, S, D)``. The
message names the mask and the branch (``MaskedBy[<mask>, <branch>]``).

runtime: do not broadcast"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def main() -> None:
    x: Tensor[NoTape, Batch, Seq, L[8]] = sg.randn(Batch(2), Seq(5), 8)
    keep: Tensor[NoTape, Batch, Seq] = sg.randn(Batch(2), Seq(5)) > 0
    sg.where(keep[:, None, :], x, 0.0)  # E: MaskedBy[Tensor[NoTape, Batch, Literal[1], Seq]
