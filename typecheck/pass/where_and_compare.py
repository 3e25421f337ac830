"""Comparisons give untraced masks; where keeps the traced side's tape."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor


def main(x: Tensor[OwnedTape[None], L[3]], y: Tensor[NoTape, L[3]]) -> None:
    mask: Tensor[NoTape, L[3]] = x > 0.0
    picked: Tensor[OwnedTape[None], L[3]] = sg.where(mask, x, y)
    clipped: Tensor[OwnedTape[None], L[3]] = sg.where(x > y, x, 0.0)
    print(picked, clipped)
