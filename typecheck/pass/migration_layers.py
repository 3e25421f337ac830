"""GroupNorm, InstanceNorm2d, Upsample and ReflectionPad2d as PyTorch ports of diffusion
U-Nets, GANs and style transfer write them: typed channels chain through Sequential, a
literal ``Upsample(scale_factor=2)`` types the height and width as ``Twice``, reflection
padding keeps batch and channels (its height and width are Open), and the norms keep their
input's type."""

from typing import Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor, Twice, nn

T = TypeVar("T")


class Batch(sg.Dim): ...


class ResBlock(nn.Layer[nn.Chan[L[8]], nn.Chan[L[8]]]):
    """A diffusion U-Net's residual block: GroupNorm, SiLU, a size-keeping convolution, twice."""

    def __init__(self) -> None:
        self.norm1 = nn.GroupNorm[L[8]](4)
        self.conv1 = nn.SameConv2d[L[8], L[8]](3)
        self.norm2 = nn.GroupNorm(4, 8)  # plain ints: GroupNorm[Open], channels checked at run time
        self.conv2 = nn.SameConv2d[L[8], L[8]](3)

    def __call__(self, x: Tensor[T, Batch, L[8], L[16], L[16]]) -> Tensor[T, Batch, L[8], L[16], L[16]]:
        h = self.conv1(self.norm1(x).silu())
        assert_type(h, Tensor[T, Batch, L[8], L[16], L[16]])
        h = self.conv2(self.norm2(h).silu())
        return x + h


class StyleConv(nn.Module):
    """fast_neural_style's ConvLayer and its instance norm: reflection pad, conv, norm."""

    def __init__(self) -> None:
        self.pad = nn.ReflectionPad2d(1)
        self.conv = nn.Conv2d[L[3], L[8]](3)
        self.norm = nn.InstanceNorm2d[L[8]](affine=True)

    def __call__(self, x: Tensor[T, Batch, L[3], Open, Open]) -> Tensor[T, Batch, L[8], Open, Open]:
        padded = self.pad(x)
        assert_type(padded, Tensor[T, Batch, L[3], Open, Open])
        return self.norm(self.conv(padded))


def main() -> None:
    images: Tensor[NoTape, Batch, L[8], L[16], L[16]] = sg.randn(Batch(2), 8, 16, 16)
    assert_type(ResBlock()(images), Tensor[NoTape, Batch, L[8], L[16], L[16]])

    # the norms keep any rank after (batch, channels)
    norm = nn.GroupNorm[L[8]](2)
    signal: Tensor[NoTape, Batch, L[8], L[32]] = sg.randn(Batch(2), 8, 32)
    assert_type(norm(signal), Tensor[NoTape, Batch, L[8], L[32]])
    assert_type(nn.InstanceNorm2d[L[8]]()(images), Tensor[NoTape, Batch, L[8], L[16], L[16]])

    # a literal scale_factor=2 doubles the typed sizes; others are Open
    up = nn.Upsample(scale_factor=2)
    assert_type(up, nn.Upsample[nn.Doubles])
    assert_type(up(images), Tensor[NoTape, Batch, L[8], Twice[L[16]], Twice[L[16]]])
    bilinear = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
    assert_type(bilinear(images), Tensor[NoTape, Batch, L[8], Twice[L[16]], Twice[L[16]]])
    assert_type(nn.Upsample(scale_factor=3)(images), Tensor[NoTape, Batch, L[8], Open, Open])
    assert_type(nn.Upsample(size=(32, 32))(images), Tensor[NoTape, Batch, L[8], Open, Open])

    # a U-Net decoder stage and a GAN generator's tail chain their channels in Sequential
    # (which types the height and width of a chain's result Open, as with pooling)
    decoder = nn.Sequential(
        nn.SameConv2d[L[8], L[4]](3),
        nn.GroupNorm[L[4]](2),
        nn.SiLU(),
        nn.Upsample(scale_factor=2),
        nn.SameConv2d[L[4], L[4]](3),
    )
    assert_type(decoder, nn.Sequential[nn.Chan[L[8]], nn.Chan[L[4]]])
    assert_type(decoder(images), Tensor[NoTape, Batch, L[4], Open, Open])
    generator_tail = nn.Sequential(
        nn.Conv2d[L[8], L[8]](1),
        nn.ReflectionPad2d(3),
        nn.Conv2d[L[8], L[3]](7),
        nn.InstanceNorm2d[L[3]](),
        nn.Tanh(),
    )
    assert_type(generator_tail, nn.Sequential[nn.Chan[L[8]], nn.Chan[L[3]]])
    out = generator_tail(images)
    assert_type(out, Tensor[NoTape, Batch, L[3], Open, Open])

    styled = StyleConv()(sg.cast(sg.randn(Batch(2), 3, 16, 16), Tensor[NoTape, Batch, L[3], Open, Open]))
    assert styled.shape == (2, 8, 16, 16)
    print(out.shape, decoder(images).shape)


if __name__ == "__main__":
    main()
