"""PyTorch's spellings that shapegrad spells otherwise are unknown attributes to the checker, as
they are at run time (where the AttributeError names shapegrad's spelling:
tests/test_torch_names.py): the hidden run-time names must not make them known."""

from typing import Literal as L

import numpy as np

import shapegrad as sg
from shapegrad import NoTape, Tensor


def main() -> None:
    x: Tensor[NoTape, L[2], L[3]] = sg.zeros(2, 3)
    ids = sg.tensor(np.zeros((2, 1), dtype=np.int64))
    x.view(6)  # E: Cannot access attribute "view"
    x.unsqueeze(0)  # E: Cannot access attribute "unsqueeze"
    x.contiguous()  # E: Cannot access attribute "contiguous"
    x.float()  # E: Cannot access attribute "float"
    x.add_(1.0)  # E: Cannot access attribute "add_"
    x.relu_()  # E: Cannot access attribute "relu_"
    x.gather(1, ids)  # E: No overloads for "gather"
    sg.cat([x, x])  # E: "cat" is not a known attribute of module
    sg.float32  # E: "float32" is not a known attribute of module
