"""LayerNorm written as PyTorch's: ``normalized_shape`` as a tuple or a list of the trailing
axes, and ``bias=False``. The call keeps the input's type; the run time checks the axes
against the normalized shape, and a type argument states the last of them."""

from typing import Literal as L, assert_type

import shapegrad as sg
from shapegrad import NoTape, Tensor, nn


class Batch(sg.Dim): ...


def main(channels: int = 3, d: int = 16) -> None:
    img: Tensor[NoTape, Batch, L[3], L[8], L[8]] = sg.randn(Batch(2), 3, 8, 8)
    seq: Tensor[NoTape, Batch, L[16]] = sg.randn(Batch(2), 16)

    assert_type(nn.LayerNorm((channels, 8, 8))(img), Tensor[NoTape, Batch, L[3], L[8], L[8]])
    assert_type(nn.LayerNorm([d])(seq), Tensor[NoTape, Batch, L[16]])
    assert_type(nn.LayerNorm(d, bias=False)(seq), Tensor[NoTape, Batch, L[16]])
    assert_type(nn.LayerNorm[L[16]](bias=False)(seq), Tensor[NoTape, Batch, L[16]])
    assert_type(nn.LayerNorm[L[8]]((3, 8, 8), elementwise_affine=False)(img), Tensor[NoTape, Batch, L[3], L[8], L[8]])


main()
