r"""PyTorch's ``dim=`` where shapegrad takes ``axis=``: pyright reports the keyword (no
overload has it; a signature-typed op such as ``softmax`` types it ``Never``), and at run
time a KeywordError names ``axis=``; also for the ops whose axis has no default (``cumsum``,
``flip``, ``roll``, ``narrow``, ``unflatten``, ``expand_dims``), which gave Python's
missing-argument ``TypeError`` at run time.

runtime: shapegrad spells PyTorch's dim= as axis="""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


def main() -> None:
    x: Tensor[NoTape, L[2], L[3]] = sg.zeros(2, 3)
    x.sum(dim=1)  # E
    sg.softmax(x, dim=-1)  # E
    sg.concat([x, x], dim=0)  # E
    sg.cumsum(x, dim=1)  # E
    x.cumprod(dim=1)  # E
    x.flip(dim=0)  # E
    sg.roll(x, 1, dim=1)  # E
    x.narrow(dim=1, start=0, length=2)  # E
    sg.unflatten(x, dim=1, sizes=(3, 1))  # E
    x.expand_dims(dim=0)  # E
    sg.cumsum(x)  # E
