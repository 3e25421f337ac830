"""A module with no input at all still trains: it traces its own parameter.

python examples/learned_constant.py
"""

from __future__ import annotations

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Module, parameter


class LearnedConstant(Module):
    def __init__(self) -> None:
        self.value: Tensor[NoTape, L[3]] = parameter(sg.zeros(3))

    def __call__(self, grads: sg.Gradients["LearnedConstant"]) -> Tensor[OwnedTape["LearnedConstant"], L[3]]:
        return self.value.trace(grads)


def main() -> None:
    model = LearnedConstant()
    grads = model.alloc_grads()
    opt = sg.optim.Sgd(model, lr=0.2)
    target = sg.cast(sg.tensor([1.0, -2.0, 3.0]), Tensor[NoTape, L[3]])
    for _ in range(50):
        grads.zero()
        loss = sg.losses.mse(model(grads), target)
        opt.update(model, loss.backward())
    print("learned:", [round(v, 4) for v in model.value.tolist()], "target:", target.tolist())


if __name__ == "__main__":
    main()
