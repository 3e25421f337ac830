"""First draft: the LSTM word language model of pytorch/examples (word_language_model/
model.py, RNNModel with tie_weights), batch first, trained with truncated backpropagation
through time (the hidden state carried and detached between batches), gradient clipping and
plain SGD, written the way a PyTorch user writes it after skimming shapegrad's docs."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad import nn

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


NTOKEN = 50
NINP = 32
NHID = 32  # tied weights need nhid == ninp
NLAYERS = 2

Hidden = tuple[Tensor[T, L[2], Batch, L[32]], Tensor[T, L[2], Batch, L[32]]]


class RNNModel(nn.Module):
    def __init__(self, ntoken: int, ninp: int, nhid: int, nlayers: int, dropout: float = 0.5, tie_weights: bool = True) -> None:
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding[L[50], L[32]](ntoken, ninp)
        self.rnn = nn.LSTM[L[32], L[32]](ninp, nhid, nlayers)
        if tie_weights:
            assert nhid == ninp, "When using the tied flag, nhid must be equal to emsize"
        # the decoder is the encoder's table, transposed (shapegrad's Linear.weight is (in, out))
        self.decoder_bias = nn.parameter(sg.zeros(ntoken))
        self.nlayers = nlayers
        self.nhid = nhid
        self.init_weights()

    def init_weights(self) -> None:
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder_bias)

    def __call__(self, input: Tensor[T, Batch, Seq], hidden: Hidden[T]) -> tuple[Tensor[T, sg.Open, L[50]], Hidden[T]]:
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = output @ self.encoder.weight.T + self.decoder_bias
        decoded = decoded.reshape(-1, self.ntoken)
        return decoded.log_softmax(axis=1), hidden

    def init_hidden(self, bsz: int) -> Hidden[NoTape]:
        return (sg.zeros(self.nlayers, bsz, self.nhid), sg.zeros(self.nlayers, bsz, self.nhid))


def repackage_hidden(h: Hidden[T]) -> Hidden[NoTape]:
    """Wraps hidden states in new tensors, to detach them from their history."""
    return tuple(v.detach() for v in h)


def main() -> None:
    sg.seed(1111)
    model = RNNModel(NTOKEN, NINP, NHID, NLAYERS, dropout=0.2)
    grads = model.alloc_grads()
    opt = sg.optim.Sgd(model, lr=20.0, clip_norm=0.25)
    batch_size, bptt = 4, 6
    data = sg.randint(0, NTOKEN, (batch_size, 3 * bptt + 1))
    hidden = model.init_hidden(batch_size)
    model.train()
    for i in range(0, 3 * bptt, bptt):
        source = data[:, i : i + bptt]
        targets = data[:, i + 1 : i + 1 + bptt].reshape(-1)
        hidden = repackage_hidden(hidden)
        grads.zero()
        output, hidden = model(source.trace(grads), hidden)
        loss = sg.losses.nll_loss(output, targets)
        loss.backward()
        opt.update(model, grads)
        print(loss.item())


if __name__ == "__main__":
    main()
