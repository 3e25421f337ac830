"""The LSTM word language model of pytorch/examples (word_language_model/model.py, RNNModel
with tie_weights), ported to shapegrad batch first: dropout, an embedding, a 2-layer LSTM and
the decoder tied to the embedding table, log_softmax + nll_loss, truncated backpropagation
through time (the state carried across batches and detached), gradient clipping at 0.25 and
plain SGD. The first draft is typecheck/migration_drafts/word_lm.py; each change from it is
marked "# port:" (what our docs say to write) or "# until #23 §N lands:"."""

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

# port: each of the LSTM's states (h, c) is (layers, batch, hidden), its first axis open
# (num_layers is an int); the pair is the draft's generic alias, Hidden[T]
Hidden = tuple[Tensor[T, sg.Open, Batch, L[32]], Tensor[T, sg.Open, Batch, L[32]]]


class RNNModel(nn.Module):
    def __init__(self, ntoken: int, ninp: int, nhid: int, nlayers: int, dropout: float = 0.5, tie_weights: bool = True) -> None:
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding[L[50], L[32]](ntoken, ninp)
        # port: the sizes are the type arguments (the recurrent layers take no int beside a
        # literal type argument); checked against the arguments here instead
        assert (ninp, nhid) == (32, 32)
        self.rnn = nn.LSTM[L[32], L[32]](num_layers=nlayers, dropout=dropout)
        if tie_weights:
            assert nhid == ninp, "When using the tied flag, nhid must be equal to emsize"
        # the decoder is the encoder's table, transposed (shapegrad's Linear.weight is (in, out))
        # port: the bias's size stated (ntoken is an int argument)
        self.decoder_bias = nn.parameter(sg.cast(sg.zeros(ntoken), Tensor[NoTape, L[50]]))
        self.nlayers = nlayers
        self.nhid = nhid
        self.init_weights()

    def init_weights(self) -> None:
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder_bias)

    def __call__(self, input: Tensor[T, Batch, Seq], hidden: Hidden[T]) -> tuple[Tensor[T, Batch, Seq, L[50]], Hidden[T]]:
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = output @ self.encoder.weight.T + self.decoder_bias
        # port: log_softmax over the last axis of (B, S, V); nll_loss takes it with (B, S)
        # labels, so no reshape to (-1, V)
        return decoded.log_softmax(axis=-1), hidden

    def init_hidden(self, bsz: int) -> Hidden[NoTape]:
        # port: the state's sizes stated (the width from an int: Open otherwise)
        shape = Tensor[NoTape, sg.Open, Batch, L[32]]
        return (
            sg.cast(sg.zeros(self.nlayers, Batch(bsz), self.nhid), shape),
            sg.cast(sg.zeros(self.nlayers, Batch(bsz), self.nhid), shape),
        )


def repackage_hidden(h: Hidden[T]) -> Hidden[NoTape]:
    """Wraps hidden states in new tensors, to detach them from their history."""
    return h[0].detach(), h[1].detach()  # port: a pair, not tuple(generator), keeps its type


def main() -> None:
    sg.seed(1111)
    model = RNNModel(NTOKEN, NINP, NHID, NLAYERS, dropout=0.2)
    grads = model.alloc_grads()
    opt = sg.optim.Sgd(model, lr=20.0, clip_norm=0.25)
    batch_size, bptt = 4, 6
    data = sg.randint(0, NTOKEN, (Batch(batch_size), 3 * bptt + 1))  # port: a named size (the other is Open)
    hidden = model.init_hidden(batch_size)
    model.train()
    for i in range(0, 3 * bptt, bptt):
        # port: a window of bptt steps is the model's Seq (a computed slice is open)
        source = sg.cast(data[:, i : i + bptt], Tensor[NoTape, Batch, Seq])
        targets = sg.cast(data[:, i + 1 : i + 1 + bptt], Tensor[NoTape, Batch, Seq])
        hidden = repackage_hidden(hidden)
        grads.zero()
        output, hidden = model(source.trace(grads), hidden)
        loss = sg.losses.nll_loss(output, targets)
        loss.backward()
        opt.update(model, grads)
        print(loss.item())


if __name__ == "__main__":
    main()
