r"""PyTorch's ``dim=`` where shapegrad takes ``axis=``: pyright reports the keyword (no
overload has it; a signature-typed op such as ``softmax`` types it ``Never``), and at run
time a KeywordError names ``axis=``.

runtime: shapegrad spells PyTorch's dim= as axis="""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


def main() -> None:
    x: Tensor[NoTape, L[2], L[3]] = sg.zeros(2, 3)
    x.sum(dim=1)  # E
    sg.softmax(x, dim=-1)  # E
    sg.concat([x, x], dim=0)  # E
