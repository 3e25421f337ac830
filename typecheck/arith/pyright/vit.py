"""pass/vit.py for pyright: the same ViT patching, its computed sizes stated with casts."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...

from shapegrad.nn import Conv2d, LayerNorm, Linear, Module


class PatchEmbed(Module):
    def __init__(self) -> None:
        self.proj = Conv2d[L[3], L[768]](16, 16)

    def __call__(self, x: Tensor[T, Batch, L[3], L[224], L[224]]) -> Tensor[T, Batch, L[196], L[768]]:
        b = x.shape[0]
        return sg.cast(self.proj(x).reshape(b, 768, -1).permute(0, 2, 1), Tensor[T, Batch, L[196], L[768]])  # cast: computed


class ViTHead(Module):
    def __init__(self) -> None:
        self.patches = PatchEmbed()
        self.cls: Tensor[NoTape, L[1], L[1], L[768]] = sg.zeros(1, 1, 768)
        self.pos: Tensor[NoTape, L[197], L[768]] = sg.zeros(197, 768)
        self.norm = LayerNorm[L[768]]()
        self.head = Linear[L[768], L[10]]()

    def __call__(self, x: Tensor[T, Batch, L[3], L[224], L[224]]) -> Tensor[T, Batch, L[10]]:
        tokens = self.patches(x)
        cls = self.cls + sg.cast(sg.zeros(x.shape[0], 1, 768), Tensor[NoTape, Batch, L[1], L[768]])  # cast: computed
        joined = sg.cast(sg.concat((cls, tokens), axis=1), Tensor[T, Batch, L[197], L[768]])  # cast: computed
        z = self.norm(joined + self.pos)
        return self.head(z[:, 0])
