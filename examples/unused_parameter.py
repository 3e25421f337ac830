"""What an optimizer says when a trainable parameter took no part in the loss.

python examples/unused_parameter.py
"""

from __future__ import annotations

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad.nn import Linear, Module

T = TypeVar("T")


class Encoder(Module):
    def __init__(self) -> None:
        self.used = Linear[L[4], L[2]]()
        self.forgotten = Linear[L[4], L[2]]()  # never called in __call__

    def __call__(self, x: Tensor[T, L[8], L[4]]) -> Tensor[T, L[8], L[2]]:
        return self.used(x)


def main() -> None:
    model = Encoder()
    grads = model.alloc_grads()
    opt = sg.optim.Adam(model)
    x: Tensor[NoTape, L[8], L[4]] = sg.ones(8, 4)
    loss = model(x.trace(grads)).sum()
    loss.backward()
    before = model.forgotten.weight.numpy().copy()
    try:
        opt.update(model, grads)
    except sg.UnusedParameterError as error:
        print("UnusedParameterError:", error)
        print("paths:", error.paths)
    assert (model.forgotten.weight.numpy() == before).all(), "a refused update changes nothing"
    print("With unused='ignore' (or 'warn') the parameters that got a gradient train:")
    sg.optim.Adam(model, unused="ignore").update(model, grads)
    print("updated only:", grads.received())


if __name__ == "__main__":
    main()
