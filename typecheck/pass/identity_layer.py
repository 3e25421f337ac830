"""PyTorch's ``nn.Identity``: a layer that is its input, so its type is the input's, and it
fits a ``Sequential`` wherever a same-width layer does; a projection chosen by configuration
is one layer or the other."""

from typing import Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import Tensor, nn

T = TypeVar("T")


class Batch(sg.Dim): ...


def keep(x: Tensor[T, Batch, L[8]]) -> Tensor[T, Batch, L[8]]:
    assert_type(nn.Identity()(x), Tensor[T, Batch, L[8]])
    return nn.Identity()(x)


def main() -> None:
    head = nn.Sequential(nn.Linear[L[8], L[4]](), nn.Identity(), nn.ReLU())
    x: Tensor[sg.NoTape, Batch, L[8]] = sg.randn(Batch(2), 8)
    assert_type(head(x), Tensor[sg.NoTape, Batch, L[4]])
    assert keep(x) is x
    wide = True
    proj = nn.Linear[L[8], L[8]]() if wide else nn.Identity()
    assert proj(x).shape == (2, 8)


if __name__ == "__main__":
    main()
