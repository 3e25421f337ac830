"""The PyTorch twin of ``examples/gpt.py``: the same architecture, built from the shapegrad
model's weights, so that both can train from one initialisation (a loss-curve check in
``tests/test_gpt_twin.py``) and be timed side by side (``run.py``'s GPT row).

Layouts: shapegrad's ``Linear.weight`` is ``(in, out)`` (PyTorch's is the transpose); its
attention keeps q, k and v as three projections (PyTorch packs them in ``in_proj``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import gpt  # noqa: E402


def _t(array: Any) -> Any:
    import torch

    return torch.tensor(np.asarray(array.numpy()))


def copy_encoder_block(mine: Any, block: Any) -> None:
    """A shapegrad ``TransformerEncoderBlock``'s weights into a PyTorch
    ``TransformerEncoderLayer(norm_first=True, batch_first=True)``."""
    import torch

    attention = mine.attention
    with torch.no_grad():
        block.self_attn.in_proj_weight.copy_(torch.cat([_t(getattr(attention, f"{n}_proj").weight).T for n in "qkv"]))
        block.self_attn.in_proj_bias.copy_(torch.cat([_t(getattr(attention, f"{n}_proj").bias) for n in "qkv"]))
        block.self_attn.out_proj.weight.copy_(_t(attention.out_proj.weight).T)
        block.self_attn.out_proj.bias.copy_(_t(attention.out_proj.bias))
        for torch_norm, our_norm in ((block.norm1, mine.norm1), (block.norm2, mine.norm2)):
            torch_norm.weight.copy_(_t(our_norm.weight))
            torch_norm.bias.copy_(_t(our_norm.bias))
        block.linear1.weight.copy_(_t(mine.ff_in.weight).T)
        block.linear1.bias.copy_(_t(mine.ff_in.bias))
        block.linear2.weight.copy_(_t(mine.ff_out.weight).T)
        block.linear2.bias.copy_(_t(mine.ff_out.bias))


def torch_gpt(ours: gpt.GPT) -> Any:
    """A ``torch.nn.Module`` with ``ours``'s weights, computing the same function."""
    import torch

    class TorchGPT(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tokens = torch.nn.Embedding(gpt.VOCAB, gpt.WIDTH)
            self.positions = torch.nn.Parameter(torch.zeros(gpt.CONTEXT, gpt.WIDTH))
            self.blocks = torch.nn.ModuleList(
                torch.nn.TransformerEncoderLayer(
                    gpt.WIDTH,
                    block.attention.num_heads,
                    block.ff_in.out_features,
                    dropout=0.0,
                    activation="gelu",
                    batch_first=True,
                    norm_first=True,
                )
                for block in ours.blocks
            )
            self.norm = torch.nn.LayerNorm(gpt.WIDTH)
            mask = torch.triu(torch.ones(gpt.CONTEXT, gpt.CONTEXT, dtype=torch.bool), diagonal=1)
            self.register_buffer("mask", mask)

        def forward(self, ids: Any) -> Any:
            h = self.tokens(ids) + self.positions
            for block in self.blocks:
                h = block(h, src_mask=self.mask, is_causal=True)
            return self.norm(h) @ self.tokens.weight.T  # the head tied to the embedding

    theirs = TorchGPT()
    with torch.no_grad():
        theirs.tokens.weight.copy_(_t(ours.tokens.weight))
        theirs.positions.copy_(_t(ours.positions))
        for mine, block in zip(ours.blocks, theirs.blocks, strict=True):
            copy_encoder_block(mine, block)
        theirs.norm.weight.copy_(_t(ours.norm.weight))
        theirs.norm.bias.copy_(_t(ours.norm.bias))
    return theirs


def torch_step(model: Any, opt: Any, ids: Any, targets: Any, clip: float = 1.0) -> float:
    """One AdamW step with gradient clipping, as the example's."""
    import torch

    opt.zero_grad(set_to_none=False)
    logits = model(ids)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, gpt.VOCAB), targets.reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()
    return float(loss.detach())
