r"""issue #23: the expression inside sg.cast is checked as if it stood alone (a mismatched
function-form op inside a cast is still reported)."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


class Tgt(sg.Dim): ...


def main(
    bos: Tensor[NoTape, Batch, L[1]],
    tgt: Tensor[NoTape, Batch, Tgt],
    a: Tensor[NoTape, Batch, L[8], L[4]],
    b: Tensor[NoTape, Batch, L[8], L[5]],
) -> None:
    print(sg.cast(sg.concat([bos, tgt[:-1]], axis=1), Tensor[NoTape, Batch, Tgt]))  # E
    print(sg.cast(sg.add(a, b), Tensor[NoTape, Batch, L[8], L[4]]))  # E: No overloads for "add"
    print(sg.cast(sg.where(a > 0, a, b), Tensor[NoTape, Batch, L[8], L[4]]))  # E
    print(sg.cast(3, Tensor[NoTape, Batch]))  # E
