"""The final state h_n of GRU/RNN/LSTM is (num_layers · directions, B, H): its first axis is
L[1] at the default one layer, one direction (the seq2seq encoder's hidden state), the layer
count when num_layers is a literal, twice it bidirectional, and Open when num_layers is an int
from a config (then an annotation states it and the run time checks it)."""

from typing import Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor, nn

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


class Encoder(nn.Module):
    def __init__(self, hidden_size: int) -> None:
        self.embedding = nn.Embedding[L[20], L[32]]()
        self.gru = nn.GRU[L[32], L[32]](hidden_size, hidden_size)

    def __call__(self, ids: Tensor[T, Batch, Seq]) -> tuple[Tensor[T, Batch, Seq, L[32]], Tensor[T, L[1], Batch, L[32]]]:
        output, hidden = self.gru(self.embedding(ids))
        return output, hidden


def main(n_layers: int = 3) -> None:
    x: Tensor[NoTape, Batch, Seq, L[8]] = sg.randn(Batch(2), Seq(5), 8)
    _, h_gru = nn.GRU[L[8], L[16]]()(x)
    assert_type(h_gru, Tensor[NoTape, L[1], Batch, L[16]])
    _, h_rnn = nn.RNN(8, 16)(x)  # plain int sizes: the width is Open, the count still known
    assert_type(h_rnn, Tensor[NoTape, L[1], Batch, Open])
    _, (h_lstm, c_lstm) = nn.LSTM[L[8], L[16]](num_layers=2)(x)
    assert_type(h_lstm, Tensor[NoTape, L[2], Batch, L[16]])
    assert_type(c_lstm, Tensor[NoTape, L[2], Batch, L[16]])
    _, h_bi = nn.GRU[L[8], L[16], L[2]](bidirectional=True)(x)
    assert_type(h_bi, Tensor[NoTape, L[2], Batch, L[16]])
    _, (h_bi2, _) = nn.LSTM[L[8], L[16], L[2]](num_layers=2, bidirectional=True)(x)
    assert_type(h_bi2, Tensor[NoTape, L[4], Batch, L[16]])
    _, h_config = nn.GRU[L[8], L[16]](num_layers=n_layers)(x)
    assert_type(h_config, Tensor[NoTape, Open, Batch, L[16]])
    stated = sg.cast(h_config, Tensor[NoTape, L[3], Batch, L[16]])  # checked at run time

    ids: Tensor[NoTape, Batch, Seq] = sg.randint(0, 20, (Batch(2), Seq(5)))
    out, hidden = Encoder(32)(ids)
    print(h_gru.shape, h_rnn.shape, h_lstm.shape, h_bi.shape, h_bi2.shape, stated.shape, out.shape, hidden.shape)
    assert h_gru.shape[0] == 1 and h_lstm.shape[0] == 2 and h_bi.shape[0] == 2 and h_bi2.shape[0] == 4


if __name__ == "__main__":
    main()
