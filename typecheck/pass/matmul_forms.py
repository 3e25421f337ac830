"""Matmul of 1-D, 2-D and batched operands, as operator and as function."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


def main(
    m: Tensor[NoTape, L[3], L[4]],
    n: Tensor[NoTape, L[4], L[5]],
    v: Tensor[NoTape, L[4]],
    batch: Tensor[NoTape, L[2], L[3], L[4]],
    batch2: Tensor[NoTape, L[2], L[4], L[5]],
) -> None:
    mm: Tensor[NoTape, L[3], L[5]] = m @ n
    mv: Tensor[NoTape, L[3]] = m @ v
    vm: Tensor[NoTape, L[5]] = v @ n
    vv: Tensor[NoTape] = sg.matmul(v, v)
    bm: Tensor[NoTape, L[2], L[3], L[5]] = batch @ n
    bb: Tensor[NoTape, L[2], L[3], L[5]] = sg.matmul(batch, batch2)
    print(mm, mv, vm, vv, bm, bb)
