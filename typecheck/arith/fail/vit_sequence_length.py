"""ViT patching: a 16x16 patch grid of a 224 image has 196 tokens; a position table for 197
fits only after the class token, and a head over the patch tokens (a slice) is not over 197."""

from __future__ import annotations

from typing import TypeVar

from shape_extensions import IntVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Conv2d, ConvTranspose2d, Flatten, Linear, MaxPool2d, Module, ReLU, Sequential

T = TypeVar("T")
B = IntVar("B")


def tokens(x: Tensor[T, [B, 3, 224, 224]], pos: Tensor[NoTape, [197, 768]]) -> None:
    proj = Conv2d(16, 16, in_channels=3, out_channels=768)
    seq = proj(x).reshape(x.shape[0], 768, -1).permute(0, 2, 1)
    seq + pos  # E: Cannot broadcast dimension Int[196] with dimension Int[197]


def patch_head(z: Tensor[T, [B, 197, 768]]) -> Tensor[T, [B, 197, 768]]:
    return z[:, 1:]  # E: Tensor[T, [B, 197, 768]]


def wrong_reshape(x: Tensor[T, [8, 768, 14, 14]]) -> None:
    x.reshape(8, 768, 195)  # E: the sizes' product is not the tensor's size
