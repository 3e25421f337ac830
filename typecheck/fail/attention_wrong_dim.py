r"""Attention over 32 features fed 16.

runtime: inner dims differ"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def main() -> None:
    attn = sg.nn.MultiHeadAttention[L[32]](num_heads=4)
    x: Tensor[NoTape, Batch, Seq, L[16]] = sg.zeros(Batch(2), Seq(5), 16)
    attn(x)  # E
