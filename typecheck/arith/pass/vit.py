"""ViT patching: a stride-16 convolution cuts 224x224 into 14x14 patches, reshape and
permute make them a sequence, a class token is concatenated in front, a position table is
added, and the head reads token 0.

The sequence length (196, 197 with the class token) is computed from the image size;
the slice of token 0 and of the patches (``z[:, 1:]``) keep their sizes.
"""

from __future__ import annotations

from typing import TypeVar

from shape_extensions import IntVar, assert_shape

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad.nn import Conv2d, LayerNorm, Linear, Module

T = TypeVar("T")
B = IntVar("B")


class PatchEmbed(Module, checked=False):
    def __init__(self) -> None:
        self.proj = Conv2d(16, 16, in_channels=3, out_channels=768)

    def __call__(self, x: Tensor[T, [B, 3, 224, 224]]) -> Tensor[T, [B, 196, 768]]:
        b = x.shape[0]
        return self.proj(x).reshape(b, 768, -1).permute(0, 2, 1)


class ViTHead(Module, checked=False):
    def __init__(self) -> None:
        self.patches = PatchEmbed()
        self.cls: Tensor[NoTape, [1, 1, 768]] = sg.zeros(1, 1, 768)
        self.pos: Tensor[NoTape, [197, 768]] = sg.zeros(197, 768)
        self.norm = LayerNorm(768)
        self.head = Linear(768, 10)

    def __call__(self, x: Tensor[T, [B, 3, 224, 224]]) -> Tensor[T, [B, 10]]:
        tokens = self.patches(x)
        cls = self.cls + sg.zeros(x.shape[0], 1, 768)
        z = self.norm(sg.concat((cls, tokens), axis=1) + self.pos)
        assert_shape(z.shape, (IntVar[B], 197, 768))
        assert_shape(z[:, 1:].shape, (IntVar[B], 196, 768))
        return self.head(z[:, 0])


def main() -> None:
    assert_shape(ViTHead()(sg.randn(2, 3, 224, 224)).shape, (2, 10))
