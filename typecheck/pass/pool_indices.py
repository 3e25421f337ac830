"""PyTorch's ``MaxPool2d(..., return_indices=True)`` and ``F.max_pool2d(...,
return_indices=True)`` return ``(values, indices)``: a literal ``True`` types the call as that
pair (the indices untraced), ``MaxPool2d(2, return_indices=True)`` still halving both; a
dilation gives ``sg.Open``. ``MaxUnpool2d`` takes the pair back."""

from typing import Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import Half, NoTape, Open, Tensor, nn

T = TypeVar("T")


def encode(x: Tensor[T, L[2], L[3], L[8], L[8]]) -> Tensor[T, L[2], L[3], Open, Open]:
    values, indices = nn.MaxPool2d(2, return_indices=True)(x)
    assert_type(values, Tensor[T, L[2], L[3], Half[L[8]], Half[L[8]]])
    assert_type(indices, Tensor[NoTape, L[2], L[3], Half[L[8]], Half[L[8]]])
    return nn.MaxUnpool2d(2)(values, indices)


def main() -> None:
    images: Tensor[NoTape, L[2], L[3], L[9], L[9]] = sg.randn(2, 3, 9, 9)
    image: Tensor[NoTape, L[3], L[9], L[9]] = sg.randn(3, 9, 9)

    pair = nn.MaxPool2d(3, 2, 1, 2, return_indices=True)(images)
    assert_type(pair, tuple[Tensor[NoTape, L[2], L[3], Open, Open], Tensor[NoTape, L[2], L[3], Open, Open]])
    assert_type(nn.MaxPool2d(3, dilation=2)(image), Tensor[NoTape, L[3], Open, Open])
    assert_type(nn.MaxPool2d(2)(images), Tensor[NoTape, L[2], L[3], Half[L[9]], Half[L[9]]])
    values, indices = nn.max_pool2d(image, 2, return_indices=True)  # as MaxPool2d(2, ...): halved
    assert_type(values, Tensor[NoTape, L[3], Half[L[9]], Half[L[9]]])
    assert_type(indices, Tensor[NoTape, L[3], Half[L[9]], Half[L[9]]])
    assert_type(nn.max_pool2d(images, 3, 1, 1, 2), Tensor[NoTape, L[2], L[3], Open, Open])
    assert_type(nn.max_unpool2d(values, indices, 2, output_size=(9, 9)), Tensor[NoTape, L[3], Open, Open])

    grads = sg.Gradients()
    x: Tensor[NoTape, L[2], L[3], L[8], L[8]] = sg.randn(2, 3, 8, 8)
    print(encode(x.trace(grads)).shape)


main()
