r"""BatchNorm1d of other channels than the Conv1d before it gives, and a Linear straight after
a Conv1d and its BatchNorm1d (no Flatten): BatchNorm1d keeps the kind it is given.

runtime: expects input \(batch, 8, \.\.\.\), found shape \(2, 16, 10\)"""

from typing import Literal as L

import shapegrad as sg
from shapegrad.nn import BatchNorm1d, Conv1d, Linear, ReLU, Sequential


def main() -> None:
    model = Sequential(Conv1d[L[4], L[16]](3), BatchNorm1d[L[8]]())  # E: "Chan[Literal[8]]" is not the same as "Chan[Literal[16]]"
    after_relu = Sequential(Conv1d[L[4], L[16]](3), ReLU(), BatchNorm1d[L[8]]())  # E: Chan[Literal[16]]
    no_flatten = Sequential(Conv1d[L[4], L[16]](3), BatchNorm1d[L[16]](), Linear[L[16], L[2]]())  # E: Linear[Literal[16], Literal[2]]
    print(after_relu, no_flatten)
    model(sg.zeros(2, 4, 12))
