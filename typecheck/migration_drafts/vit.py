"""First draft: a Vision Transformer in the style of lucidrains/vit-pytorch (vit.py): patches cut
by reshape/permute (einops' Rearrange written out) or by a strided Conv2d, a learned cls token
joined in front, a learned positional embedding, pre-norm blocks with multi-head attention
written by hand, an MLP head; written the way a PyTorch user writes it after skimming
shapegrad's README and docs/migration.md."""

from dataclasses import dataclass
from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad import nn

T = TypeVar("T")


class Batch(sg.Dim): ...


@dataclass
class ViTConfig:
    image_size: int = 16
    patch_size: int = 4
    channels: int = 3
    num_classes: int = 10
    dim: int = 32
    depth: int = 2
    heads: int = 4
    dim_head: int = 8
    mlp_dim: int = 64
    pool: str = "cls"
    dropout: float = 0.0
    emb_dropout: float = 0.0
    conv_stem: bool = False


# 16x16 images in 4x4 patches: 16 patches of 3*4*4 = 48 values, plus the cls token
NUM_PATCHES = 16
TOKENS = 17


class FeedForward(nn.Module):
    def __init__(self, dim: int, hidden_dim: int, dropout: float = 0.0) -> None:
        self.net = nn.Sequential(
            nn.LayerNorm[L[32]](dim),
            nn.Linear[L[32], L[64]](dim, hidden_dim),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear[L[64], L[32]](hidden_dim, dim),
            nn.Dropout(dropout),
        )

    def __call__(self, x: Tensor[T, Batch, L[17], L[32]]) -> Tensor[T, Batch, L[17], L[32]]:
        return self.net(x)


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int = 8, dim_head: int = 64, dropout: float = 0.0) -> None:
        inner_dim = dim_head * heads
        self.heads = heads
        self.scale = dim_head**-0.5
        self.norm = nn.LayerNorm[L[32]](dim)
        self.dropout = nn.Dropout(dropout)
        self.to_qkv = nn.Linear[L[32], L[96]](dim, inner_dim * 3, bias=False)
        self.to_out = nn.Sequential(nn.Linear[L[32], L[32]](inner_dim, dim), nn.Dropout(dropout))

    def __call__(self, x: Tensor[T, Batch, L[17], L[32]]) -> Tensor[T, Batch, L[17], L[32]]:
        x = self.norm(x)
        B, N, _ = x.shape
        q, k, v = self.to_qkv(x).chunk(3, axis=-1)
        # 'b n (h d) -> b h n d'
        q = q.reshape(B, N, self.heads, -1).permute(0, 2, 1, 3)
        k = k.reshape(B, N, self.heads, -1).permute(0, 2, 1, 3)
        v = v.reshape(B, N, self.heads, -1).permute(0, 2, 1, 3)
        dots = (q @ k.swapaxes(-1, -2)) * self.scale
        attn = dots.softmax(axis=-1)
        attn = self.dropout(attn)
        out = attn @ v
        # 'b h n d -> b n (h d)'
        out = out.permute(0, 2, 1, 3).reshape(B, N, -1)
        return self.to_out(out)


class Transformer(nn.Module):
    def __init__(self, dim: int, depth: int, heads: int, dim_head: int, mlp_dim: int, dropout: float = 0.0) -> None:
        self.norm = nn.LayerNorm[L[32]](dim)
        self.layers = []
        for _ in range(depth):
            self.layers.append([Attention(dim, heads, dim_head, dropout), FeedForward(dim, mlp_dim, dropout)])

    def __call__(self, x: Tensor[T, Batch, L[17], L[32]]) -> Tensor[T, Batch, L[17], L[32]]:
        for attn, ff in self.layers:
            x = attn(x) + x
            x = ff(x) + x
        return self.norm(x)


class ViT(nn.Module):
    def __init__(self, cfg: ViTConfig) -> None:
        assert cfg.image_size % cfg.patch_size == 0, "image dimensions must be divisible by the patch size"
        num_patches = (cfg.image_size // cfg.patch_size) ** 2
        patch_dim = cfg.channels * cfg.patch_size**2
        assert cfg.pool in {"cls", "mean"}
        self.patch_size = cfg.patch_size
        self.conv_stem = cfg.conv_stem
        if cfg.conv_stem:
            # the other stem (timm's PatchEmbed): one strided convolution
            self.proj = nn.Conv2d[L[3], L[32]](cfg.patch_size, stride=cfg.patch_size)
        else:
            # 'b c (h p1) (w p2) -> b (h w) (p1 p2 c)', then LayerNorm, Linear, LayerNorm
            self.to_patch_embedding = nn.Sequential(
                nn.LayerNorm[L[48]](patch_dim),
                nn.Linear[L[48], L[32]](patch_dim, cfg.dim),
                nn.LayerNorm[L[32]](cfg.dim),
            )
        self.pos_embedding = nn.parameter(sg.randn(1, num_patches + 1, cfg.dim))
        self.cls_token = nn.parameter(sg.randn(1, 1, cfg.dim))
        self.dropout = nn.Dropout(cfg.emb_dropout)
        self.transformer = Transformer(cfg.dim, cfg.depth, cfg.heads, cfg.dim_head, cfg.mlp_dim, cfg.dropout)
        self.pool = cfg.pool
        self.mlp_head = nn.Linear[L[32], L[10]](cfg.dim, cfg.num_classes)

    def patchify(self, img: Tensor[T, Batch, L[3], L[16], L[16]]) -> Tensor[T, Batch, L[16], L[48]]:
        B, C, H, W = img.shape
        p = self.patch_size
        x = img.reshape(B, C, H // p, p, W // p, p)
        x = x.permute(0, 2, 4, 3, 5, 1)  # b h w p1 p2 c
        return x.reshape(B, (H // p) * (W // p), p * p * C)

    def embed(self, img: Tensor[T, Batch, L[3], L[16], L[16]]) -> Tensor[T, Batch, L[16], L[32]]:
        if self.conv_stem:
            x = self.proj(img)  # (B, 32, 4, 4)
            B, C, _, _ = x.shape
            return x.reshape(B, C, -1).swapaxes(1, 2)
        return self.to_patch_embedding(self.patchify(img))

    def __call__(self, img: Tensor[T, Batch, L[3], L[16], L[16]]) -> Tensor[T, Batch, L[10]]:
        x = self.embed(img)
        b, n, _ = x.shape
        cls_tokens = self.cls_token.broadcast_to((b, 1, self.cls_token.shape[-1]))
        x = sg.concat((cls_tokens, x), axis=1)
        x = x + self.pos_embedding[:, : (n + 1)]
        x = self.dropout(x)
        x = self.transformer(x)
        x = x.mean(axis=1) if self.pool == "mean" else x[:, 0]
        return self.mlp_head(x)


def train(cfg: ViTConfig) -> float:
    model = ViT(cfg)
    grads = model.alloc_grads()
    opt = sg.optim.Adam(model, lr=3e-4)
    img = sg.randn(8, 3, 16, 16)
    labels = sg.randint(0, cfg.num_classes, (8,))
    loss_value = 0.0
    for _ in range(2):
        grads.zero()
        preds = model(img.trace(grads))
        loss = sg.losses.cross_entropy(preds, labels)
        loss.backward()
        opt.update(model, grads)
        loss_value = loss.item()
    model.eval()
    preds = model(img)
    assert preds.shape == (8, 10)
    return loss_value


def main() -> None:
    sg.seed(0)
    print(train(ViTConfig()), train(ViTConfig(pool="mean", conv_stem=True)))


if __name__ == "__main__":
    main()
