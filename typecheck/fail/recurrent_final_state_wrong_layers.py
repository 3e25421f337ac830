r"""A final state declared with another layer count than the layer's: one layer's h_n is not
(2, B, H), a 2-layer LSTM's is not (1, B, H), and an int count's (Open) is not L[1].

runtime: \(1, 2, 16\)"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor, nn


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def main(n_layers: int = 2) -> None:
    x: Tensor[NoTape, Batch, Seq, L[8]] = sg.randn(Batch(2), Seq(5), 8)
    _, h_n = nn.GRU[L[8], L[16]]()(x)
    two: Tensor[NoTape, L[2], Batch, L[16]] = h_n  # E: Tensor[NoTape, Literal[1], Batch, Literal[16]]
    _, (h_lstm, _) = nn.LSTM[L[8], L[16]](num_layers=2)(x)
    one: Tensor[NoTape, L[1], Batch, L[16]] = h_lstm  # E: Tensor[NoTape, Literal[2], Batch, Literal[16]]
    _, h_open = nn.GRU[L[8], L[16]](num_layers=n_layers)(x)
    single: Tensor[NoTape, L[1], Batch, L[16]] = h_open  # E: Open
    print(two, one, single)
    sg.cast(h_n, Tensor[NoTape, L[2], Batch, L[16]])
