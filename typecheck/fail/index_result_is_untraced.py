r"""argmax gives untraced integer indices: they cannot be where a traced tensor is expected.

runtime: (?s)argmax_tape.*traced"""

from typing import Any, Literal as L

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor


class Batch(sg.Dim): ...


@sg.checked
def argmax_tape(x: Tensor[OwnedTape[None], Batch, L[4]]) -> Tensor[OwnedTape[None], *tuple[Any, ...]]:
    return sg.argmax(x, axis=-1)  # E


def main() -> None:
    x: Tensor[NoTape, Batch, L[4]] = sg.zeros(Batch(2), 4)
    argmax_tape(x.trace(sg.Gradients()))
