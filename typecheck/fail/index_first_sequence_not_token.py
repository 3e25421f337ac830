r"""x[0] is the first sequence, not the first token (x[:, 0]).

runtime: Batch 64|64"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


@sg.checked
def cls_token(h: Tensor[NoTape, Batch, Seq, L[64]]) -> Tensor[NoTape, Batch, L[64]]:
    return h[0]  # E


def main() -> None:
    cls_token(sg.zeros(Batch(2), Seq(3), 64))
