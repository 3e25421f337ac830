r"""tril, flip and cumsum keep their input's dims: a causal mask of (Seq, Seq) is not (Seq, 8).

runtime: (?s)return.*Seq 8"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Seq(sg.Dim): ...


@sg.checked
def causal(scores: Tensor[NoTape, Seq, Seq]) -> Tensor[NoTape, Seq, L[8]]:
    return sg.cumsum(sg.flip(sg.tril(scores), 0), 0)  # E


def main() -> None:
    causal(sg.zeros(Seq(5), Seq(5)))
