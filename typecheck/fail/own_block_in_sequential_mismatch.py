r"""Blocks of your own chain by the channels their Layer base states: 4 out, then 8 in.

runtime: input has 4 channels, expected 8"""

from typing import Generic, Literal as L, TypeVar

import shapegrad as sg
from shapegrad import Tensor, nn

T = TypeVar("T")
Cin = TypeVar("Cin")
Cout = TypeVar("Cout")
H = TypeVar("H")
W = TypeVar("W")


class Block(nn.Layer[nn.Chan[Cin], nn.Chan[Cout]], Generic[Cin, Cout]):
    def __init__(self, in_channels: Cin, out_channels: Cout) -> None:
        self.conv = nn.SameConv2d[Cin, Cout](3, in_channels=in_channels, out_channels=out_channels)

    def __call__(self, x: Tensor[T, sg.Dim, Cin, H, W]) -> Tensor[T, sg.Dim, Cout, H, W]:
        return self.conv(x)


def main() -> None:
    model = nn.Sequential(Block[L[3], L[4]](3, 4), Block[L[8], L[8]](8, 8))  # E: Chan[Literal[4]]
    model(sg.zeros(2, 3, 8, 8))
