"""A GPT in the style of nanoGPT (karpathy/nanoGPT model.py), ported to shapegrad: causal
self-attention written out (the non-flash path), a 4× GELU MLP, pre-norm blocks, the head tied
to the token embedding, the scaled c_proj initialisation, AdamW with decay groups, generation
with top-k. The first draft is typecheck/migration_drafts/nanogpt.py; each change from it is
marked "# port:" (what our docs say to write) or "# until #23 §N lands:"."""

import math
from dataclasses import dataclass
from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad import nn

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


class Heads(sg.Dim): ...


class HeadSize(sg.Dim): ...


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
        # port: a (block, block) causal mask; it broadcasts against (B, H, S, S) scores
        self.bias = sg.tril(sg.ones(config.block_size, config.block_size))

    def __call__(self, x: Tensor[T, Batch, Seq, L[32]]) -> Tensor[T, Batch, Seq, L[32]]:
        B, S, C = x.shape
        # port: split at axis -1 (typed; axis 2 of a rank-3 tensor is not)
        q, k, v = self.c_attn(x).split(self.n_embd, axis=-1)
        # port: the head split to named dims (reshape keeps sg.Dim sizes), transposed by permute
        # (typed for every permutation; swapaxes(1, 2) is not)
        shape = Batch(B), Seq(S), Heads(self.n_head), HeadSize(C // self.n_head)
        k = k.reshape(*shape).permute(0, 2, 1, 3)
        q = q.reshape(*shape).permute(0, 2, 1, 3)
        v = v.reshape(*shape).permute(0, 2, 1, 3)
        att = (q @ k.mT) * (1.0 / math.sqrt(k.shape[-1]))  # port: .mT for swapaxes(-2, -1)
        att = att.masked_fill(self.bias[:S, :S] == 0, float("-inf"))
        att = att.softmax(axis=-1)
        att = self.attn_dropout(att)
        y = att @ v
        # port: the heads joined again: Heads × HeadSize is 32, a product Python cannot compute
        y = sg.cast(y.permute(0, 2, 1, 3).reshape(B, S, C), Tensor[T, Batch, Seq, L[32]])
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
        # port: the positions are the sequence's (arange gives an open size)
        pos = sg.cast(sg.arange(0, t), Tensor[NoTape, Seq])
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
        # port: cross_entropy takes (B, S, V) logits with (B, S) labels, no reshape to (-1, V)
        return sg.losses.cross_entropy(logits, targets, ignore_index=-1)

    @sg.no_grad()  # port: nanoGPT's @torch.no_grad(), which the first draft left out
    def generate(self, idx: Tensor[NoTape, Batch, Seq], max_new_tokens: int, temperature: float = 1.0, top_k: int = 5):
        for _ in range(max_new_tokens):
            block = self.config.block_size
            # port: the last block_size tokens are still a Seq (a computed slice is open)
            idx_cond = idx if idx.shape[1] <= block else sg.cast(idx[:, -block:], Tensor[NoTape, Batch, Seq])
            logits = self(idx_cond)[:, -1, :] / temperature
            v, _ = logits.topk(top_k)
            # port: v[:, -1:] (a size-1 column) for v[:, [-1]], whose one-element list is an open size
            logits = logits.masked_fill(logits < v[:, -1:], float("-inf"))
            probs = logits.softmax(axis=-1)
            idx_next = probs.multinomial(1)
            # port: the longer sequence is still a Seq (the joined axis of a list is open)
            idx = sg.cast(sg.concat([idx, idx_next], axis=1), Tensor[NoTape, Batch, Seq])
        return idx


def main() -> None:
    sg.seed(0)
    config = GPTConfig()
    model = GPT(config)
    decay = sg.optim.Group(select=lambda path, p: p.ndim >= 2, weight_decay=0.1)
    no_decay = sg.optim.Group(select=lambda path, p: p.ndim < 2, weight_decay=0.0)
    opt = sg.optim.AdamW(model, lr=1e-3, betas=(0.9, 0.95), groups=[decay, no_decay])
    grads = model.alloc_grads()
    x = sg.randint(0, config.vocab_size, (Batch(4), Seq(config.block_size)))  # port: named sizes
    y = sg.randint(0, config.vocab_size, (Batch(4), Seq(config.block_size)))
    for _ in range(2):
        grads.zero()
        loss = model.loss(x.trace(grads), y)
        loss.backward()
        opt.update(model, grads)
    out = model.generate(x[:, : Seq(4)], max_new_tokens=3)  # port: a Dim stop keeps the Seq
    assert out.shape == (4, 7)


if __name__ == "__main__":
    main()
