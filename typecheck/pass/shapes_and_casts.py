"""Shape ops: typed where Python can say the size, a checked cast where it cannot."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


def main(x: Tensor[NoTape, Batch, L[3], L[4]], m: Tensor[NoTape, L[3], L[4]]) -> None:
    t: Tensor[NoTape, L[4], L[3]] = m.transpose()
    swapped: Tensor[NoTape, Batch, L[4], L[3]] = x.mT
    front: Tensor[NoTape, L[1], L[3], L[4]] = m.expand_dims(0)
    back: Tensor[NoTape, L[3], L[4], L[1]] = m.expand_dims(-1)
    squeezed: Tensor[NoTape, L[3], L[4]] = front.squeeze(0)
    flat = sg.cast(x.reshape(-1, 12), Tensor[NoTape, Batch, L[12]])
    joined = sg.cast(sg.concat([m, m], axis=0), Tensor[NoTape, L[6], L[4]])
    print(t, swapped, back, squeezed, flat, joined)
