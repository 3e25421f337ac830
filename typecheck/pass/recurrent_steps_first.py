"""Recurrent layers with ``batch_first=False`` (PyTorch's default): ``(steps, batch,
features)`` inputs and outputs, states ``(layers · directions, batch, hidden)``. The typed
overloads are batch-first, so such a layer (or one built with a bool that is not a literal)
is typed ``Any`` and its sizes are open; ``batch_first=True`` keeps the typed overloads."""

from typing import Any, Literal as L, assert_type

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad.nn import GRU, LSTM, RNN, Module


class Batch(sg.Dim): ...


class Steps(sg.Dim): ...


class Encoder(Module):
    def __init__(self) -> None:
        self.lstm = LSTM[L[8], L[16]](num_layers=2, batch_first=False)
        self.gru: GRU = GRU(8, 16, batch_first=False, bidirectional=True)

    def __call__(self, x: Tensor[sg.nn.T, Steps, Batch, L[8]]) -> Tensor[sg.nn.T, Steps, Batch, L[16]]:
        out, _ = self.lstm(x)
        return out


def main(x: Tensor[NoTape, Steps, Batch, L[8]], h_0: Tensor[NoTape, L[1], Batch, L[4]], first: bool) -> None:
    rnn = RNN[L[8], L[4]](batch_first=False)
    assert_type(rnn, Any)
    out, h_n = rnn(x, h_0)
    steps_first: Tensor[NoTape, Steps, Batch, L[4]] = out
    final: Tensor[NoTape, L[1], Batch, L[4]] = h_n
    lstm = LSTM(8, 4, 2, batch_first=first)
    out2, (h2, c2) = lstm(x)
    print(steps_first, final, out2, h2, c2, Encoder()(x))
    typed = GRU[L[8], L[4]](batch_first=True)
    assert_type(typed(x)[0], Tensor[NoTape, Steps, Batch, L[4]])  # batch-first: read as (batch, steps)
