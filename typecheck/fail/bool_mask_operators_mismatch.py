r"""Masks of shapes that do not broadcast, combined with ``&``, ``|`` and ``^`` (as the
comparisons refuse them).

runtime: do not broadcast"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def main() -> None:
    causal: Tensor[NoTape, Seq, Seq] = sg.tril(sg.ones(Seq(3), Seq(3), dtype="bool"))
    pad: Tensor[NoTape, Batch, L[5]] = sg.ones(Batch(2), 5, dtype="bool")
    wrong: Tensor[NoTape, Seq, Seq] = ~pad  # E
    causal | pad  # E: Operator "|" not supported
    pad ^ causal  # E: Operator "^" not supported
    causal & pad  # E: Operator "&" not supported
    print(wrong)
