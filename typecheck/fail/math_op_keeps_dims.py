r"""An element-wise math op keeps its input's dims: sin of (Batch, 8) is not (Batch, 9).

runtime: (?s)return.*Batch 9"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


@sg.checked
def features(x: Tensor[NoTape, Batch, L[8]]) -> Tensor[NoTape, Batch, L[9]]:
    return sg.sin(x)  # E


def main() -> None:
    features(sg.zeros(Batch(2), 8))
