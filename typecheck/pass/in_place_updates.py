"""In-place arithmetic written as PyTorch code writes it: a manual update loop under
``sg.no_grad()``, a running average of the weights, a residual added with ``+=``, a loss
accumulated into a total. pyright checks ``x += y`` as ``x = x + y``: the same shape rule."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module


class Batch(sg.Dim): ...


class Block(Module):
    def __init__(self) -> None:
        self.inner = Linear[L[4], L[4]]()

    def __call__(self, x: Tensor[OwnedTape["Block"], Batch, L[4]]) -> Tensor[OwnedTape["Block"], Batch, L[4]]:
        out = self.inner(x).relu()
        out += x  # the residual, in place as torchvision's BasicBlock adds it
        return out


def main() -> None:
    block = Block()
    average = [p.detach() * 1.0 for p in block.parameters()]
    x: Tensor[NoTape, Batch, L[4]] = sg.randn(Batch(8), 4)
    y: Tensor[NoTape, Batch, L[4]] = sg.randn(Batch(8), 4)
    total = sg.zeros(())
    for _ in range(3):
        grads = block.alloc_grads()
        total = sg.zeros(())
        for chunk in (x, y):
            total += (block(chunk.trace(grads)) ** 2).mean()
        total.backward()
        with sg.no_grad():
            for p, kept in zip(block.parameters(), average, strict=True):
                p -= 0.01 * grads[p]
                kept *= 0.9
                kept += 0.1 * p
    print(total.item(), [a.shape for a in average])


if __name__ == "__main__":
    main()
