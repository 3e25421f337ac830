"""``sg.concat`` and ``sg.stack`` of a list of open-rank tensors (a reshape to ints, then
element-wise ops) at a literal axis: the result is open, stated with ``sg.cast``."""

from typing import Any, Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


def features(length: int) -> Tensor[NoTape, Any, L[16]]:
    steps = sg.linspace(0.0, 1.0, length).reshape(length, 1)
    angles = steps * sg.tensor([float(i) for i in range(8)])
    joined = sg.concat([sg.sin(angles), sg.cos(angles)], axis=-1)
    first = sg.concat([angles, angles], axis=0)
    stacked = sg.stack([angles, angles], axis=1)
    print(first.shape, stacked.shape)
    return sg.cast(joined, Tensor[NoTape, Any, L[16]])


def main() -> None:
    print(features(4).shape)
