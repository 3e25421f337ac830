"""Same-shape, bias-style, keepdims-style and scalar broadcasting keep exact types."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


def main(x: Tensor[NoTape, Batch, L[10]], bias: Tensor[NoTape, L[10]]) -> None:
    same: Tensor[NoTape, Batch, L[10]] = x + x
    biased: Tensor[NoTape, Batch, L[10]] = x + bias
    scaled: Tensor[NoTape, Batch, L[10]] = 2.0 * x - 1.0
    centred: Tensor[NoTape, Batch, L[10]] = x - x.max(axis=-1, keepdims=True)
    normalized: Tensor[NoTape, Batch, L[10]] = x / x.sum(axis=-1, keepdims=True)
    by_scalar: Tensor[NoTape, Batch, L[10]] = x * x.mean()
    print(same, biased, scaled, centred, normalized, by_scalar)
