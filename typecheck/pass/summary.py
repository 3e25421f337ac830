"""sg.summary as a user calls it: the example inputs are checked against the model's
``__call__`` (a plain Sequential's overloads included), and the table's rows are typed."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad.nn import Linear, Module, ReLU, Sequential

T = TypeVar("T")


class Batch(sg.Dim): ...


class MLP(Module):
    def __init__(self) -> None:
        self.encoder = Sequential(Linear[L[784], L[128]](), ReLU(), Linear[L[128], L[32]]())
        self.head = Linear[L[32], L[10]]()

    def __call__(self, x: Tensor[T, Batch, L[784]]) -> Tensor[T, Batch, L[10]]:
        return self.head(self.encoder(x))


def main(x: Tensor[NoTape, Batch, L[784]]) -> None:
    model = MLP()
    report: sg.Summary = sg.summary(model, x)
    print(report)
    for row in report.rows:
        path: str = row.path
        output: str = row.output
        count: int = row.parameters
        calls: int = row.calls
        print(path, row.class_name, output, row.shape, count, calls)
    total: int = report.total_parameters
    trainable: int = report.trainable_parameters
    frozen: int = report.frozen_parameters
    print(total, trainable, frozen)
    print(sg.summary(model.encoder, x))
