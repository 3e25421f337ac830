r"""``//`` and ``%`` of shapes that do not broadcast (as the other arithmetic refuses them),
and a result annotated with the wrong shape.

runtime: \(3, 4\) and \(3, 5\)"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


def main() -> None:
    ids: Tensor[NoTape, L[3], L[4]] = sg.zeros(3, 4, dtype="int64")
    cols: Tensor[NoTape, L[3], L[5]] = sg.ones(3, 5, dtype="int64")
    rows: Tensor[NoTape, L[4], L[3]] = ids // 4  # E
    print(rows, ids % 4)
    ids % cols  # E: Operator "%" not supported
    sg.floor_divide(ids, cols)  # E
    ids // cols  # E: Operator "//" not supported
