"""Character-level models in the style of makemore (karpathy/makemore), ported to shapegrad:
the Bengio-style MLP over a context window (each earlier token embedded, the embeddings
joined), and the RNN with a hand-written GRU cell and a learned start state; AdamW, a couple of
steps on random words. The first draft is typecheck/migration_drafts/makemore.py; each change
from it is marked "# port:" (what our docs say to write) or "# until #23 §N lands:"."""

from dataclasses import dataclass
from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Sum, Tensor
from shapegrad import nn

T = TypeVar("T")
# port: train() takes either model and its Gradients: a TypeVar, so that they are one model's
M = TypeVar("M", bound="MLP | RNN")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


@dataclass
class ModelConfig:
    block_size: int = 8
    vocab_size: int = 27
    n_embd: int = 16
    n_embd2: int = 32


class MLP(nn.Module):
    """Takes the previous block_size tokens, embeds each, concatenates them and predicts the next."""

    def __init__(self, config: ModelConfig) -> None:
        self.block_size = config.block_size
        self.vocab_size = config.vocab_size
        # one extra token: the "blank" before the start of the word
        self.wte = nn.Embedding[L[28], L[16]](config.vocab_size + 1, config.n_embd)
        self.mlp = nn.Sequential(
            nn.Linear[L[128], L[32]](config.block_size * config.n_embd, config.n_embd2),
            nn.Tanh(),
            nn.Linear[L[32], L[27]](config.n_embd2, config.vocab_size),
        )

    def __call__(self, idx: Tensor[T, Batch, Seq]) -> Tensor[T, Batch, Seq, L[27]]:
        embs: list[Tensor[T, Batch, Seq, L[16]]] = []  # port: strict mode wants the list's type
        for _ in range(self.block_size):
            tok_emb = self.wte(idx)
            # port: a functional update (idx is traced: an in-place write would corrupt its tape)
            idx = idx.roll(1, 1).at[:, 0].set(self.vocab_size)
            embs.append(tok_emb)
        # port: block_size embeddings of 16 side by side are 128 wide (a list's joined axis is open)
        x = sg.cast(sg.concat(embs, axis=-1), Tensor[T, Batch, Seq, L[128]])
        logits = self.mlp(x)
        return logits


class GRUCell(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        # port: the input is [x, h] joined, Sum[L[16], L[32]] wide (a concat of a tuple pair)
        self.xh_to_z = nn.Linear[Sum[L[16], L[32]], L[32]](config.n_embd + config.n_embd2, config.n_embd2)
        self.xh_to_r = nn.Linear[Sum[L[16], L[32]], L[32]](config.n_embd + config.n_embd2, config.n_embd2)
        self.xh_to_hbar = nn.Linear[Sum[L[16], L[32]], L[32]](config.n_embd + config.n_embd2, config.n_embd2)

    def __call__(self, xt: Tensor[T, Batch, L[16]], hprev: Tensor[T, Batch, L[32]]) -> Tensor[T, Batch, L[32]]:
        xh = sg.concat((xt, hprev), axis=1)  # port: a tuple pair, not a list
        r = self.xh_to_r(xh).sigmoid()
        hprev_reset = r * hprev
        xhr = sg.concat((xt, hprev_reset), axis=1)
        hbar = self.xh_to_hbar(xhr).tanh()
        z = self.xh_to_z(xh).sigmoid()
        ht = (1 - z) * hprev + z * hbar
        return ht


class RNN(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        # port: the start state's sizes stated (1 × n_embd2 from a config's int)
        self.start = nn.parameter(sg.cast(sg.zeros(1, config.n_embd2), Tensor[NoTape, L[1], L[32]]))
        self.wte = nn.Embedding[L[27], L[16]](config.vocab_size, config.n_embd)
        self.cell = GRUCell(config)
        self.lm_head = nn.Linear[L[32], L[27]](config.n_embd2, config.vocab_size)

    def __call__(self, idx: Tensor[T, Batch, Seq]) -> Tensor[T, Batch, Seq, L[27]]:
        b, t = idx.shape
        emb = self.wte(idx)
        # port: expanded to the batch (broadcast_to's sizes are open)
        hprev = sg.cast(self.start.broadcast_to(b, self.start.shape[1]), Tensor[NoTape, Batch, L[32]])
        hiddens: list[Tensor[T, Batch, L[32]]] = []  # port: strict mode wants the list's type
        for i in range(t):
            xt = emb[:, i, :]
            ht = self.cell(xt, hprev)
            hprev = ht
            hiddens.append(ht)
        # port: the t states stacked are the Seq (a list's stacked axis is open)
        hidden = sg.cast(sg.stack(hiddens, axis=1), Tensor[T, Batch, Seq, L[32]])
        logits = self.lm_head(hidden)
        return logits


def train(model: M, grads: sg.Gradients[M], x: Tensor[NoTape, Batch, Seq], y: Tensor[NoTape, Batch, Seq]) -> float:
    opt = sg.optim.AdamW(model, lr=5e-4, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.01)
    loss_value = 0.0
    for _ in range(2):
        grads.zero()
        logits = model(x.trace(grads))
        # port: cross_entropy takes (B, S, V) logits with (B, S) labels, no reshape to (-1, V)
        loss = sg.losses.cross_entropy(logits, y, ignore_index=-1)
        loss.backward()
        opt.update(model, grads)
        loss_value = loss.item()
    return loss_value


def main() -> None:
    sg.seed(0)
    config = ModelConfig()
    x = sg.randint(0, config.vocab_size, (Batch(4), Seq(config.block_size)))  # port: named sizes
    y = sg.randint(0, config.vocab_size, (Batch(4), Seq(config.block_size)))
    mlp, rnn = MLP(config), RNN(config)
    print(train(mlp, mlp.alloc_grads(), x, y), train(rnn, rnn.alloc_grads(), x, y))


if __name__ == "__main__":
    main()
