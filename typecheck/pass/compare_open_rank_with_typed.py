"""A comparison between an open-rank tensor and a typed one is an element-wise mask (a
tensor), on either side and for ``==`` as for ``<``; not Python's ``bool``."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


def main(scores: Tensor[NoTape, Batch, L[4]]) -> None:
    reshaped = sg.arange(8).reshape(-1, 4).astype("float32")  # open rank: a computed size (-1)
    same = reshaped == scores
    differs = scores != reshaped
    below = reshaped < scores
    share = (same.astype("float32").mean() + differs.astype("float32").sum()).item()
    print(share, below.astype("float32").max().item())
