"""Recurrent layers keep batch and steps, map the features to the hidden size (twice it when
bidirectional), and their final states follow the input's tape, their first axis (layers · directions) typed by a
literal num_layers."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Open, OwnedTape, Prod, Tensor
from shapegrad.nn import GRU, LSTM, RNN, Linear, Module


class Batch(sg.Dim): ...


class Steps(sg.Dim): ...


class Tagger(Module):
    def __init__(self) -> None:
        self.lstm = LSTM[L[8], L[16]](num_layers=2)
        self.head = Linear[L[16], L[5]]()

    def __call__(self, x: Tensor[sg.nn.T, Batch, Steps, L[8]]) -> Tensor[sg.nn.T, Batch, Steps, L[5]]:
        out, _ = self.lstm(x)
        return self.head(out)


def main(x: Tensor[NoTape, Batch, Steps, L[8]]) -> None:
    lstm = LSTM[L[8], L[16]](num_layers=2)
    out, (h_n, c_n) = lstm(x)
    o: Tensor[NoTape, Batch, Steps, L[16]] = out
    h: Tensor[NoTape, L[2], Batch, L[16]] = h_n
    again, _ = lstm(x, (h_n, c_n))  # the final state feeds the next call
    print(o, h, c_n, again)

    bi = GRU[L[8], L[16], L[2]](bidirectional=True)
    wide: Tensor[NoTape, Batch, Steps, Prod[L[2], L[16]]] = bi(x)[0]
    rnn = RNN[L[8], L[4]](nonlinearity="relu")
    narrow, h_rnn = rnn(x)
    n: Tensor[NoTape, Batch, Steps, L[4]] = narrow
    print(wide, n, h_rnn)

    model = Tagger()
    grads = model.alloc_grads()
    traced = x.trace(grads)
    y: Tensor[OwnedTape[Tagger], Batch, Steps, L[5]] = model(traced)
    _, (h_traced, _) = model.lstm(traced)
    state: Tensor[OwnedTape[Tagger], L[2], Batch, L[16]] = h_traced
    print(y, state)


def two_way(x: Tensor[NoTape, Batch, Steps, L[8]]) -> Tensor[NoTape, Batch, Steps, Prod[L[2], L[16]]]:
    out, (h_n, _) = LSTM[L[8], L[16], L[2]](num_layers=2, bidirectional=True)(x)
    final: Tensor[NoTape, L[4], Batch, L[16]] = h_n
    print(final)
    return out


def sizes_from_a_config(x: Tensor[NoTape, Batch, Steps, L[32]], n_hidden: int, n_layers: int) -> None:
    """Int sizes beside literal type arguments, as the word language model builds its LSTM
    (checked against the type at run time)."""
    lstm = LSTM[L[32], L[32]](n_hidden, n_hidden, n_layers)
    out, _ = lstm(x)
    o: Tensor[NoTape, Batch, Steps, L[32]] = out
    gru = GRU[L[32], L[16], L[2]](input_size=n_hidden, hidden_size=16, bidirectional=True)
    print(o, gru(x)[0])


def plain_int_sizes(x: Tensor[NoTape, Batch, Steps, L[8]], n_hidden: int) -> None:
    """PyTorch's spelling, no type arguments: the sizes are Open and any last axis is taken."""
    out, h_n = GRU(8, n_hidden)(x)
    o: Tensor[NoTape, Batch, Steps, Open] = out
    seq, (h, c) = LSTM(8, 16, 2)(x)
    s: Tensor[NoTape, Batch, Steps, Open] = seq
    r, _ = RNN(8, 16, nonlinearity="relu")(x)
    both, _ = GRU(8, n_hidden, bidirectional=True)(x)
    b: Tensor[NoTape, Batch, Steps, Open] = both
    both_lstm, _ = LSTM(8, 16, bidirectional=True)(x)
    bl: Tensor[NoTape, Batch, Steps, Open] = both_lstm
    both_rnn, _ = RNN(8, n_hidden, bidirectional=True)(x)
    print(o, h_n, s, h, c, r, b, bl, both_rnn)
