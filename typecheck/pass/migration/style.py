"""pytorch/examples' fast neural style TransformerNet
(fast_neural_style/neural_style/transformer_net.py), ported to shapegrad at 32×32 with the
channels reduced (8-16-32 for 32-64-128): ConvLayer (ReflectionPad2d of kernel_size // 2, then
Conv2d), three down convolutions (9×9 stride 1, 3×3 stride 2 twice) each with
InstanceNorm2d(affine=True) and ReLU, five ResidualBlocks, two UpsampleConvLayers (nearest
up-sampling by 2, reflection pad, 3×3 conv) with instance norm and ReLU, and a last 9×9
convolution; Adam, two steps on random images. The VGG-16 perceptual loss of neural_style.py
(content at relu2_2, style by Gram matrices) is left out: a content loss, the MSE of the output
against the input, stands in for it. The attribute names are the original's, so a PyTorch
TransformerNet's state_dict loads with sg.nn.from_torch (tests/test_migration_set.py). The
first draft is typecheck/migration_drafts/style.py; each change from it is marked "# port:"."""

from typing import Generic, Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor
from shapegrad import nn

T = TypeVar("T")
Cin = TypeVar("Cin")
Cout = TypeVar("Cout")
C = TypeVar("C")
H = TypeVar("H")
W = TypeVar("W")


class Batch(sg.Dim): ...


class ConvLayer(nn.Module, Generic[Cin, Cout]):
    # port: the channels typed as the class's own (Cin, Cout), so the convolution is a
    # Conv2d[Cin, Cout] and its result has Cout channels (from plain ints it was Open)
    def __init__(self, in_channels: Cin, out_channels: Cout, kernel_size: int, stride: int) -> None:
        reflection_padding = kernel_size // 2
        self.reflection_pad = nn.ReflectionPad2d(reflection_padding)
        self.conv2d = nn.Conv2d[Cin, Cout](kernel_size, stride, in_channels=in_channels, out_channels=out_channels)

    def __call__(self, x: Tensor[T, Batch, Cin, H, W]) -> Tensor[T, Batch, Cout, Open, Open]:
        out = self.reflection_pad(x)
        return self.conv2d(out)


class ResidualBlock(nn.Module, Generic[C]):
    """ResidualBlock
    introduced in: https://arxiv.org/abs/1512.03385
    recommended architecture: http://torch.ch/blog/2016/02/04/resnets.html
    """

    def __init__(self, channels: C) -> None:  # port: C, as ConvLayer's
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = nn.InstanceNorm2d[C](channels, affine=True)  # port: typed channels
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = nn.InstanceNorm2d[C](channels, affine=True)
        self.relu = nn.ReLU()

    def __call__(self, x: Tensor[T, Batch, C, H, W]) -> Tensor[T, Batch, C, H, W]:
        residual = x
        out = self.relu(self.in1(self.conv1(x)))
        out = self.in2(self.conv2(out))
        # the (Open, Open) height and width meet x's (H, W): the sum is typed by x's
        return out + residual


class UpsampleConvLayer(nn.Module, Generic[Cin, Cout]):
    """UpsampleConvLayer
    Upsamples the input and then does a convolution. This method gives better results
    compared to ConvTranspose2d.
    ref: http://distill.pub/2016/deconv-checkerboard/
    """

    def __init__(
        self, in_channels: Cin, out_channels: Cout, kernel_size: int, stride: int, upsample: int | None = None
    ) -> None:  # port: upsample annotated; channels as ConvLayer's
        self.upsample = upsample
        # port: shapegrad has no F.interpolate: the up-sampling is a layer (no parameters, so
        # the state_dict is the original's), built once here instead of once per call
        self.interpolate = nn.Upsample(scale_factor=upsample, mode="nearest") if upsample else None
        reflection_padding = kernel_size // 2
        self.reflection_pad = nn.ReflectionPad2d(reflection_padding)
        self.conv2d = nn.Conv2d[Cin, Cout](kernel_size, stride, in_channels=in_channels, out_channels=out_channels)

    def __call__(self, x: Tensor[T, Batch, Cin, H, W]) -> Tensor[T, Batch, Cout, Open, Open]:
        x_in = x
        if self.interpolate is not None:
            x_in = self.interpolate(x_in)
        out = self.reflection_pad(x_in)
        return self.conv2d(out)


class TransformerNet(nn.Module):
    def __init__(self) -> None:
        # Initial convolution layers
        # port: the channels' literal types are solved from the literal arguments (no
        # InstanceNorm2d from a plain int: its channels would be Open)
        self.conv1 = ConvLayer[L[3], L[8]](3, 8, kernel_size=9, stride=1)
        self.in1 = nn.InstanceNorm2d[L[8]](affine=True)
        self.conv2 = ConvLayer[L[8], L[16]](8, 16, kernel_size=3, stride=2)
        self.in2 = nn.InstanceNorm2d[L[16]](affine=True)
        self.conv3 = ConvLayer[L[16], L[32]](16, 32, kernel_size=3, stride=2)
        self.in3 = nn.InstanceNorm2d[L[32]](affine=True)
        # Residual layers
        self.res1 = ResidualBlock[L[32]](32)
        self.res2 = ResidualBlock[L[32]](32)
        self.res3 = ResidualBlock[L[32]](32)
        self.res4 = ResidualBlock[L[32]](32)
        self.res5 = ResidualBlock[L[32]](32)
        # Upsampling Layers
        self.deconv1 = UpsampleConvLayer[L[32], L[16]](32, 16, kernel_size=3, stride=1, upsample=2)
        self.in4 = nn.InstanceNorm2d[L[16]](affine=True)
        self.deconv2 = UpsampleConvLayer[L[16], L[8]](16, 8, kernel_size=3, stride=1, upsample=2)
        self.in5 = nn.InstanceNorm2d[L[8]](affine=True)
        self.deconv3 = ConvLayer[L[8], L[3]](8, 3, kernel_size=9, stride=1)
        # Non-linearities
        self.relu = nn.ReLU()

    def __call__(self, X: Tensor[T, Batch, L[3], L[32], L[32]]) -> Tensor[T, Batch, L[3], L[32], L[32]]:
        y = self.relu(self.in1(self.conv1(X)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.relu(self.in3(self.conv3(y)))
        y = self.res1(y)
        y = self.res2(y)
        y = self.res3(y)
        y = self.res4(y)
        y = self.res5(y)
        y = self.relu(self.in4(self.deconv1(y)))
        y = self.relu(self.in5(self.deconv2(y)))
        y = self.deconv3(y)
        # port: 32×32 again after two stride-2 convolutions and two up-samplings by 2 (each
        # convolution's reflection padding keeps the size): arithmetic Python cannot compute,
        # stated here and checked at run time
        return sg.cast(y, Tensor[T, Batch, L[3], L[32], L[32]])


def main() -> None:
    sg.seed(0)
    transformer = TransformerNet()
    optimizer = sg.optim.Adam(transformer, lr=1e-3)
    grads = transformer.alloc_grads()
    mse_loss = sg.losses.mse
    content_weight = 1e5
    batch_size = 2
    for _ in range(2):
        x: Tensor[NoTape, Batch, L[3], L[32], L[32]] = sg.rand(Batch(batch_size), 3, 32, 32) * 255  # port: Batch
        grads.zero()
        y = transformer(x.trace(grads))
        # the VGG features of y and x in neural_style.py; the images themselves here
        content_loss = content_weight * mse_loss(y / 255, x / 255)
        total_loss = content_loss
        total_loss.backward()
        optimizer.update(transformer, grads)
        print(f"content: {content_loss.item():.4f}")


if __name__ == "__main__":
    main()
