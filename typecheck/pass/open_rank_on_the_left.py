"""An open-rank tensor on the left of an operator gives the open rank it gives on the right
(attack 15, F2: ``o * g`` was ``Tensor[T, B, L[8], *tuple[Open, ...]]``, a rank no tensor has,
which then met nothing)."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor

T = TypeVar("T")
B = TypeVar("B")


def reparameterize(mu: Tensor[T, B, L[8]], logvar: Tensor[T, B, L[8]]) -> Tensor[T, *tuple[Open, ...]]:
    std = (0.5 * logvar).exp()
    eps = sg.randn(*std.shape)  # torch.randn(*std.shape): sizes of a generic B are ints
    left: Tensor[T, *tuple[Open, ...]] = eps * std
    right: Tensor[T, *tuple[Open, ...]] = std * eps
    return mu + left + right


def flat(x: Tensor[NoTape, B, L[8]]) -> Tensor[NoTape, *tuple[Open, ...]]:
    above: Tensor[NoTape, *tuple[Open, ...]] = x.reshape(-1, 8) > x  # a comparison too
    return x.reshape(-1, 8) * x - x / x.reshape(-1, 8) + above


def main() -> None:
    print(reparameterize(sg.zeros(4, 8), sg.zeros(4, 8)).shape, flat(sg.ones(4, 8)).shape)


if __name__ == "__main__":
    main()
