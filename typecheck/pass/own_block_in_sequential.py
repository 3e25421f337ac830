"""A block of your own inside Sequential, the documented way (docs/migration.md): subclass
nn.Layer[nn.Chan[Cin], nn.Chan[Cout]] (channels of images) so Sequential reads its sizes; its
typed __call__ is what it does. A plain nn.Module subclass is refused there: Sequential chains
the sizes a Layer states, and cannot read them from a __call__ (issue #23 §6)."""

from typing import Generic, Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor, nn

T = TypeVar("T")
Cin = TypeVar("Cin")
Cout = TypeVar("Cout")
H = TypeVar("H")
W = TypeVar("W")


class Batch(sg.Dim): ...


class DoubleConv(nn.Layer[nn.Chan[Cin], nn.Chan[Cout]], Generic[Cin, Cout]):
    """(convolution => BN => ReLU) * 2, as milesial's U-Net."""

    def __init__(self, in_channels: Cin, out_channels: Cout) -> None:
        self.conv1 = nn.SameConv2d[Cin, Cout](3, in_channels=in_channels, out_channels=out_channels)
        self.norm1 = nn.BatchNorm2d[Cout](out_channels)
        self.conv2 = nn.SameConv2d[Cout, Cout](3, in_channels=out_channels, out_channels=out_channels)
        self.norm2 = nn.BatchNorm2d[Cout](out_channels)

    def __call__(self, x: Tensor[T, Batch, Cin, H, W]) -> Tensor[T, Batch, Cout, H, W]:
        return self.norm2(self.conv2(self.norm1(self.conv1(x)).relu())).relu()


def main() -> None:
    x: Tensor[NoTape, Batch, L[3], L[16], L[16]] = sg.randn(Batch(2), 3, 16, 16)
    down = nn.Sequential(nn.MaxPool2d(2), DoubleConv[L[3], L[8]](3, 8))
    y = down(x)
    assert_type(y, Tensor[NoTape, Batch, L[8], Open, Open])
    stem = nn.Sequential(DoubleConv[L[3], L[4]](3, 4), DoubleConv[L[4], L[8]](4, 8))
    assert_type(stem, nn.Sequential[nn.Chan[L[3]], nn.Chan[L[8]]])
    print(y.shape, stem(x).shape)


if __name__ == "__main__":
    main()
