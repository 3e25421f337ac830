"""The tape and Gradients rules hold under the Pyrefly stubs too: backward of an untraced
tensor, a non-scalar without a seed, two models' tapes in one loss, another model's
Gradients given to an optimizer, and tracing a traced tensor."""

from __future__ import annotations

from typing import TypeVar

from shape_extensions import IntVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Conv2d, ConvTranspose2d, Flatten, Linear, MaxPool2d, Module, ReLU, Sequential

T = TypeVar("T")
B = IntVar("B")


class A(Module):
    def __init__(self) -> None:
        self.w = Linear(2, 1)


class Other(Module):
    def __init__(self) -> None:
        self.w = Linear(2, 1)


def main(x: Tensor[NoTape, [B, 2]]) -> None:
    x.sum().backward()  # E: deprecated overload `shapegrad.Tensor.backward`
    a, b = A(), Other()
    ga, gb = a.alloc_grads(), b.alloc_grads()
    out_a = a.w(x.trace(ga))
    out_a.backward()  # E: No matching overload
    out_b = b.w(x.trace(gb))
    (out_a + out_b).sum().backward()  # E: No matching overload
    opt = sg.optim.Sgd(a, lr=0.1)
    opt.update(a, gb)  # E: Gradients[Other]
    out_a.trace(ga)  # E: trace
