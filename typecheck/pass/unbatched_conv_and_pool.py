"""Convolutions and poolings called on one unbatched image or sequence, as PyTorch takes them:
``(C, H, W)`` gives ``(O, H', W')`` and ``(C, L)`` gives ``(O, L')``, typed like the batched
call without its batch axis (``MaxPool2d(2)`` still halves the typed height and width)."""

from typing import Literal as L, assert_type

import shapegrad as sg
from shapegrad import Half, NoTape, Open, Tensor, nn


def main(n_out: int = 8) -> None:
    image: Tensor[NoTape, L[3], L[8], L[8]] = sg.randn(3, 8, 8)
    signal: Tensor[NoTape, L[3], L[12]] = sg.randn(3, 12)

    assert_type(nn.Conv2d[L[3], L[8]](3, padding=1)(image), Tensor[NoTape, L[8], Open, Open])
    assert_type(nn.Conv2d(3, in_channels=3, out_channels=n_out)(image), Tensor[NoTape, Open, Open, Open])
    assert_type(nn.SameConv2d[L[3], L[8]](3)(image), Tensor[NoTape, L[8], L[8], L[8]])
    assert_type(nn.Conv1d[L[3], L[8]](3)(signal), Tensor[NoTape, L[8], Open])
    assert_type(nn.Conv1d(3, in_channels=3, out_channels=n_out)(signal), Tensor[NoTape, Open, Open])
    assert_type(nn.MaxPool2d(2)(image), Tensor[NoTape, L[3], Half[L[8]], Half[L[8]]])
    assert_type(nn.MaxPool2d(3, 2, 1)(image), Tensor[NoTape, L[3], Open, Open])
    assert_type(nn.AvgPool2d(2)(image), Tensor[NoTape, L[3], Half[L[8]], Half[L[8]]])


main()
