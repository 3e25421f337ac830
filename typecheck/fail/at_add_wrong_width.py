r"""A scatter-add of messages of the wrong width into a node table (attack 15, M5): the value's
last axis is checked against the table's.

runtime: shape"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Nodes(sg.Dim): ...


class Edges(sg.Dim): ...


def main() -> None:
    messages: Tensor[NoTape, Edges, L[16]] = sg.randn(Edges(4), 16)
    dst = sg.cast(sg.tensor([1, 2, 3, 0]), Tensor[NoTape, Edges])
    sg.zeros(Nodes(5), 16).at[dst].add(messages[:, :3])  # E
