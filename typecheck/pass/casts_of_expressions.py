"""issue #23: casts of function-form expressions, as a user writes them (the inner op is
checked, the cast states the open dims)."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Tgt(sg.Dim): ...


def shifted(bos: Tensor[NoTape, Batch, L[1]], tgt: Tensor[NoTape, Batch, Tgt]) -> Tensor[NoTape, Batch, Tgt]:
    return sg.cast(sg.concat([bos, tgt[:, :-1]], axis=1), Tensor[NoTape, Batch, Tgt])


def generic(x: Tensor[T, Batch, L[8], L[4]], w: Tensor[NoTape, L[4]]) -> Tensor[T, Batch, L[32]]:
    return sg.cast(sg.add(x, w).reshape(-1, 32), Tensor[T, Batch, L[32]])


def main(a: Tensor[NoTape, Batch, L[8], L[4]], k: int = 2) -> None:
    data = sg.cast(sg.tensor([1, 2]), Tensor[NoTape, Batch])
    same = sg.cast(a, Tensor[NoTape, Batch, L[8], L[4]])
    top: Tensor[NoTape, Batch, L[8], L[2]] = sg.cast(sg.topk(a, k)[0], Tensor[NoTape, Batch, L[8], L[2]])  # k: Open
    picked = sg.cast(sg.where(a > 0, a, 0.0), Tensor[NoTape, Batch, L[8], L[4]])
    print(data, same, top, picked)
