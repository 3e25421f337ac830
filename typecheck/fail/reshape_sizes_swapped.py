r"""Sizes read from ``x.shape`` given back to ``reshape`` in the wrong order: the sequence and
feature sizes trade places, which PyTorch accepts silently (the element count matches).

runtime: Seq|32|16"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


@sg.checked
def features(x: Tensor[T, Batch, Seq, L[32]]) -> Tensor[T, Batch, Seq, L[32]]:
    b, s, c = x.shape
    return x.reshape(b, c, s)  # E


def main() -> None:
    features(sg.randn(Batch(2), Seq(16), 32))


if __name__ == "__main__":
    main()
