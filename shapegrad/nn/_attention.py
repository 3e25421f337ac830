"""Multi-head attention and a transformer encoder block."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal, NoReturn, cast, overload

import numpy as np
from typing_extensions import TypeVar

from .. import _hooks
from .._autodiff import NoTape
from .._backend import Backend
from .._bounded import remember
from .._dims import Open
from .._errors import CheckpointError, ShapeError
from .._tensor import AnyTensor, Tensor
from .._typevars import B, S, T
from ..ops import reductions
from ..ops._toolkit import integer, require_bool_mask
from ..ops.creation import Generator
from ..ops.elementwise import where
from ..ops.shape import swap_last
from ._activations import Dropout
from ._linear import Linear
from ._module import Layer
from ._norm import LayerNorm
from ._torch_config import expect_kind, same, supported

__all__ = ["MultiHeadAttention", "TransformerEncoderBlock", "scaled_dot_product_attention"]

D = TypeVar("D", default=Open)  # embed_dim given as a plain int: Open
Lq = TypeVar("Lq")
Lk = TypeVar("Lk")


Dk = TypeVar("Dk")
Dv = TypeVar("Dv")


def scaled_dot_product_attention(
    q: Tensor[T, *S, Lq, Dk],
    k: Tensor[T, *S, Lk, Dk],
    v: Tensor[T, *S, Lk, Dv],
    mask: Tensor[Any, *tuple[Any, ...]] | None = None,
    dropout: Callable[[Any], Any] | None = None,
) -> Tensor[T, *S, Lq, Dv]:
    """``softmax(q @ kᵀ / √d) @ v`` over the last two axes: ``(..., Lq, D)`` queries and
    ``(..., Lk, D)`` keys give ``(..., Lq, Dv)`` from ``(..., Lk, Dv)`` values (typed so);
    ``mask`` is boolean, ``True`` where attention is allowed; ``dropout`` applies to the
    attention weights. PyTorch: ``F.scaled_dot_product_attention`` (whose boolean mask means
    the same), except for a query whose keys are all masked: it gets the mean of the values
    (softmax's uniform row), where PyTorch's function gives zeros and ``nn.MultiheadAttention``
    NaN."""
    keys_t: AnyTensor = swap_last(k)
    products: AnyTensor = q @ keys_t
    # Scaling, masking and softmax as one op (one pass each way instead of three).
    weights: AnyTensor = reductions.softmax(products, -1, scale=1.0 / math.sqrt(q.shape[-1]), mask=mask)
    if dropout is not None:
        weights = dropout(weights)
    out: Any = weights @ v
    return out


def _build_causal_mask(lq: int, lk: int, backend: Backend) -> AnyTensor:
    """``(lq, lk)`` booleans, True where key ``j <= i`` (query ``i`` may attend to it)."""
    from ..ops.creation import arange

    rows: AnyTensor = arange(lq, backend=backend).reshape(lq, 1)
    cols: AnyTensor = arange(lk, backend=backend).reshape(1, lk)
    return cols <= rows


# (lq, lk, backend) -> the causal mask. Every call of a causal attention needs one, and its
# five untraced ops cost about as much as a small projection in a batch-1 decoding step.
# Bounded: a model sees a few sequence lengths; the mask is untraced and never written into
# (softmax reads it; no handle to it leaves this module but the softmax's saved values).
_causal_masks: dict[tuple[int, int, Backend], AnyTensor] = {}
_CAUSAL_MASKS_KEPT = 64


def causal_mask_of(lq: int, lk: int, backend: Backend) -> AnyTensor:
    """The causal mask of :func:`_build_causal_mask`, built once per ``(lq, lk, backend)``.
    Built afresh while ``sg.compile`` records a step: the recording must see the ops that
    make it (and an array made under it must not outlive the recording)."""
    if _hooks.recorder is not None:
        return _build_causal_mask(lq, lk, backend)
    key = (lq, lk, backend)
    mask = _causal_masks.get(key)
    if mask is None:
        mask = remember(_causal_masks, key, _build_causal_mask(lq, lk, backend), _CAUSAL_MASKS_KEPT)
    return mask


def _refuse(reason: str) -> NoReturn:
    raise CheckpointError(f"from_torch: {reason}")


def _check_mask(mask: AnyTensor, lq: int, lk: int) -> None:
    """Refuse an attention mask that softmax would take but read otherwise than PyTorch: a
    non-boolean one (selected by truth, so an additive 0/-inf mask would be inverted), and a
    3-D one, whose first axis would broadcast against the heads of the ``(B, heads, Lq, Lk)``
    scores (PyTorch's 3-D ``attn_mask`` is ``(B·heads, Lq, Lk)``; a per-batch ``(B, Lq, Lk)``
    would mask batch ``i``'s scores in head ``i``)."""
    require_bool_mask(mask, "MultiHeadAttention")
    if mask.ndim == 3:
        raise ShapeError(
            f"MultiHeadAttention: mask of shape {mask.shape}: expected ({lq}, {lk}) (Lq, Lk), or 4-D "
            f"(batch, heads or 1, {lq}, {lk}); a 3-D mask's first axis would meet the heads, not the batch: "
            "for a per-batch mask insert the heads axis (mask.reshape(batch, 1, Lq, Lk))"
        )


class MultiHeadAttention(Layer[D, D, D], checked=False):
    """Attention with ``num_heads`` heads over ``D`` features, as ``nn.MultiheadAttention``
    with ``batch_first=True``.

    Call with ``query`` alone for self-attention, or with ``key``/``value`` for
    cross-attention; ``mask`` (boolean ``(Lq, Lk)``, ``True`` = may attend) or
    ``causal=True`` restricts which keys each query sees.

    PyTorch's differs in its call: ``attn(query, key, value, attn_mask=m)`` returns
    ``(output, weights)`` (ours: the output alone, and ``key``/``value`` may be left out
    for self-attention), and its boolean ``attn_mask`` is ``True`` where attention is
    *not* allowed: pass ``mask=~m`` here. ``sg.nn.from_torch`` loads its weights: the
    packed ``in_proj_weight``/``in_proj_bias`` are split into ``q_proj``/``k_proj``/
    ``v_proj`` (:meth:`torch_unpack`); ``add_bias_kv``, ``add_zero_attn`` and
    ``kdim``/``vdim`` other than ``embed_dim`` have nothing to go into here and are refused.
    """

    def __init__(
        self,
        num_heads: int,
        embed_dim: D | int | None = None,
        *,
        dropout: float = 0.0,
        bias: bool = True,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None:
        self.embed_dim = self._size_arg(0, embed_dim, "embed_dim")
        num_heads = integer("MultiHeadAttention", "num_heads", num_heads)
        if num_heads < 1:
            raise ShapeError(f"MultiHeadAttention expects num_heads >= 1, found {num_heads}")
        if self.embed_dim % num_heads:
            raise ShapeError(
                f"MultiHeadAttention: embed_dim {self.embed_dim} is not divisible by num_heads {num_heads}"
            )
        self.num_heads = num_heads
        d = self.embed_dim
        self.q_proj = Linear[Any, Any](d, d, bias=bias, generator=generator, dtype=dtype)
        self.k_proj = Linear[Any, Any](d, d, bias=bias, generator=generator, dtype=dtype)
        self.v_proj = Linear[Any, Any](d, d, bias=bias, generator=generator, dtype=dtype)
        self.out_proj = Linear[Any, Any](d, d, bias=bias, generator=generator, dtype=dtype)
        self.dropout = Dropout[Any](dropout, generator=generator)

    def torch_unpack(self, name: str, array: np.ndarray[Any, Any], key: str) -> dict[str, np.ndarray[Any, Any]] | None:
        """PyTorch's packed ``in_proj_weight`` ``(3·E, E)`` / ``in_proj_bias`` ``(3·E,)`` as
        our ``q_proj``/``k_proj``/``v_proj`` (rows ``[0, E)``, ``[E, 2E)``, ``[2E, 3E)``; each
        weight still PyTorch's ``(out, in)``, which ``Linear.torch_layout`` transposes), and
        its separate ``q_proj_weight``/``k_proj_weight``/``v_proj_weight`` where they are
        ``(E, E)``. ``bias_k``/``bias_v`` and keys or values of another width are refused."""
        e = self.embed_dim
        if name in ("bias_k", "bias_v"):
            return _refuse(
                f"{key!r} is the learned {'key' if name == 'bias_k' else 'value'} bias that PyTorch's MultiheadAttention(add_bias_kv=True) "
                f"appends to the {'keys' if name == 'bias_k' else 'values'}; shapegrad's MultiHeadAttention has "
                "no such bias (build the PyTorch model with add_bias_kv=False)"
            )
        if name in ("in_proj_weight", "in_proj_bias"):
            expected = (3 * e, e) if name == "in_proj_weight" else (3 * e,)
            if tuple(array.shape) != expected:
                return _refuse(
                    f"{key!r} has shape {tuple(array.shape)}, expected {expected} (query, key and value "
                    f"projections stacked, for embed_dim {e})"
                )
            kind = "weight" if name == "in_proj_weight" else "bias"
            q, k, v = np.split(array, 3)
            return {f"q_proj.{kind}": q, f"k_proj.{kind}": k, f"v_proj.{kind}": v}
        if name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
            if tuple(array.shape) != (e, e):
                return _refuse(
                    f"{key!r} has shape {tuple(array.shape)}, expected ({e}, {e}): PyTorch's separate projection "
                    f"of {'kdim' if name[0] == 'k' else 'vdim' if name[0] == 'v' else 'embed_dim'} features; "
                    f"shapegrad's MultiHeadAttention projects queries, keys and values of embed_dim {e} "
                    "features only (no kdim/vdim)"
                )
            return {f"{name[0]}_proj.weight": array}
        return None

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch module other than ``nn.MultiheadAttention``, or one whose state dict fits but whose outputs
        would differ: ``add_zero_attn=True`` (a zero key and value appended) or another
        ``num_heads``."""
        expect_kind(torch_module, path, self, "MultiheadAttention")
        supported(torch_module, path, "add_zero_attn", False, "it appends a zero key and value to every sequence")
        same(torch_module, path, "num_heads", self.num_heads)

    def _heads(self, x: AnyTensor) -> Any:
        b, length, _ = x.shape
        split: AnyTensor = x.reshape(b, length, self.num_heads, self.embed_dim // self.num_heads)
        return split.permute(0, 2, 1, 3)

    # The result's tape follows query, key and value as a binary op's follows its operands:
    # one T (the tape is covariant, untraced its bottom), so an untraced query over traced
    # memory (cross-attention) gives a traced result. The last overload is the case pyright
    # does not solve with one T: an untraced query with memory of a caller's tape variable.
    # Built from a plain int (embed_dim Open), it takes any width, which the run time checks
    # against its projections; the result has the query's width.
    @overload
    def __call__(
        self: MultiHeadAttention[Open],
        query: Tensor[T, B, Lq, Dk],
        *,
        mask: Tensor[NoTape, Lq, Lq] | None = None,
        causal: bool = False,
    ) -> Tensor[T, B, Lq, Dk]: ...
    @overload
    def __call__(
        self: MultiHeadAttention[Open],
        query: Tensor[T, B, Lq, Dk],
        key: Tensor[T, B, Lk, Dk],
        value: Tensor[T, B, Lk, Dk],
        mask: Tensor[NoTape, Lq, Lk] | None = None,
        causal: bool = False,
    ) -> Tensor[T, B, Lq, Dk]: ...
    @overload
    def __call__(
        self, query: Tensor[T, B, Lq, D], *, mask: Tensor[NoTape, Lq, Lq] | None = None, causal: bool = False
    ) -> Tensor[T, B, Lq, D]: ...
    @overload
    def __call__(
        self,
        query: Tensor[T, B, Lq, D],
        key: Tensor[T, B, Lk, D],
        value: Tensor[T, B, Lk, D],
        mask: Tensor[NoTape, Lq, Lk] | None = None,
        causal: bool = False,
    ) -> Tensor[T, B, Lq, D]: ...
    @overload
    def __call__(  # pyright: ignore[reportOverlappingOverload] -- reached for memory of a caller's tape variable
        self,
        query: Tensor[NoTape, B, Lq, D],
        key: Tensor[T, B, Lk, D],
        value: Tensor[T, B, Lk, D],
        mask: Tensor[NoTape, Lq, Lk] | None = None,
        causal: bool = False,
    ) -> Tensor[T, B, Lq, D]: ...
    def __call__(
        self,
        query: Any,
        key: Any = None,
        value: Any = None,
        mask: Any = None,
        causal: bool = False,
    ) -> Any:
        keys: AnyTensor = query if key is None else key
        values: AnyTensor = keys if value is None else value
        allowed: AnyTensor | None = mask
        for name, tensor in (("query", query), ("key", keys), ("value", values)):
            if tensor.ndim != 3:
                raise ShapeError(
                    f"MultiHeadAttention expects {name} (batch, length, embed_dim), found shape {tensor.shape}; "
                    "one unbatched sequence takes a batch axis first (x.expand_dims(0))"
                )
        b, lq, _ = query.shape
        if mask is not None:
            _check_mask(mask, lq, keys.shape[1])
        if causal:
            causal_mask = causal_mask_of(lq, keys.shape[1], query._backend)
            allowed = causal_mask if allowed is None else where(allowed, causal_mask, False)
        q = self._heads(self.q_proj(query))
        keyed: AnyTensor = cast(Any, self.k_proj)(keys)
        valued: AnyTensor = cast(Any, self.v_proj)(values)
        k, v = self._heads(keyed), self._heads(valued)
        dropout = cast(Callable[[Any], Any], self.dropout)
        attended: AnyTensor = scaled_dot_product_attention(q, k, v, allowed, dropout)
        merged: Any = attended.permute(0, 2, 1, 3).reshape(b, lq, self.embed_dim)
        return self.out_proj(merged)


class TransformerEncoderBlock(Layer[D, D, D], checked=False):
    """Pre-norm transformer encoder block: ``x + attn(ln(x))``, then ``x + mlp(ln(x))``
    with a GELU feed-forward of ``ff_dim`` hidden units (as
    ``nn.TransformerEncoderLayer(norm_first=True, activation="gelu", batch_first=True)``;
    ``approximate="none"`` uses PyTorch's exact GELU, the default ``"tanh"`` its approximation)."""

    def __init__(
        self,
        num_heads: int,
        ff_dim: int,
        embed_dim: D | int | None = None,
        *,
        dropout: float = 0.0,
        generator: Generator | None = None,
        dtype: str = "float32",
        approximate: Literal["tanh", "none"] = "tanh",
    ) -> None:
        d = self._size_arg(0, embed_dim, "embed_dim")
        self.approximate: Literal["tanh", "none"] = approximate
        self.embed_dim = d
        self.attention = MultiHeadAttention[Any](num_heads, d, dropout=dropout, generator=generator, dtype=dtype)
        self.norm1 = LayerNorm[Any](d, dtype=dtype)
        self.norm2 = LayerNorm[Any](d, dtype=dtype)
        self.ff_in = Linear[Any, Any](d, ff_dim, generator=generator, dtype=dtype)
        self.ff_out = Linear[Any, Any](ff_dim, d, generator=generator, dtype=dtype)
        self.dropout = Dropout[Any](dropout, generator=generator)

    @overload
    def __call__(
        self: TransformerEncoderBlock[Open],
        x: Tensor[T, B, Lq, Dk],
        mask: Tensor[NoTape, Lq, Lq] | None = None,
        causal: bool = False,
    ) -> Tensor[T, B, Lq, Dk]: ...
    @overload
    def __call__(
        self, x: Tensor[T, B, Lq, D], mask: Tensor[NoTape, Lq, Lq] | None = None, causal: bool = False
    ) -> Tensor[T, B, Lq, D]: ...
    def __call__(self, x: Any, mask: Any = None, causal: bool = False) -> Any:
        attended = self.attention(self.norm1(x), mask=mask, causal=causal)
        h = x + self.dropout(attended)
        hidden = self.ff_in(self.norm2(h)).gelu(self.approximate)
        return h + self.dropout(self.ff_out(hidden))
