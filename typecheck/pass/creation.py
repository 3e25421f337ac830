"""Creation functions: sizes in, typed tensors out."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


def main() -> None:
    gen = sg.Generator(seed=0)
    z: Tensor[NoTape, Batch, L[3]] = sg.zeros(Batch(4), 3)
    o: Tensor[NoTape, L[2], L[2]] = sg.ones(2, 2, dtype="float64")
    r: Tensor[NoTape, Batch, L[3]] = sg.randn(Batch(4), 3, generator=gen)
    u: Tensor[NoTape, Batch, L[3]] = sg.rand_like(r, generator=gen)
    like: Tensor[NoTape, Batch, L[3]] = sg.zeros_like(z)
    data: Tensor[NoTape, L[2]] = sg.cast(sg.tensor([1.0, 2.0]), Tensor[NoTape, L[2]])
    print(z, o, r, u, like, data, z.shape, z.numpy())


def full_keeps_its_sizes() -> None:
    class Batch(sg.Dim): ...

    b = Batch(4)
    rows: Tensor[NoTape, Batch, Batch] = sg.full((b, b), 0.5)
    print(rows)
