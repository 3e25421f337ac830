"""``sg.nn.max_pool2d`` typed as its module form ``MaxPool2d`` (attack 16): a literal 2 (with no
padding, dilation or ``ceil_mode``) halves the height and width (``Half[H]``, rounded down),
batched or one image, with or without ``return_indices``; other windows give ``Open``. It
returned ``Open`` for every call, so a layer typed on the halved size refused it.
``max_unpool2d`` and ``layer_norm`` already type as their modules do."""

from typing import Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import Half, NoTape, Open, Tensor, nn

T = TypeVar("T")


class Batch(sg.Dim): ...


def pooled(x: Tensor[T, Batch, L[3], L[32], L[32]], image: Tensor[T, L[3], L[7], L[8]]) -> None:
    assert_type(nn.max_pool2d(x, 2), Tensor[T, Batch, L[3], Half[L[32]], Half[L[32]]])
    assert_type(nn.max_pool2d(image, 2, 2), Tensor[T, L[3], Half[L[7]], Half[L[8]]])
    values, indices = nn.max_pool2d(x, 2, return_indices=True)
    assert_type(values, Tensor[T, Batch, L[3], Half[L[32]], Half[L[32]]])
    assert_type(indices, Tensor[NoTape, Batch, L[3], Half[L[32]], Half[L[32]]])
    assert_type(nn.max_pool2d(x, 3), Tensor[T, Batch, L[3], Open, Open])
    assert_type(nn.max_pool2d(x, 2, ceil_mode=True), Tensor[T, Batch, L[3], Open, Open])
    assert_type(nn.max_unpool2d(values, indices, 2), Tensor[T, Batch, L[3], Open, Open])


def halved(x: Tensor[T, Batch, L[3], L[32], L[32]]) -> Tensor[T, Batch, L[3], L[16], L[16]]:
    return sg.cast(nn.max_pool2d(x, 2), Tensor[T, Batch, L[3], L[16], L[16]])


def main() -> None:
    x: Tensor[NoTape, Batch, L[3], L[32], L[32]] = sg.randn(Batch(2), 3, 32, 32)
    image: Tensor[NoTape, L[3], L[7], L[8]] = sg.randn(3, 7, 8)
    pooled(x, image)
    assert halved(x).shape == (2, 3, 16, 16)
    assert nn.max_pool2d(image, 2).shape == (3, 3, 4)


if __name__ == "__main__":
    main()
