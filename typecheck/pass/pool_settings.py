"""PyTorch's pooling settings: ``ceil_mode=True`` rounds the size up, which ``Half[H]``
(rounded down) cannot say, so the height and width are ``sg.Open``; ``count_include_pad``
and ``divisor_override`` change the values only, so ``AvgPool2d(2)`` still halves."""

from typing import Literal as L, assert_type

import shapegrad as sg
from shapegrad import Half, NoTape, Open, Tensor, nn


def main(ceil: bool = True) -> None:
    images: Tensor[NoTape, L[2], L[3], L[7], L[7]] = sg.randn(2, 3, 7, 7)
    image: Tensor[NoTape, L[3], L[7], L[7]] = sg.randn(3, 7, 7)

    assert_type(nn.MaxPool2d(2, ceil_mode=True)(images), Tensor[NoTape, L[2], L[3], Open, Open])
    assert_type(nn.MaxPool2d(2, ceil_mode=ceil)(image), Tensor[NoTape, L[3], Open, Open])
    assert_type(nn.MaxPool2d(2, ceil_mode=False)(images), Tensor[NoTape, L[2], L[3], Half[L[7]], Half[L[7]]])
    assert_type(nn.MaxPool2d(3, 2, 1, ceil_mode=True)(images), Tensor[NoTape, L[2], L[3], Open, Open])
    assert_type(nn.AvgPool2d(2, ceil_mode=True)(images), Tensor[NoTape, L[2], L[3], Open, Open])
    assert_type(nn.AvgPool2d(3, 2, 1, True, False)(image), Tensor[NoTape, L[3], Open, Open])
    assert_type(
        nn.AvgPool2d(2, count_include_pad=False)(images), Tensor[NoTape, L[2], L[3], Half[L[7]], Half[L[7]]]
    )
    assert_type(nn.AvgPool2d(2, divisor_override=3)(image), Tensor[NoTape, L[3], Half[L[7]], Half[L[7]]])
    pool: nn.MaxPool2d = nn.MaxPool2d(2, ceil_mode=True)
    print(pool(images).shape)


main()
