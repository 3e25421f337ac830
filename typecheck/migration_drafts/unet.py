"""First draft: a U-Net in the style of milesial/Pytorch-UNet (unet_model.py, unet_parts.py):
DoubleConv (conv-BN-ReLU twice), Down (max pool then DoubleConv), Up (ConvTranspose2d, pad to
the skip's size, concat the skip, DoubleConv), OutConv (1x1); trained a couple of steps with
cross-entropy plus a multiclass Dice loss, as milesial's train.py; written the way a PyTorch
user writes it after skimming shapegrad's README and docs/migration.md. Small sizes: 32x32
images, 4 base channels."""

from typing import Any, Generic, Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad import nn

T = TypeVar("T")
Cin = TypeVar("Cin")
Cout = TypeVar("Cout")
H = TypeVar("H")
W = TypeVar("W")


class Batch(sg.Dim): ...


class DoubleConv(nn.Module, Generic[Cin, Cout]):
    """(convolution => [BN] => ReLU) * 2"""

    def __init__(self, in_channels: int, out_channels: int, mid_channels: int | None = None) -> None:
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(3, padding=1, in_channels=in_channels, out_channels=mid_channels, bias=False),
            nn.BatchNorm2d(mid_channels),
            nn.ReLU(),
            nn.Conv2d(3, padding=1, in_channels=mid_channels, out_channels=out_channels, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )

    def __call__(self, x: Tensor[T, Batch, Cin, H, W]) -> Tensor[T, Batch, Cout, H, W]:
        return self.double_conv(x)


class Down(nn.Module, Generic[Cin, Cout]):
    """Downscaling with maxpool then double conv"""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(in_channels, out_channels))

    def __call__(self, x: Tensor[T, Batch, Cin, H, W]) -> Tensor[T, Batch, Cout, sg.Half[H], sg.Half[W]]:
        return self.maxpool_conv(x)


class Up(nn.Module, Generic[Cin, Cout]):
    """Upscaling then double conv"""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        self.up = nn.ConvTranspose2d(2, stride=2, in_channels=in_channels, out_channels=in_channels // 2)
        self.conv = DoubleConv(in_channels, out_channels)

    def __call__(
        self, x1: Tensor[T, Batch, Cin, sg.Half[H], sg.Half[W]], x2: Tensor[T, Batch, Cout, H, W]
    ) -> Tensor[T, Batch, Cout, H, W]:
        x1 = self.up(x1)
        # input is CHW
        diffY = x2.shape[2] - x1.shape[2]
        diffX = x2.shape[3] - x1.shape[3]
        x1 = sg.pad(x1, [(0, 0), (0, 0), (diffY // 2, diffY - diffY // 2), (diffX // 2, diffX - diffX // 2)])
        x = sg.concat([x2, x1], axis=1)
        return self.conv(x)


class OutConv(nn.Module, Generic[Cin, Cout]):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        self.conv = nn.Conv2d(1, in_channels=in_channels, out_channels=out_channels)

    def __call__(self, x: Tensor[T, Batch, Cin, H, W]) -> Tensor[T, Batch, Cout, H, W]:
        return self.conv(x)


class UNet(nn.Module):
    def __init__(self, n_channels: int, n_classes: int) -> None:
        self.n_channels = n_channels
        self.n_classes = n_classes
        self.inc = DoubleConv[L[3], L[4]](n_channels, 4)
        self.down1 = Down[L[4], L[8]](4, 8)
        self.down2 = Down[L[8], L[16]](8, 16)
        self.down3 = Down[L[16], L[32]](16, 32)
        self.down4 = Down[L[32], L[64]](32, 64)
        self.up1 = Up[L[64], L[32]](64, 32)
        self.up2 = Up[L[32], L[16]](32, 16)
        self.up3 = Up[L[16], L[8]](16, 8)
        self.up4 = Up[L[8], L[4]](8, 4)
        self.outc = OutConv[L[4], L[2]](4, n_classes)

    def __call__(self, x: Tensor[T, Batch, L[3], L[32], L[32]]) -> Tensor[T, Batch, L[2], L[32], L[32]]:
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x4 = self.down3(x3)
        x5 = self.down4(x4)
        x = self.up1(x5, x4)
        x = self.up2(x, x3)
        x = self.up3(x, x2)
        x = self.up4(x, x1)
        logits = self.outc(x)
        return logits


def dice_coeff(input: Tensor[T, Batch, L[2], L[32], L[32]], target: Tensor[NoTape, Batch, L[2], L[32], L[32]], epsilon: float = 1e-6) -> Tensor[T]:
    # average of Dice coefficient over the batch and the classes
    inter = 2 * (input * target).sum(axis=(-2, -1))
    sets_sum = input.sum(axis=(-2, -1)) + target.sum(axis=(-2, -1))
    sets_sum = sg.where(sets_sum == 0, inter, sets_sum)
    dice = (inter + epsilon) / (sets_sum + epsilon)
    return dice.mean()


def dice_loss(input: Tensor[T, Batch, L[2], L[32], L[32]], target: Tensor[NoTape, Batch, L[2], L[32], L[32]]) -> Tensor[T]:
    return 1 - dice_coeff(input, target)


def main() -> None:
    sg.seed(0)
    model = UNet(n_channels=3, n_classes=2)
    grads = model.alloc_grads()
    optimizer = sg.optim.RMSprop(model, lr=1e-5, weight_decay=1e-8, momentum=0.999)
    images = sg.randn(2, 3, 32, 32)
    true_masks = sg.randint(0, model.n_classes, (2, 32, 32))
    for _ in range(2):
        grads.zero()
        masks_pred = model(images.trace(grads))
        # classes on the last axis for shapegrad's cross_entropy
        loss = sg.losses.cross_entropy(masks_pred.permute(0, 2, 3, 1), true_masks)
        loss += dice_loss(
            masks_pred.softmax(axis=1),
            sg.one_hot(true_masks, model.n_classes).permute(0, 3, 1, 2),
        )
        loss.backward()
        optimizer.update(model, grads)
        print(f"loss {loss.item():.4f}")
    model.eval()
    pred = model(images).argmax(axis=1)
    assert pred.shape == (2, 32, 32)


if __name__ == "__main__":
    main()
