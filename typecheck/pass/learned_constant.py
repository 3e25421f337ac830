"""A module with no input (a learned constant) trains: its parameter is traced."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Module, parameter


class Constant(Module):
    def __init__(self) -> None:
        self.value: Tensor[NoTape, L[3]] = parameter(sg.zeros(3))

    def __call__(self, grads: sg.Gradients["Constant"]) -> Tensor[OwnedTape["Constant"], L[3]]:
        return self.value.trace(grads)


def main() -> None:
    model = Constant()
    grads = model.alloc_grads()
    opt = sg.optim.Sgd(model, lr=0.1)
    target = sg.cast(sg.tensor([1.0, 2.0, 3.0]), Tensor[NoTape, L[3]])
    for _ in range(3):
        grads.zero()
        loss = sg.losses.mse(model(grads), target)
        opt.update(model, loss.backward())
