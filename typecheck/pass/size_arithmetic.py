"""Sizes computed from typed sizes, typed (issue #23, section 7): a two-way concat gives
Sum[A, B] (a U-Net skip, a [sin, cos] embedding), pooling by 2 gives Half[H], an up-sampling
transposed convolution Twice[H]; the layers that follow take them as they are, and the run
time checks them as numbers."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import Half, NoTape, Sum, Tensor, Twice
from shapegrad import nn

T = TypeVar("T")


class Batch(sg.Dim): ...


class TimeEmbedding(nn.Module):
    """A diffusion model's timestep embedding: [sin, cos] of scaled steps, then an MLP."""

    def __init__(self) -> None:
        self.mlp = nn.Linear[Sum[L[16], L[16]], L[64]]()

    def __call__(self, phases: Tensor[T, Batch, L[16]]) -> Tensor[T, Batch, L[64]]:
        embedded = sg.concat((phases.sin(), phases.cos()), axis=-1)
        return self.mlp(embedded)


class UNetLevel(nn.Module):
    """One level of a U-Net: encode, pool by 2, process, up-sample by 2, join the skip."""

    def __init__(self) -> None:
        self.encode = nn.SameConv2d[L[3], L[16]](3)
        self.pool = nn.MaxPool2d(2)
        self.middle = nn.SameConv2d[L[16], L[32]](3)
        self.up = nn.ConvTranspose2d[L[32], L[16], nn.Doubles](2, 2)
        self.decode = nn.SameConv2d[Sum[L[16], L[16]], L[8]](3)

    def __call__(self, x: Tensor[T, Batch, L[3], L[32], L[32]]) -> Tensor[T, Batch, L[8], L[32], L[32]]:
        skip = self.encode(x).relu()
        down: Tensor[T, Batch, L[16], Half[L[32]], Half[L[32]]] = self.pool(skip)
        up: Tensor[T, Batch, L[16], Twice[Half[L[32]]], Twice[Half[L[32]]]] = self.up(self.middle(down).relu())
        # Twice[Half[32]] is 32 only for an even size: stated once, checked at run time.
        restored = sg.cast(up, Tensor[T, Batch, L[16], L[32], L[32]])
        return self.decode(sg.concat((restored, skip), axis=1))


@sg.checked
def height(x: Tensor[NoTape, Batch, L[3], Half[L[32]], Half[L[32]]]) -> int:
    return x.shape[2]  # checked at run time as 16


def main() -> None:
    phases: Tensor[NoTape, Batch, L[16]] = sg.randn(Batch(4), 16)
    assert TimeEmbedding()(phases).shape == (4, 64)
    images: Tensor[NoTape, Batch, L[3], L[32], L[32]] = sg.randn(Batch(2), 3, 32, 32)
    assert UNetLevel()(images).shape == (2, 8, 32, 32)
    assert height(nn.AvgPool2d(2)(images)) == 16


if __name__ == "__main__":
    main()
