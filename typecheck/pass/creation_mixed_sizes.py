"""Creation with some sizes known and some not, as PyTorch code writes it (issue #23 §1): each
size is typed by itself. A literal keeps its literal and a ``sg.Dim`` its class beside an int
variable, which is ``Open``, so ``sg.randn(batch, 3, 32, 32)`` still says it has 3 channels of
32×32; under an annotation the int takes the annotated dim."""

from typing import Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor
from shapegrad.nn import Conv2d, Linear

T = TypeVar("T")


class Batch(sg.Dim): ...


def images(batch: int) -> None:
    x = sg.randn(batch, 3, 32, 32)
    assert_type(x, Tensor[NoTape, Open, L[3], L[32], L[32]])
    conv = Conv2d[L[3], L[8]](kernel_size=3, padding=1)
    y = conv(x)  # the channels are checked though the batch is not known
    assert_type(y, Tensor[NoTape, Open, L[8], Open, Open])
    noise = sg.rand((batch, 1, 32, 32))  # a tuple, as torch.rand((b, 1, 32, 32))
    assert_type(noise, Tensor[NoTape, Open, L[1], L[32], L[32]])
    print((x + noise).shape, y.shape)


def initial_state(x: Tensor[T, Batch, L[16]], n_layers: int) -> None:
    # sizes read from a typed tensor keep their dims; a layer count from Python is Open
    h = sg.zeros(n_layers, x.shape[0], 64)
    assert_type(h, Tensor[NoTape, Open, Batch, L[64]])
    c = sg.zeros(x.shape[0], 64)
    assert_type(c, Tensor[NoTape, Batch, L[64]])
    cell = Linear[L[64], L[64]]()
    print((cell(c) + c).shape, h.shape)


def stated(batch: int, hidden: int) -> None:
    # an annotation states the int sizes; the literal ones are still checked against it
    h: Tensor[NoTape, Batch, L[64]] = sg.zeros(batch, 64)
    w: Tensor[NoTape, L[128], L[64]] = sg.randn(hidden, 64)
    w = w * 0.02
    mask = sg.full((batch, 1), 0.5)
    assert_type(mask, Tensor[NoTape, Open, L[1]])
    print((h @ w.T).shape, mask.shape)


if __name__ == "__main__":
    images(2)
    initial_state(sg.zeros(Batch(2), 16), 2)
    stated(2, 128)
