r"""``concat`` at axis 2 of tensors whose other dims differ: the attention context has 16
features where the embedding has 32, so the decoder's input is not what its GRU expects.

runtime: concat"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


def main() -> None:
    embedded: Tensor[NoTape, Batch, L[1], L[32]] = sg.randn(Batch(2), 1, 32)
    context: Tensor[NoTape, Batch, L[2], L[16]] = sg.randn(Batch(2), 2, 16)
    sg.concat([embedded, context], axis=2)  # E


if __name__ == "__main__":
    main()
