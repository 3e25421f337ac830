r"""Two tensors traced for two different models meet in one op: an operator refuses them; a
function form joins them into a union of the two tapes, which backward() and every declared
tape refuse."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


class A(Module): ...


class B(Module): ...


def main(x: Tensor[OwnedTape[A], L[3]], y: Tensor[OwnedTape[B], L[3]]) -> None:
    x + y  # E
    sg.add(x, y).sum().backward()  # E
    both: Tensor[OwnedTape[A], L[3]] = sg.add(x, y)  # E
    sg.concat([x, y], axis=0).sum().backward()  # E
