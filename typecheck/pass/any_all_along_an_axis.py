"""PyTorch's ``sel.any(dim=-1)`` written ``sel.any(axis=-1)``: along an axis, ``any`` and
``all`` give untraced booleans (the last axis dropped, typed), and without one a Python bool."""

from typing import Literal as L

from typing_extensions import assert_type

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor


class Batch(sg.Dim): ...


def main(routing: Tensor[OwnedTape[None], Batch, L[4]], selected: Tensor[NoTape, Batch, L[4]]) -> None:
    assert_type(selected.any(axis=-1), Tensor[NoTape, Batch])
    assert_type((routing > 0).all(-1), Tensor[NoTape, Batch])
    assert_type(selected.any(), bool)
    assert_type(selected.all(), bool)
    if selected.any(axis=-1).all():
        print("every row selects an expert")
    print(selected.any(0, keepdims=True))
