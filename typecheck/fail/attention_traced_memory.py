r"""Cross-attention over traced memory gives a traced result.

runtime: traced|OwnedTape"""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


@sg.checked
def attend(
    q: Tensor[NoTape, Batch, Seq, L[16]], mem: Tensor[OwnedTape[None], Batch, Seq, L[16]]
) -> Tensor[NoTape, Batch, Seq, L[16]]:
    return sg.nn.MultiHeadAttention[L[16]](2)(q, mem, mem)  # E


def main() -> None:
    grads = sg.Gradients()
    q: Tensor[NoTape, Batch, Seq, L[16]] = sg.zeros(Batch(2), Seq(3), 16)
    mem = q.trace(grads)
    attend(q, mem)
