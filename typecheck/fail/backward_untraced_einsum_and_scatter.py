r"""einsum and ``.at[...].add`` keep their operands' tapes: of untraced operands, backward() is
still the untraced error.

runtime: untraced|not traced|traced"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


def main() -> None:
    x: Tensor[NoTape, L[4], L[3]] = sg.ones(4, 3)
    sg.zeros(2, 3).at[sg.tensor([0, 1, 1, 0])].add(x).sum().backward()  # E: backward() of an untraced tensor
    sg.einsum("ij,ij->", x, x).backward()  # E: backward() of an untraced tensor
