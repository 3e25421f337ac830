"""A boolean mask indexing axis 0, ``h[mask]`` (attack 16): the type holds no dtype, so a mask
and a vector of indices look alike, and the rows a mask selects are as many as its True
values, not its length. ``h[mask]`` is ``(Open, ...)``: it meets another selection of another
length, it is assignable to an open annotation, and a typed layer takes it. It was typed as a
gather, ``(len(mask), ...)``, which refused both (a wrong size, a false error downstream).
``h.gather(idx)`` keeps ``len(idx)``."""

from typing import Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor, nn

T = TypeVar("T")


class Nodes(sg.Dim): ...


class Edges(sg.Dim): ...


lin = nn.Linear[L[16], L[16]]()


def selected(
    h: Tensor[T, Nodes, L[16]], keep: Tensor[NoTape, Nodes], e: Tensor[T, Edges, L[16]], keep_e: Tensor[NoTape, Edges]
) -> Tensor[T, Open, L[16]]:
    picked: Tensor[T, Open, L[16]] = h[keep]
    assert_type(e[keep_e], Tensor[T, Open, L[16]])
    assert_type(lin(h[keep]), Tensor[T, Open, L[16]])
    return picked + e[keep_e]  # both select as many rows at run time


def gathered(h: Tensor[T, Nodes, L[16]], idx: Tensor[NoTape, Edges]) -> Tensor[T, Edges, L[16]]:
    return h.gather(idx)


def main() -> None:
    h: Tensor[NoTape, Nodes, L[16]] = sg.randn(Nodes(5), 16)
    keep: Tensor[NoTape, Nodes] = sg.cast(sg.tensor([True, False, True, False, False]), Tensor[NoTape, Nodes])
    e: Tensor[NoTape, Edges, L[16]] = sg.randn(Edges(3), 16)
    keep_e: Tensor[NoTape, Edges] = sg.cast(sg.tensor([False, True, True]), Tensor[NoTape, Edges])
    assert selected(h, keep, e, keep_e).shape == (2, 16)
    idx: Tensor[NoTape, Edges] = sg.cast(sg.tensor([0, 4, 4]), Tensor[NoTape, Edges])
    assert gathered(h, idx).shape == (3, 16)


if __name__ == "__main__":
    main()
