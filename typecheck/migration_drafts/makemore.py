"""First draft: character-level models in the style of makemore (karpathy/makemore): the
Bengio-style MLP over a context window, and the RNN with a hand-written GRU cell and a learned
start state, written the way a PyTorch user writes them after skimming shapegrad's docs."""

from dataclasses import dataclass
from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad import nn

T = TypeVar("T")


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
        embs = []
        for _ in range(self.block_size):
            tok_emb = self.wte(idx)
            idx = idx.roll(1, 1)
            idx[:, 0] = self.vocab_size
            embs.append(tok_emb)
        x = sg.concat(embs, axis=-1)
        logits = self.mlp(x)
        return logits


class GRUCell(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        self.xh_to_z = nn.Linear[L[48], L[32]](config.n_embd + config.n_embd2, config.n_embd2)
        self.xh_to_r = nn.Linear[L[48], L[32]](config.n_embd + config.n_embd2, config.n_embd2)
        self.xh_to_hbar = nn.Linear[L[48], L[32]](config.n_embd + config.n_embd2, config.n_embd2)

    def __call__(self, xt: Tensor[T, Batch, L[16]], hprev: Tensor[T, Batch, L[32]]) -> Tensor[T, Batch, L[32]]:
        xh = sg.concat([xt, hprev], axis=1)
        r = self.xh_to_r(xh).sigmoid()
        hprev_reset = r * hprev
        xhr = sg.concat([xt, hprev_reset], axis=1)
        hbar = self.xh_to_hbar(xhr).tanh()
        z = self.xh_to_z(xh).sigmoid()
        ht = (1 - z) * hprev + z * hbar
        return ht


class RNN(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        self.start = nn.parameter(sg.zeros(1, config.n_embd2))
        self.wte = nn.Embedding[L[27], L[16]](config.vocab_size, config.n_embd)
        self.cell = GRUCell(config)
        self.lm_head = nn.Linear[L[32], L[27]](config.n_embd2, config.vocab_size)

    def __call__(self, idx: Tensor[T, Batch, Seq]) -> Tensor[T, Batch, Seq, L[27]]:
        b, t = idx.shape
        emb = self.wte(idx)
        hprev = self.start.broadcast_to((b, self.start.shape[1]))
        hiddens = []
        for i in range(t):
            xt = emb[:, i, :]
            ht = self.cell(xt, hprev)
            hprev = ht
            hiddens.append(ht)
        hidden = sg.stack(hiddens, axis=1)
        logits = self.lm_head(hidden)
        return logits


def train(model: MLP | RNN, x: Tensor[NoTape, Batch, Seq], y: Tensor[NoTape, Batch, Seq]) -> float:
    grads = model.alloc_grads()
    opt = sg.optim.AdamW(model, lr=5e-4, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.01)
    loss_value = 0.0
    for _ in range(2):
        grads.zero()
        logits = model(x.trace(grads))
        loss = sg.losses.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=-1)
        loss.backward()
        opt.update(model, grads)
        loss_value = loss.item()
    return loss_value


def main() -> None:
    sg.seed(0)
    config = ModelConfig()
    x = sg.randint(0, config.vocab_size, (4, config.block_size))
    y = sg.randint(0, config.vocab_size, (4, config.block_size))
    print(train(MLP(config), x, y), train(RNN(config), x, y))


if __name__ == "__main__":
    main()
