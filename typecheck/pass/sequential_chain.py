"""Sequential chains whose sizes agree, and their typed call."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad.nn import GELU, Dropout, LayerNorm, Linear, ReLU, Residual, Sequential


class Batch(sg.Dim): ...


def main(x: Tensor[NoTape, Batch, L[784]]) -> None:
    model = Sequential(
        Linear[L[784], L[256]](),
        ReLU(),
        Linear[L[256], L[128]](),
        LayerNorm[L[128]](),
        Residual(Linear[L[128], L[128]]()),
        GELU(),
        Dropout(0.1),
        Linear[L[128], L[10]](),
    )
    out: Tensor[NoTape, Batch, L[10]] = model(x)
    typed: Sequential[L[784], L[10]] = model
    print(out, typed)
