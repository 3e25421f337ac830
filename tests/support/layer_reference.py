"""Plain NumPy loops that define what each layer computes (slow, obviously right)."""

from __future__ import annotations

import numpy as np


def conv2d(
    x: np.ndarray, w: np.ndarray, b: np.ndarray | None, stride: int, padding: int, dilation: int, groups: int
) -> np.ndarray:
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    ho = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    wo = (wd + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, ho, wo))
    og = o // groups
    for bi in range(n):
        for oc in range(o):
            g = oc // og
            for i in range(ho):
                for j in range(wo):
                    total = 0.0
                    for ci in range(cg):
                        for p in range(kh):
                            for q in range(kw):
                                total += (
                                    w[oc, ci, p, q]
                                    * xp[bi, g * cg + ci, i * stride + p * dilation, j * stride + q * dilation]
                                )
                    out[bi, oc, i, j] = total + (b[oc] if b is not None else 0.0)
    return out


def conv_transpose2d(
    x: np.ndarray, w: np.ndarray, b: np.ndarray | None, stride: int, padding: int, output_padding: int
) -> np.ndarray:
    n, ci, h, wd = x.shape
    _, co, kh, kw = w.shape
    hf = (h - 1) * stride + kh + output_padding
    wf = (wd - 1) * stride + kw + output_padding
    full = np.zeros((n, co, hf, wf))
    for bi in range(n):
        for c in range(ci):
            for i in range(h):
                for j in range(wd):
                    full[bi, :, i * stride : i * stride + kh, j * stride : j * stride + kw] += x[bi, c, i, j] * w[c]
    out = full[:, :, padding : hf - padding, padding : wf - padding]
    return out + (b.reshape(1, -1, 1, 1) if b is not None else 0.0)


def pool2d(x: np.ndarray, k: int, stride: int, padding: int, how: str) -> np.ndarray:
    n, c, h, w = x.shape
    fill = -np.inf if how == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)), constant_values=fill)
    ho = (h + 2 * padding - k) // stride + 1
    wo = (w + 2 * padding - k) // stride + 1
    out = np.zeros((n, c, ho, wo))
    for i in range(ho):
        for j in range(wo):
            window = xp[:, :, i * stride : i * stride + k, j * stride : j * stride + k]
            out[:, :, i, j] = window.max(axis=(2, 3)) if how == "max" else window.mean(axis=(2, 3))
    return out


def attention(
    x: np.ndarray,
    wq: np.ndarray,
    bq: np.ndarray,
    wk: np.ndarray,
    bk: np.ndarray,
    wv: np.ndarray,
    bv: np.ndarray,
    wo: np.ndarray,
    bo: np.ndarray,
    heads: int,
    causal: bool,
) -> np.ndarray:
    b, length, d = x.shape
    dh = d // heads

    def split(t: np.ndarray) -> np.ndarray:
        return t.reshape(b, length, heads, dh).transpose(0, 2, 1, 3)

    q, k, v = split(x @ wq + bq), split(x @ wk + bk), split(x @ wv + bv)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dh)
    if causal:
        scores = np.where(np.tril(np.ones((length, length), bool)), scores, -1e9)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    weights = e / e.sum(-1, keepdims=True)
    out = (weights @ v).transpose(0, 2, 1, 3).reshape(b, length, d)
    return out @ wo + bo
