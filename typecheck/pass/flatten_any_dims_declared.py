"""Spatial sizes left ``Any`` (not computed by the types) and the flattened size stated by
the annotation the next layer reads: the ``Any`` factors of the ``Prod`` stand for sizes."""

from typing import Any, Literal as L, TypeVar

import shapegrad as sg
from shapegrad import Tensor
from shapegrad.nn import Flatten, Linear

T = TypeVar("T")


class Batch(sg.Dim): ...


def head(features: Tensor[T, Batch, L[16], Any, Any]) -> Tensor[T, Batch, L[10]]:
    flat: Tensor[T, Batch, L[256]] = Flatten()(features)
    return Linear[L[256], L[10]]()(flat)


def main() -> None:
    out = head(sg.cast(sg.zeros(2, 16, 4, 4), Tensor[sg.NoTape, Batch, L[16], Any, Any]))
    print(out.shape)
