"""sg.pad keeps the rank, and the dim of an axis padded by a literal (0, 0): fast_neural_style's
ConvLayer (a reflection pad of height and width, then a convolution) checks with no cast."""

from typing import Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor, nn

T = TypeVar("T")


class Batch(sg.Dim): ...


class ConvLayer(nn.Module):
    def __init__(self, kernel_size: int, stride: int) -> None:
        self.pad = kernel_size // 2
        self.conv2d = nn.Conv2d[L[3], L[8]](kernel_size, stride)

    def __call__(self, x: Tensor[T, Batch, L[3], Open, Open]) -> Tensor[T, Batch, L[8], Open, Open]:
        p = self.pad
        return self.conv2d(sg.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), mode="reflect"))


def main() -> None:
    images: Tensor[NoTape, Batch, L[3], L[16], L[16]] = sg.randn(Batch(2), 3, 16, 16)
    assert_type(sg.pad(images, ((0, 0), (0, 0), (1, 1), (1, 1))), Tensor[NoTape, Batch, L[3], Open, Open])
    assert_type(sg.pad(images, ((0, 0), (1, 1), (1, 1), (1, 1))), Tensor[NoTape, Open, Open, Open, Open])
    assert_type(sg.pad(images, (1, 1)), Tensor[NoTape, Open, Open, Open, Open])
    signal: Tensor[NoTape, Batch, L[4], L[10]] = sg.randn(Batch(2), 4, 10)
    assert_type(sg.pad(signal, ((0, 0), (0, 0), (2, 0))), Tensor[NoTape, Batch, L[4], Open])
    rows: Tensor[NoTape, Batch, L[10]] = sg.randn(Batch(2), 10)
    assert_type(sg.pad(rows, ((0, 0), (3, 3)), mode="replicate"), Tensor[NoTape, Batch, Open])
    vector: Tensor[NoTape, L[5]] = sg.randn(5)
    assert_type(sg.pad(vector, (1, 2)), Tensor[NoTape, Open])
    out = ConvLayer(3, 1)(sg.cast(images, Tensor[NoTape, Batch, L[3], Open, Open]))
    assert out.shape == (2, 8, 16, 16)


if __name__ == "__main__":
    main()
