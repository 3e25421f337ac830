"""First draft: pytorch/examples' fast neural style TransformerNet
(fast_neural_style/neural_style/transformer_net.py): ConvLayer (reflection pad, conv), three
down convolutions with InstanceNorm2d(affine=True) and ReLU, five ResidualBlocks,
UpsampleConvLayer (nearest up-sampling by 2, reflection pad, conv) twice, and a last 9x9
convolution; trained a couple of steps with Adam, written the way a PyTorch user writes it after
skimming shapegrad's README and docs/migration.md. Small sizes: 32x32 images, channels 8-16-32
instead of 32-64-128. The VGG perceptual loss of neural_style.py is left out: a content loss
(MSE against the input) stands in for it."""

from typing import Generic, Literal as L, TypeVar

import shapegrad as sg
from shapegrad import Tensor
from shapegrad import nn

T = TypeVar("T")
Cin = TypeVar("Cin")
Cout = TypeVar("Cout")
C = TypeVar("C")
H = TypeVar("H")
W = TypeVar("W")


class Batch(sg.Dim): ...


class ConvLayer(nn.Module, Generic[Cin, Cout]):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int) -> None:
        reflection_padding = kernel_size // 2
        self.reflection_pad = nn.ReflectionPad2d(reflection_padding)
        self.conv2d = nn.Conv2d(kernel_size, stride, in_channels=in_channels, out_channels=out_channels)

    def __call__(self, x: Tensor[T, Batch, Cin, H, W]) -> Tensor[T, Batch, Cout, sg.Open, sg.Open]:
        out = self.reflection_pad(x)
        out = self.conv2d(out)
        return out


class ResidualBlock(nn.Module, Generic[C]):
    """ResidualBlock
    introduced in: https://arxiv.org/abs/1512.03385
    recommended architecture: http://torch.ch/blog/2016/02/04/resnets.html
    """

    def __init__(self, channels: int) -> None:
        self.conv1 = ConvLayer[C, C](channels, channels, kernel_size=3, stride=1)
        self.in1 = nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer[C, C](channels, channels, kernel_size=3, stride=1)
        self.in2 = nn.InstanceNorm2d(channels, affine=True)
        self.relu = nn.ReLU()

    def __call__(self, x: Tensor[T, Batch, C, H, W]) -> Tensor[T, Batch, C, H, W]:
        residual = x
        out = self.relu(self.in1(self.conv1(x)))
        out = self.in2(self.conv2(out))
        out = out + residual
        return out


class UpsampleConvLayer(nn.Module, Generic[Cin, Cout]):
    """UpsampleConvLayer
    Upsamples the input and then does a convolution. This method gives better results
    compared to ConvTranspose2d.
    ref: http://distill.pub/2016/deconv-checkerboard/
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int, upsample=None) -> None:
        self.upsample = upsample
        reflection_padding = kernel_size // 2
        self.reflection_pad = nn.ReflectionPad2d(reflection_padding)
        self.conv2d = nn.Conv2d(kernel_size, stride, in_channels=in_channels, out_channels=out_channels)

    def __call__(self, x: Tensor[T, Batch, Cin, H, W]) -> Tensor[T, Batch, Cout, sg.Open, sg.Open]:
        x_in = x
        if self.upsample:
            # no F.interpolate in shapegrad: nn.Upsample, as the docs' table says
            x_in = nn.Upsample(scale_factor=self.upsample, mode="nearest")(x_in)
        out = self.reflection_pad(x_in)
        out = self.conv2d(out)
        return out


class TransformerNet(nn.Module):
    def __init__(self) -> None:
        # Initial convolution layers
        self.conv1 = ConvLayer[L[3], L[8]](3, 8, kernel_size=9, stride=1)
        self.in1 = nn.InstanceNorm2d(8, affine=True)
        self.conv2 = ConvLayer[L[8], L[16]](8, 16, kernel_size=3, stride=2)
        self.in2 = nn.InstanceNorm2d(16, affine=True)
        self.conv3 = ConvLayer[L[16], L[32]](16, 32, kernel_size=3, stride=2)
        self.in3 = nn.InstanceNorm2d(32, affine=True)
        # Residual layers
        self.res1 = ResidualBlock[L[32]](32)
        self.res2 = ResidualBlock[L[32]](32)
        self.res3 = ResidualBlock[L[32]](32)
        self.res4 = ResidualBlock[L[32]](32)
        self.res5 = ResidualBlock[L[32]](32)
        # Upsampling Layers
        self.deconv1 = UpsampleConvLayer[L[32], L[16]](32, 16, kernel_size=3, stride=1, upsample=2)
        self.in4 = nn.InstanceNorm2d(16, affine=True)
        self.deconv2 = UpsampleConvLayer[L[16], L[8]](16, 8, kernel_size=3, stride=1, upsample=2)
        self.in5 = nn.InstanceNorm2d(8, affine=True)
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
        return y


def main() -> None:
    sg.seed(0)
    transformer = TransformerNet()
    optimizer = sg.optim.Adam(transformer, lr=1e-3)
    grads = transformer.alloc_grads()
    mse_loss = sg.losses.mse
    content_weight = 1e5
    batch_size = 2
    for _ in range(2):
        x = sg.rand(batch_size, 3, 32, 32) * 255
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
