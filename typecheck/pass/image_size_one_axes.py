"""Size-1 axes for images, as DDPM's U-Net writes them: a per-channel time embedding
``temb_proj(temb)[:, :, None, None]`` added to a convolution's ``(B, C, H, W)`` (open height
and width too), ``emb[..., None, None]``, a noise schedule's per-sample ``a[:, None, None,
None]`` scaling ``(B, C, H, W)``, ``a[:, None, None]`` over ``(B, S, D)``, and a channels-last
``(B, 1, 1, C)``. Each keeps its dims (they were an open rank, which checked nothing after)."""

from typing import Generic, Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor, nn

T = TypeVar("T")
Cin = TypeVar("Cin")
Cout = TypeVar("Cout")
H = TypeVar("H")
W = TypeVar("W")
TDim = L[32]


class Batch(sg.Dim): ...


class ResBlock(nn.Module, Generic[Cin, Cout]):
    def __init__(self, in_ch: Cin, out_ch: Cout) -> None:
        self.conv = nn.SameConv2d[Cin, Cout](3, in_channels=in_ch, out_channels=out_ch)
        self.open_conv = nn.Conv2d[Cout, Cout](3, padding=1, in_channels=out_ch, out_channels=out_ch)
        self.temb_proj = nn.Linear[TDim, Cout](32, out_ch)

    def __call__(self, x: Tensor[T, Batch, Cin, H, W], temb: Tensor[NoTape, Batch, TDim]) -> Tensor[T, Batch, Cout, H, W]:
        emb = self.temb_proj(sg.silu(temb))
        h = self.conv(x) + emb[:, :, None, None]
        assert_type(h, Tensor[T, Batch, Cout, H, W])
        g = self.open_conv(h) + emb[..., None, None]
        assert_type(g, Tensor[T, Batch, Cout, Open, Open])
        return h + sg.cast(g, Tensor[T, Batch, Cout, H, W])


def main() -> None:
    block = ResBlock[L[3], L[8]](3, 8)
    x: Tensor[NoTape, Batch, L[3], L[16], L[16]] = sg.randn(Batch(2), 3, 16, 16)
    temb: Tensor[NoTape, Batch, TDim] = sg.randn(Batch(2), 32)
    assert_type(block(x, temb), Tensor[NoTape, Batch, L[8], L[16], L[16]])
    a: Tensor[NoTape, Batch] = sg.rand(Batch(2))
    noise: Tensor[NoTape, Batch, L[3], L[16], L[16]] = sg.randn(Batch(2), 3, 16, 16)
    xt = a[:, None, None, None].sqrt() * x + (1 - a[:, None, None, None]).sqrt() * noise
    assert_type(xt, Tensor[NoTape, Batch, L[3], L[16], L[16]])
    assert_type(x * a[:, None, None, None], Tensor[NoTape, Batch, L[3], L[16], L[16]])
    seq: Tensor[NoTape, Batch, L[5], L[16]] = sg.randn(Batch(2), 5, 16)
    assert_type(seq * a[:, None, None], Tensor[NoTape, Batch, L[5], L[16]])
    nhwc: Tensor[NoTape, Batch, L[16], L[16], L[32]] = sg.randn(Batch(2), 16, 16, 32)
    assert_type(nhwc + temb[:, None, None, :], Tensor[NoTape, Batch, L[16], L[16], L[32]])


if __name__ == "__main__":
    main()
