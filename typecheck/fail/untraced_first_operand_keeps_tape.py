r"""A function form with an untraced first operand and a traced second one: the result is
traced, so returning it where an untraced tensor is declared is an error (pyright solved the
joined tape from the first operand, untraced, and missed this before the function forms put
each untraced-first overload ahead of its typed pattern).

runtime: NoTape|tape|traced"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


@sg.checked
def embed(x: Tensor[T, Batch, L[16], L[32]], table: Tensor[NoTape, L[16], L[32]]) -> Tensor[NoTape, Batch, L[16], L[32]]:
    return sg.add(table, x)  # E


def main() -> None:
    x: Tensor[NoTape, Batch, L[16], L[32]] = sg.randn(Batch(2), 16, 32)
    embed(x.trace(sg.Gradients()), sg.randn(16, 32))


if __name__ == "__main__":
    main()
