"""Reductions over literal axes are typed; other axes give open dims."""

from typing import Any, Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


def main(x: Tensor[NoTape, Batch, L[5], L[10]]) -> None:
    total: Tensor[NoTape] = x.sum()
    last: Tensor[NoTape, Batch, L[5]] = x.mean(axis=-1)
    last_kept: Tensor[NoTape, Batch, L[5], L[1]] = x.max(axis=-1, keepdims=True)
    first: Tensor[NoTape, L[5], L[10]] = x.min(axis=0)
    lse: Tensor[NoTape, Batch, L[5]] = sg.logsumexp(x, axis=-1)
    middle: Tensor[NoTape, Batch, Any] = x.sum(axis=1)
    probs: Tensor[NoTape, Batch, L[5], L[10]] = x.softmax(axis=-1)
    print(total, last, last_kept, first, lse, middle, probs)
