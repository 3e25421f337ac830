"""``Sequential(*blocks)``, as PyTorch code stacks transformer blocks: layers that keep their
size make a typed chain of any length; a list of open layers makes an open one; a chain of
1-D convolutions takes signals."""

from typing import Any, Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor, nn

T = TypeVar("T")
Width = L[16]


class Batch(sg.Dim): ...


class Block(nn.Layer[Width, Width]):
    """A residual MLP block, (..., 16) -> (..., 16): a Layer, so that Sequential chains it."""

    def __init__(self) -> None:
        self.norm = nn.LayerNorm[Width]()
        self.up = nn.Linear[Width, L[64]]()
        self.down = nn.Linear[L[64], Width]()

    def __call__(self, x: Tensor[T, Batch, Width]) -> Tensor[T, Batch, Width]:
        return x + self.down(sg.gelu(self.up(self.norm(x))))


def main(n_layer: int = 3) -> None:
    x: Tensor[NoTape, Batch, Width] = sg.randn(Batch(4), 16)
    blocks = nn.Sequential(*[Block() for _ in range(n_layer)])
    y = blocks(x)
    assert_type(y, Tensor[NoTape, Batch, Width])
    # Seventeen layers that keep their size: typed, past the 16 explicit parameters.
    same = nn.Sequential(*[nn.Linear[Width, Width]() for _ in range(17)])
    assert_type(same(x), Tensor[NoTape, Batch, Width])
    layers: list[nn.Layer[Any, Any]] = [nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16)]
    # A chain of 1-D convolutions takes (B, C, L) signals, as a 2-D one takes images.
    signal: Tensor[NoTape, Batch, L[3], L[12]] = sg.randn(Batch(4), 3, 12)
    conv1d = nn.Sequential(nn.Conv1d[L[3], L[16]](3, padding=1), nn.ReLU(), nn.Conv1d[L[16], L[8]](3))
    assert_type(conv1d(signal), Tensor[NoTape, Batch, L[8], Open])
    print(y.shape, nn.Sequential(*layers)(x).shape, conv1d(signal).shape)


if __name__ == "__main__":
    main()
