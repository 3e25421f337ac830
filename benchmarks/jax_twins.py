"""The JAX twins of ``workloads.py``'s models: pure functions of a pytree of weights copied
from shapegrad's model (its ``Linear.weight`` is ``(in, out)``, as ``x @ w`` wants; its
convolutions ``(out, in, kh, kw)``, as ``OIHW``), so that each twin starts where ours does.

``workloads.py`` builds a jitted Adam step from them (``peers.jax_train_step``) or, for
decoding, a jitted forward pass and argmax, checks them against shapegrad, and ``run.py``
times them as the "JAX jit" column. Every function here imports jax lazily: ``run.py`` sets
``XLA_FLAGS`` (one thread) before jax's first import.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

Params = dict[str, Any]


def _array(tensor: Any) -> np.ndarray:
    # A copy: shapegrad's optimizer updates its weights in place when it trains.
    return np.array(tensor.numpy(), dtype=np.float32, copy=True)


def linear(layer: Any) -> Params:
    return {"w": _array(layer.weight), "b": _array(layer.bias)}


def norm(layer: Any) -> Params:
    return {"w": _array(layer.weight), "b": _array(layer.bias)}


def encoder_block(block: Any) -> Params:
    attention = block.attention
    weights = {name: linear(getattr(attention, f"{name}_proj")) for name in ("q", "k", "v", "out")}
    return {
        "attention": weights,
        "norm1": norm(block.norm1),
        "norm2": norm(block.norm2),
        "ff_in": linear(block.ff_in),
        "ff_out": linear(block.ff_out),
    }


# --------------------------------------------------------------------------- layers
def _dense(p: Params, x: Any) -> Any:
    return x @ p["w"] + p["b"]


def _layer_norm(p: Params, x: Any, eps: float = 1e-5) -> Any:
    import jax.numpy as jnp

    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * p["w"] + p["b"]


def _attention(p: Params, x: Any, heads: int, causal: bool) -> Any:
    import jax
    import jax.numpy as jnp

    b, length, d = x.shape

    def split(t: Any) -> Any:
        return t.reshape(b, length, heads, d // heads).transpose(0, 2, 1, 3)

    q, k, v = (split(_dense(p[name], x)) for name in ("q", "k", "v"))
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(d // heads)
    if causal:
        scores = jnp.where(jnp.tril(jnp.ones((length, length), dtype=bool)), scores, -jnp.inf)
    attended = jax.nn.softmax(scores, axis=-1) @ v
    return _dense(p["out"], attended.transpose(0, 2, 1, 3).reshape(b, length, d))


def _encoder_block(p: Params, x: Any, heads: int, causal: bool = False) -> Any:
    """Pre-norm, exact GELU: as ``nn.TransformerEncoderBlock(approximate="none")``."""
    import jax

    h = x + _attention(p["attention"], _layer_norm(p["norm1"], x), heads, causal)
    hidden = jax.nn.gelu(_dense(p["ff_in"], _layer_norm(p["norm2"], h)), approximate=False)
    return h + _dense(p["ff_out"], hidden)


# --------------------------------------------------------------------------- models
def cifar_cnn_params(model: Any) -> Params:
    convs = [{"w": _array(c.weight), "b": _array(c.bias)} for c in (model.conv1, model.conv2, model.conv3)]
    return {"convs": convs, "head": linear(model.head)}


def cifar_cnn(p: Params, x: Any) -> Any:
    import jax

    h = x
    for conv in p["convs"]:
        h = jax.lax.conv_general_dilated(
            h, conv["w"], (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NCHW", "OIHW", "NCHW")
        )
        h = jax.nn.relu(h + conv["b"][None, :, None, None])
        b, c, height, width = h.shape  # 2×2 max pooling
        h = h.reshape(b, c, height // 2, 2, width // 2, 2).max(axis=(3, 5))
    return _dense(p["head"], h.reshape(h.shape[0], -1))


def hand_gru_params(model: Any) -> Params:
    return {"x_gates": linear(model.x_gates), "h_gates": linear(model.h_gates), "head": linear(model.head)}


def hand_gru(p: Params, xs: Any) -> Any:
    import jax
    import jax.numpy as jnp

    n = p["h_gates"]["w"].shape[0]
    h = jnp.zeros((xs.shape[0], n), xs.dtype)
    for t in range(xs.shape[1]):  # unrolled, as ours and PyTorch's
        gx, gh = _dense(p["x_gates"], xs[:, t]), _dense(p["h_gates"], h)
        r = jax.nn.sigmoid(gx[:, :n] + gh[:, :n])
        z = jax.nn.sigmoid(gx[:, n : 2 * n] + gh[:, n : 2 * n])
        candidate = jnp.tanh(gx[:, 2 * n :] + r * gh[:, 2 * n :])
        h = (1 - z) * candidate + z * h
    return _dense(p["head"], h)


def tiny_vit_params(model: Any) -> Params:
    return {
        "embed": linear(model.embed),
        "positions": _array(model.positions),
        "blocks": [encoder_block(b) for b in model.blocks],
        "norm": norm(model.norm),
        "head": linear(model.head),
    }


def tiny_vit(p: Params, patches: Any, heads: int = 4) -> Any:
    h = _dense(p["embed"], patches) + p["positions"]
    for block in p["blocks"]:
        h = _encoder_block(block, h, heads)
    return _dense(p["head"], _layer_norm(p["norm"], h).mean(1))


def wide_mlp_params(model: Any) -> Params:
    return {"layers": [linear(layer) for layer in (model.l1, model.l2, model.l3)]}


def wide_mlp(p: Params, x: Any) -> Any:
    import jax

    first, second, head = p["layers"]
    return _dense(head, jax.nn.relu(_dense(second, jax.nn.relu(_dense(first, x)))))


def gpt_params(model: Any) -> Params:
    return {
        "tokens": _array(model.tokens.weight),
        "positions": _array(model.positions),
        "blocks": [encoder_block(b) for b in model.blocks],
        "norm": norm(model.norm),
        "heads": [b.attention.num_heads for b in model.blocks],
    }


def gpt_next_token(model: Any) -> Any:
    """``examples/gpt.py``'s model as a jitted ``ids (batch, context) → argmax of each
    sequence's last position's logits`` (the head tied to the token embedding)."""
    import jax
    import jax.numpy as jnp

    p = gpt_params(model)
    heads = p.pop("heads")
    weights = jax.tree.map(jnp.asarray, p)

    @jax.jit
    def next_token(ps: Params, ids: Any) -> Any:
        h = ps["tokens"][ids] + ps["positions"]
        for block, n in zip(ps["blocks"], heads, strict=True):
            h = _encoder_block(block, h, n, causal=True)
        logits = _layer_norm(ps["norm"], h) @ ps["tokens"].T
        return logits[:, -1].argmax(-1)

    return lambda ids: next_token(weights, ids)
