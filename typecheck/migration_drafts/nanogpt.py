"""First draft: a GPT in the style of nanoGPT (karpathy/nanoGPT model.py), written the way a
PyTorch user writes it after skimming shapegrad's README and docs/migration.md."""

import math
from dataclasses import dataclass
from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad import nn

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


@dataclass
class GPTConfig:
    block_size: int = 16
    vocab_size: int = 65
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 32
    dropout: float = 0.0
    bias: bool = True


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear[L[32], L[96]](config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear[L[32], L[32]](config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.bias = sg.tril(sg.ones(config.block_size, config.block_size)).reshape(
            1, 1, config.block_size, config.block_size
        )

    def __call__(self, x: Tensor[T, Batch, Seq, L[32]]) -> Tensor[T, Batch, Seq, L[32]]:
        B, S, C = x.shape
        q, k, v = self.c_attn(x).split(self.n_embd, axis=2)
        k = k.reshape(B, S, self.n_head, C // self.n_head).swapaxes(1, 2)
        q = q.reshape(B, S, self.n_head, C // self.n_head).swapaxes(1, 2)
        v = v.reshape(B, S, self.n_head, C // self.n_head).swapaxes(1, 2)
        att = (q @ k.swapaxes(-2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
        att = att.masked_fill(self.bias[:, :, :S, :S] == 0, float("-inf"))
        att = att.softmax(axis=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.swapaxes(1, 2).reshape(B, S, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        self.c_fc = nn.Linear[L[32], L[128]](config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear[L[128], L[32]](4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def __call__(self, x: Tensor[T, Batch, Seq, L[32]]) -> Tensor[T, Batch, Seq, L[32]]:
        return self.dropout(self.c_proj(self.c_fc(x).gelu(approximate="none")))


class Block(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        self.ln_1 = nn.LayerNorm[L[32]](config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm[L[32]](config.n_embd)
        self.mlp = MLP(config)

    def __call__(self, x: Tensor[T, Batch, Seq, L[32]]) -> Tensor[T, Batch, Seq, L[32]]:
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        self.config = config
        self.wte = nn.Embedding[L[65], L[32]](config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding[L[16], L[32]](config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.h = [Block(config) for _ in range(config.n_layer)]
        self.ln_f = nn.LayerNorm[L[32]](config.n_embd)
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def __call__(self, idx: Tensor[T, Batch, Seq]) -> Tensor[T, Batch, Seq, L[65]]:
        b, t = idx.shape
        assert t <= self.config.block_size
        pos = sg.arange(0, t)
        tok_emb = self.wte(idx)
        pos_emb = self.wpe(pos)
        x = self.drop(tok_emb + pos_emb)
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        # the head is tied to the token embedding: (B, S, D) @ (D, V)
        logits = x @ self.wte.weight.T
        return logits

    def loss(self, idx: Tensor[T, Batch, Seq], targets: Tensor[NoTape, Batch, Seq]) -> Tensor[T]:
        logits = self(idx)
        return sg.losses.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-1
        )

    def generate(self, idx: Tensor[NoTape, Batch, Seq], max_new_tokens: int, temperature: float = 1.0, top_k: int = 5):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.shape[1] <= self.config.block_size else idx[:, -self.config.block_size :]
            logits = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            v, _ = logits.topk(top_k)
            logits = logits.masked_fill(logits < v[:, [-1]], float("-inf"))
            probs = logits.softmax(axis=-1)
            idx_next = probs.multinomial(1)
            idx = sg.concat([idx, idx_next], axis=1)
        return idx


def main() -> None:
    sg.seed(0)
    config = GPTConfig()
    model = GPT(config)
    decay = sg.optim.Group(select=lambda path, p: p.ndim >= 2, weight_decay=0.1)
    no_decay = sg.optim.Group(select=lambda path, p: p.ndim < 2, weight_decay=0.0)
    opt = sg.optim.AdamW(model, lr=1e-3, betas=(0.9, 0.95), groups=[decay, no_decay])
    grads = model.alloc_grads()
    x = sg.randint(0, config.vocab_size, (4, config.block_size))
    y = sg.randint(0, config.vocab_size, (4, config.block_size))
    for _ in range(2):
        grads.zero()
        loss = model.loss(x.trace(grads), y)
        loss.backward()
        opt.update(model, grads)
    out = model.generate(x[:, :4], max_new_tokens=3)
    assert out.shape == (4, 7)


if __name__ == "__main__":
    main()
