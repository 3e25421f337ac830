"""The op table: one row per op behaviour, read by every table-driven test.

- ``test_ops.py``: forward against the NumPy reference ``ref`` and gradients against central
  differences in float64, on every backend; the rows' ``covers`` must name every public op.
- ``test_oracle_torch.py``: forward and gradient against PyTorch (``torch``) in float64;
  ``kind="unary"`` rows over drawn shapes (size 1 and size 0 too), ``kind="binary"`` rows
  over drawn broadcasting shapes, the other rows over their own ``shapes``. A row without a
  PyTorch equivalent says why in ``no_torch``.
- ``test_robustness.py``: ``float_only`` rows must refuse integer and boolean data.
- ``test_cupy_kernels.py`` and ``benchmarks/gpu.py``: rows with a fused CuPy ``kernel``.

Adding an op: one row here (see ``shapegrad/ops/README.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import shapegrad as sg

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the oracle skips without it; the other tests never call a torch lambda
    torch = F = None  # type: ignore[assignment]


@dataclass(frozen=True)
class OpInfo:
    """One op behaviour: how to call it, its references, and where it may be evaluated."""

    name: str
    fn: Callable[..., Any]
    ref: Callable[..., Any]
    shapes: tuple[tuple[int, ...], ...]
    torch: Callable[..., Any] | None = None
    no_torch: str = ""
    covers: tuple[str, ...] = ()
    domain: str = "any"  # any | positive | away_from_zero | away_from_bounds | unit | off_integers | wide
    kind: str = "fixed"  # unary | binary | fixed
    float_only: bool = False
    kernel: str | None = None
    differentiable: bool = True


def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _conv2d(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, stride=1, padding=0, dilation=1, groups=1):
    """Direct cross-correlation: a sum over every (channel, tap) of shifted, strided slices."""
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    out_ch, per_group, kh, kw = w.shape
    ho = (x.shape[2] - dilation * (kh - 1) - 1) // stride + 1
    wo = (x.shape[3] - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((x.shape[0], out_ch, ho, wo), dtype=np.result_type(x, w))
    for o in range(out_ch):
        first = o // (out_ch // groups) * per_group
        for c in range(per_group):
            for i in range(kh):
                for j in range(kw):
                    top, left = i * dilation, j * dilation
                    window = x[
                        :,
                        first + c,
                        top : top + stride * (ho - 1) + 1 : stride,
                        left : left + stride * (wo - 1) + 1 : stride,
                    ]
                    out[:, o] += w[o, c, i, j] * window
    return out if b is None else out + b[:, None, None]


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def _lse(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    m = x.max(axis=axis, keepdims=True)
    out = np.log(np.exp(x - m).sum(axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _t(name: str) -> Any:
    """``torch.<name>`` (or ``F.<name>``), resolved only when the oracle calls it."""

    def call(*args: Any) -> Any:
        module = F if hasattr(F, name) and not hasattr(torch, name) else torch
        return getattr(module, name)(*args)

    return call


CAUSAL = np.tril(np.ones((3, 5), dtype=bool), 1)  # a mask that broadcasts over a batch
LABELS = np.array([[2, 0, 1], [1, 1, 3]])
IDS = np.array([[0, 3, 1], [2, 2, 4]])

OPS: list[OpInfo] = [
    # binary, with broadcasting
    OpInfo("add", lambda a, b: a + b, np.add, ((3, 4), (3, 4)), lambda a, b: a + b, kind="binary", covers=("add",)),
    OpInfo("add_bias", lambda a, b: sg.add(a, b), np.add, ((3, 4), (4,)), lambda a, b: a + b),
    OpInfo("add_broadcast_both", lambda a, b: a + b, np.add, ((2, 1, 4), (3, 1)), lambda a, b: a + b),
    OpInfo("add_rank0", lambda a, b: a + b, np.add, ((3, 4), ()), lambda a, b: a + b),
    OpInfo(
        "sub", lambda a, b: a - b, np.subtract, ((3, 4), (1, 4)), lambda a, b: a - b, kind="binary", covers=("sub",)
    ),
    OpInfo(
        "mul", lambda a, b: a * b, np.multiply, ((2, 3, 4), (3, 1)), lambda a, b: a * b, kind="binary", covers=("mul",)
    ),
    OpInfo(
        "div", lambda a, b: a / b, np.divide, ((3, 4), (4,)), lambda a, b: a / b, "", ("div",), "positive", "binary"
    ),
    OpInfo(
        "pow_tensor",
        lambda a, b: a**b,
        np.power,
        ((3, 4), (3, 4)),
        lambda a, b: a**b,
        "",
        ("pow",),
        "positive",
        "binary",
    ),
    # // and % (PyTorch's floor division and remainder): steps, drawn away from zero
    OpInfo(
        "floor_divide",
        lambda a, b: a // b,
        np.floor_divide,
        ((3, 4), (4,)),
        lambda a, b: torch.div(a, b, rounding_mode="floor"),  # torch.floor_divide has no backward; this one's is 0
        covers=("floor_divide",),
        domain="away_from_zero",
        kind="binary",
    ),
    OpInfo(
        "remainder",
        lambda a, b: a % b,
        np.remainder,
        ((2, 3, 4), (3, 1)),
        lambda a, b: a % b,
        covers=("remainder",),
        domain="away_from_zero",
        kind="binary",
    ),
    # PyTorch's Scalar // Tensor, Scalar % Tensor and floor_divide have no backward: the oracle
    # takes the tensor forms of torch.div(rounding_mode="floor") and %, whose are 0 and -floor(a / b)
    OpInfo(
        "floor_divide_scalar",
        lambda a: a // 0.75,
        lambda a: a // 0.75,
        ((3, 4),),
        lambda a: torch.div(a, 0.75, rounding_mode="floor"),
    ),
    OpInfo(
        "rfloor_divide_scalar",
        lambda a: 2.5 // a,
        lambda a: 2.5 // a,
        ((3, 4),),
        lambda a: torch.div(torch.full_like(a, 2.5), a, rounding_mode="floor"),
        domain="away_from_zero",
    ),
    OpInfo("remainder_scalar", lambda a: sg.remainder(a, 0.7), lambda a: a % 0.7, ((3, 4),), lambda a: a % 0.7),
    OpInfo(
        "rremainder_scalar",
        lambda a: 2.5 % a,
        lambda a: 2.5 % a,
        ((3, 4),),
        lambda a: torch.full_like(a, 2.5) % a,
        domain="away_from_zero",
    ),
    OpInfo("maximum", sg.maximum, np.maximum, ((3, 4), (4,)), _t("maximum"), kind="binary", covers=("maximum",)),
    OpInfo("minimum", sg.minimum, np.minimum, ((3, 4), (3, 4)), _t("minimum"), kind="binary", covers=("minimum",)),
    # with Python numbers, on either side
    OpInfo("add_scalar", lambda a: 2.0 + a, lambda a: 2.0 + a, ((3,),), lambda a: 2.0 + a),
    OpInfo("rsub_scalar", lambda a: 2.0 - a, lambda a: 2.0 - a, ((3,),), lambda a: 2.0 - a),
    OpInfo("mul_scalar", lambda a: a * 3.0, lambda a: a * 3.0, ((2, 2),), lambda a: a * 3.0),
    OpInfo("rdiv_scalar", lambda a: 3.0 / a, lambda a: 3.0 / a, ((2, 2),), lambda a: 3.0 / a, domain="positive"),
    OpInfo("div_scalar", lambda a: a / 4.0, lambda a: a / 4.0, ((2, 2),), lambda a: a / 4.0),
    OpInfo("pow_square", lambda a: a**2, lambda a: a**2, ((3, 2),), lambda a: a**2),
    OpInfo("pow_cube", lambda a: sg.pow(a, 3.0), lambda a: a**3, ((3, 2),), lambda a: a**3),
    OpInfo("rpow_scalar", lambda a: 2.0**a, lambda a: 2.0**a, ((3, 2),), lambda a: 2.0**a),
    OpInfo(
        "maximum_scalar",
        lambda a: sg.maximum(a, 0.1),
        lambda a: np.maximum(a, 0.1),
        ((4,),),
        lambda a: torch.clamp(a, min=0.1),
        domain="away_from_zero",
    ),
    # element-wise, one input
    OpInfo("neg", lambda a: -a, np.negative, ((3, 4),), lambda a: -a, kind="unary", covers=("neg",)),
    OpInfo("exp", sg.exp, np.exp, ((3, 4),), _t("exp"), kind="unary", float_only=True, covers=("exp",)),
    OpInfo("log", sg.log, np.log, ((3, 4),), _t("log"), "", ("log",), "positive", "unary", True),
    OpInfo("sqrt", sg.sqrt, np.sqrt, ((3, 4),), _t("sqrt"), "", ("sqrt",), "positive", "unary", True),
    OpInfo("abs", sg.abs, np.abs, ((3, 4),), _t("abs"), "", ("abs",), "away_from_zero", "unary"),
    OpInfo("square", sg.square, np.square, ((3, 4),), _t("square"), kind="unary", covers=("square",)),
    OpInfo("clone", sg.clone, np.copy, ((3, 4),), _t("clone"), kind="unary", covers=("clone",)),
    OpInfo(
        "clone_method_of_a_transpose", lambda a: a.mT.clone(), lambda a: np.copy(a.T), ((2, 3),), lambda a: a.mT.clone()
    ),
    OpInfo(
        "tanh", sg.tanh, np.tanh, ((3, 4),), _t("tanh"), kind="unary", float_only=True, kernel="tanh", covers=("tanh",)
    ),
    OpInfo(
        "sigmoid",
        sg.sigmoid,
        lambda a: 1 / (1 + np.exp(-a)),
        ((3, 4),),
        _t("sigmoid"),
        kind="unary",
        float_only=True,
        kernel="sigmoid",
        covers=("sigmoid",),
    ),
    OpInfo(
        "relu",
        sg.relu,
        lambda a: np.maximum(a, 0),
        ((3, 4),),
        _t("relu"),
        "",
        ("relu",),
        "away_from_zero",
        "unary",
        kernel="relu",
    ),  # fmt: skip
    OpInfo(
        "leaky_relu",
        lambda a: sg.leaky_relu(a, 0.1),
        lambda a: np.where(a > 0, a, 0.1 * a),
        ((3, 4),),
        lambda a: F.leaky_relu(a, 0.1),
        "",
        ("leaky_relu",),
        "away_from_zero",
        "unary",
        True,
        "leaky_relu",
    ),
    OpInfo(
        "gelu",
        sg.gelu,
        _gelu,
        ((3, 4),),
        lambda a: F.gelu(a, approximate="tanh"),
        kind="unary",
        float_only=True,
        kernel="gelu",
        covers=("gelu",),
    ),
    OpInfo(
        "softplus",
        sg.softplus,
        lambda a: np.log1p(np.exp(a)),
        ((3, 4),),
        _t("softplus"),
        kind="unary",
        float_only=True,
        kernel="softplus",
        covers=("softplus",),
    ),
    OpInfo(
        "clamp",
        lambda a: sg.clamp(a, -0.5, 0.5),
        lambda a: np.clip(a, -0.5, 0.5),
        ((3, 4),),
        lambda a: torch.clamp(a, -0.5, 0.5),
        "",
        ("clamp",),
        "away_from_bounds",
        "unary",
    ),
    OpInfo(
        "where",
        lambda a, b: sg.where(a > 0, a, b),
        lambda a, b: np.where(a > 0, a, b),
        ((3, 4), (3, 4)),
        lambda a, b: torch.where(a > 0, a, b),
        "",
        ("where",),
        "away_from_zero",
    ),
    OpInfo(
        "astype",
        lambda a: a.astype("float32"),
        lambda a: a.astype(np.float32),
        ((3,),),
        lambda a: a.float(),
        covers=("astype",),
    ),  # fmt: skip
    # element-wise math (shapegrad/ops/math.py)
    OpInfo("sin", sg.sin, np.sin, ((3, 4),), _t("sin"), kind="unary", float_only=True, covers=("sin",)),
    OpInfo("cos", sg.cos, np.cos, ((3, 4),), _t("cos"), kind="unary", float_only=True, covers=("cos",)),
    OpInfo("tan", sg.tan, np.tan, ((3, 4),), _t("tan"), "", ("tan",), "unit", "unary", True),
    OpInfo("arcsin", sg.arcsin, np.arcsin, ((3, 4),), _t("asin"), "", ("arcsin",), "unit", "unary", True),
    OpInfo("arccos", sg.arccos, np.arccos, ((3, 4),), _t("acos"), "", ("arccos",), "unit", "unary", True),
    OpInfo("arctan", sg.arctan, np.arctan, ((3, 4),), _t("atan"), kind="unary", float_only=True, covers=("arctan",)),
    OpInfo("arctan2", sg.arctan2, np.arctan2, ((3, 4), (4,)), _t("atan2"), kind="binary", covers=("arctan2",)),
    OpInfo("sinh", sg.sinh, np.sinh, ((3, 4),), _t("sinh"), kind="unary", float_only=True, covers=("sinh",)),
    OpInfo("cosh", sg.cosh, np.cosh, ((3, 4),), _t("cosh"), kind="unary", float_only=True, covers=("cosh",)),
    OpInfo("log1p", sg.log1p, np.log1p, ((3, 4),), _t("log1p"), "", ("log1p",), "positive", "unary", True),
    OpInfo("expm1", sg.expm1, np.expm1, ((3, 4),), _t("expm1"), kind="unary", float_only=True, covers=("expm1",)),
    OpInfo("log2", sg.log2, np.log2, ((3, 4),), _t("log2"), "", ("log2",), "positive", "unary", True),
    OpInfo("log10", sg.log10, np.log10, ((3, 4),), _t("log10"), "", ("log10",), "positive", "unary", True),
    OpInfo(
        "rsqrt", sg.rsqrt, lambda a: 1 / np.sqrt(a), ((3, 4),), _t("rsqrt"), "", ("rsqrt",), "positive", "unary", True
    ),  # fmt: skip
    OpInfo(
        "reciprocal",
        sg.reciprocal,
        lambda a: 1 / a,
        ((3, 4),),
        _t("reciprocal"),
        "",
        ("reciprocal",),
        "away_from_zero",
        "unary",
        True,
    ),  # fmt: skip
    OpInfo("sign", sg.sign, np.sign, ((3, 4),), _t("sign"), "", ("sign",), "away_from_zero", "unary"),
    OpInfo("floor", sg.floor, np.floor, ((3, 4),), _t("floor"), "", ("floor",), "off_integers", "unary"),
    OpInfo("ceil", sg.ceil, np.ceil, ((3, 4),), _t("ceil"), "", ("ceil",), "off_integers", "unary"),
    OpInfo("round", sg.round, np.round, ((3, 4),), _t("round"), "", ("round",), "off_integers", "unary"),
    OpInfo("trunc", sg.trunc, np.trunc, ((3, 4),), _t("trunc"), "", ("trunc",), "off_integers", "unary"),
    OpInfo(
        "silu",
        sg.silu,
        lambda a: a / (1 + np.exp(-a)),
        ((3, 4),),
        lambda a: F.silu(a),
        kind="unary",
        float_only=True,
        covers=("silu",),
    ),  # fmt: skip
    OpInfo(
        "mish",
        sg.mish,
        lambda a: a * np.tanh(np.log1p(np.exp(a))),
        ((3, 4),),
        lambda a: F.mish(a),
        kind="unary",
        float_only=True,
        covers=("mish",),
    ),  # fmt: skip
    OpInfo(
        "elu",
        lambda a: sg.elu(a, 0.7),
        lambda a: np.where(a > 0, a, 0.7 * np.expm1(a)),
        ((3, 4),),
        lambda a: F.elu(a, 0.7),
        "",
        ("elu",),
        "away_from_zero",
        "unary",
        True,
    ),  # fmt: skip
    OpInfo(
        "selu",
        sg.selu,
        lambda a: 1.0507009873554805 * np.where(a > 0, a, 1.6732632423543772 * np.expm1(a)),
        ((3, 4),),
        lambda a: F.selu(a),
        "",
        ("selu",),
        "away_from_zero",
        "unary",
        True,
    ),  # fmt: skip
    OpInfo(
        "hardtanh",
        lambda a: sg.hardtanh(a, -0.5, 0.5),
        lambda a: np.clip(a, -0.5, 0.5),
        ((3, 4),),
        lambda a: F.hardtanh(a, -0.5, 0.5),
        "",
        ("hardtanh",),
        "away_from_bounds",
        "unary",
    ),  # fmt: skip
    OpInfo(
        "log_sigmoid",
        sg.log_sigmoid,
        lambda a: -np.log1p(np.exp(-a)),
        ((3, 4),),
        lambda a: F.logsigmoid(a),
        kind="unary",
        float_only=True,
        covers=("log_sigmoid",),
    ),  # fmt: skip
    # boolean tests: untraced
    OpInfo("isnan", sg.isnan, np.isnan, ((3, 4),), _t("isnan"), covers=("isnan",), differentiable=False),
    OpInfo("isinf", sg.isinf, np.isinf, ((3, 4),), _t("isinf"), covers=("isinf",), differentiable=False),
    OpInfo("isfinite", sg.isfinite, np.isfinite, ((3, 4),), _t("isfinite"), covers=("isfinite",), differentiable=False),
    OpInfo(
        "logical_and",
        lambda a, b: sg.logical_and(a > 0, b > 0),
        lambda a, b: np.logical_and(a > 0, b > 0),
        ((3, 4), (3, 4)),
        lambda a, b: torch.logical_and(a > 0, b > 0),
        covers=("logical_and",),
        differentiable=False,
    ),  # fmt: skip
    OpInfo(
        "logical_or",
        lambda a, b: sg.logical_or(a > 0, b > 0),
        lambda a, b: np.logical_or(a > 0, b > 0),
        ((3, 4), (3, 4)),
        lambda a, b: torch.logical_or(a > 0, b > 0),
        covers=("logical_or",),
        differentiable=False,
    ),  # fmt: skip
    OpInfo(
        "logical_xor",
        lambda a, b: sg.logical_xor(a > 0, b > 0),
        lambda a, b: np.logical_xor(a > 0, b > 0),
        ((3, 4), (3, 4)),
        lambda a, b: torch.logical_xor(a > 0, b > 0),
        covers=("logical_xor",),
        differentiable=False,
    ),  # fmt: skip
    OpInfo(
        "logical_not",
        lambda a: sg.logical_not(a > 0),
        lambda a: np.logical_not(a > 0),
        ((3, 4),),
        lambda a: torch.logical_not(a > 0),
        covers=("logical_not",),
        differentiable=False,
    ),  # fmt: skip
    # & | ^ ~ on masks (bitwise on integers: tests/test_bitwise_ops.py), broadcasting
    OpInfo(
        "bitwise_and",
        lambda a, b: (a > 0) & (b > 0),
        lambda a, b: (a > 0) & (b > 0),
        ((3, 4), (4,)),
        lambda a, b: (a > 0) & (b > 0),
        covers=("bitwise_and",),
        differentiable=False,
    ),  # fmt: skip
    OpInfo(
        "bitwise_or",
        lambda a, b: (a > 0) | (b > 0),
        lambda a, b: (a > 0) | (b > 0),
        ((3, 1), (3, 4)),
        lambda a, b: (a > 0) | (b > 0),
        covers=("bitwise_or",),
        differentiable=False,
    ),  # fmt: skip
    OpInfo(
        "bitwise_xor",
        lambda a, b: sg.bitwise_xor(a > 0, b > 0),
        lambda a, b: np.bitwise_xor(a > 0, b > 0),
        ((3, 4), (3, 4)),
        lambda a, b: torch.bitwise_xor(a > 0, b > 0),
        covers=("bitwise_xor",),
        differentiable=False,
    ),  # fmt: skip
    OpInfo(
        "bitwise_not",
        lambda a: ~(a > 0),
        lambda a: ~(a > 0),
        ((3, 4),),
        lambda a: ~(a > 0),
        covers=("bitwise_not",),
        differentiable=False,
    ),  # fmt: skip
    OpInfo(
        "erf",
        sg.erf,
        lambda a: np.array([math.erf(v) for v in a.ravel()]).reshape(a.shape),
        ((3, 4),),
        _t("erf"),
        kind="unary",
        float_only=True,
        covers=("erf",),
    ),  # fmt: skip
    OpInfo(
        "erf_wide",
        sg.erf,
        lambda a: np.array([math.erf(v) for v in a.ravel()]).reshape(a.shape),
        ((40,),),
        _t("erf"),
        domain="wide",
    ),  # fmt: skip
    OpInfo(
        "erfc",
        sg.erfc,
        lambda a: np.array([math.erfc(v) for v in a.ravel()]).reshape(a.shape),
        ((40,),),
        _t("erfc"),
        domain="wide",
        float_only=True,
        covers=("erfc",),
    ),  # fmt: skip
    OpInfo(
        "gelu_exact",
        lambda a: sg.gelu(a, approximate="none"),
        lambda a: a * 0.5 * (1 + np.array([math.erf(v / math.sqrt(2)) for v in a.ravel()]).reshape(a.shape)),
        ((3, 4),),
        lambda a: F.gelu(a),
        kind="unary",
        covers=("gelu_exact",),
    ),  # fmt: skip
    OpInfo(
        "prod", lambda a: sg.prod(a, axis=-1), lambda a: a.prod(-1), ((3, 4),), lambda a: a.prod(-1), covers=("prod",)
    ),  # fmt: skip
    OpInfo(
        "prod_with_zeros",
        lambda a: sg.prod(a * sg.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]]), axis=1),
        lambda a: (a * np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])).prod(1),
        ((2, 3),),
        lambda a: (a * torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]], dtype=a.dtype)).prod(1),
    ),  # fmt: skip
    OpInfo(
        "cumprod",
        lambda a: sg.cumprod(a, 1),
        lambda a: np.cumprod(a, 1),
        ((2, 4),),
        lambda a: torch.cumprod(a, 1),
        covers=("cumprod",),
    ),  # fmt: skip
    OpInfo(
        "cumprod_with_zeros",
        lambda a: sg.cumprod(a * sg.tensor([1.0, 0.0, 1.0, 0.0, 1.0]), 0),
        lambda a: np.cumprod(a * np.array([1.0, 0.0, 1.0, 0.0, 1.0]), 0),
        ((5,),),
        lambda a: torch.cumprod(a * torch.tensor([1.0, 0.0, 1.0, 0.0, 1.0], dtype=a.dtype), 0),
    ),  # fmt: skip
    OpInfo(
        "cumprod_first_zero",
        lambda a: sg.cumprod(sg.concat([a[:2], a[2:3] * 0.0, a[3:]], axis=0), 0),
        lambda a: np.cumprod(np.concatenate([a[:2], a[2:3] * 0.0, a[3:]]), 0),
        ((5,),),
        lambda a: torch.cumprod(torch.cat([a[:2], a[2:3] * 0.0, a[3:]]), 0),
    ),  # fmt: skip
    OpInfo(
        "sort_axis0",
        lambda a: sg.sort(a, axis=0, descending=True),
        lambda a: -np.sort(-a, 0),
        ((4, 3),),
        lambda a: torch.sort(a, 0, descending=True).values,
    ),  # fmt: skip
    OpInfo(
        "topk_axis0",
        lambda a: sg.topk(a, 2, axis=0)[0],
        lambda a: -np.sort(-a, 0)[:2],
        ((4, 3),),
        lambda a: torch.topk(a, 2, dim=0).values,
    ),  # fmt: skip
    OpInfo(
        "mean_tuple",
        lambda a: sg.mean(a, axis=(0, 2)),
        lambda a: a.mean(axis=(0, 2)),
        ((2, 3, 4),),
        lambda a: a.mean((0, 2)),
    ),  # fmt: skip
    # structure and order (shapegrad/ops/structure.py)
    OpInfo(
        "flip",
        lambda a: sg.flip(a, 1),
        lambda a: np.flip(a, 1),
        ((3, 4),),
        lambda a: torch.flip(a, (1,)),
        covers=("flip",),
    ),  # fmt: skip
    OpInfo(
        "roll",
        lambda a: sg.roll(a, 2, -1),
        lambda a: np.roll(a, 2, -1),
        ((3, 4),),
        lambda a: torch.roll(a, 2, -1),
        covers=("roll",),
    ),  # fmt: skip
    OpInfo("tril", lambda a: sg.tril(a), np.tril, ((2, 4, 4),), _t("tril"), covers=("tril",)),
    OpInfo(
        "triu_k",
        lambda a: sg.triu(a, 1),
        lambda a: np.triu(a, 1),
        ((3, 5),),
        lambda a: torch.triu(a, 1),
        covers=("triu",),
    ),  # fmt: skip
    OpInfo(
        "cumsum",
        lambda a: sg.cumsum(a, 1),
        lambda a: np.cumsum(a, 1),
        ((2, 4, 3),),
        lambda a: torch.cumsum(a, 1),
        covers=("cumsum",),
    ),  # fmt: skip
    OpInfo(
        "sort",
        lambda a: sg.sort(a),
        lambda a: np.sort(a, -1),
        ((3, 5),),
        lambda a: torch.sort(a).values,
        covers=("sort", "argsort"),
    ),  # fmt: skip
    OpInfo(
        "topk",
        lambda a: sg.topk(a, 2)[0],
        lambda a: -np.sort(-a, -1)[..., :2],
        ((3, 5),),
        lambda a: torch.topk(a, 2).values,
        covers=("topk",),
    ),  # fmt: skip
    OpInfo(
        "masked_fill",
        lambda a: sg.masked_fill(a, sg.tril(sg.ones(3, 4)) == 0, -5.0),
        lambda a: np.where(np.tril(np.ones((3, 4))) == 0, -5.0, a),
        ((2, 3, 4),),
        lambda a: a.masked_fill(torch.tril(torch.ones(3, 4)) == 0, -5.0),
        covers=("masked_fill",),
    ),  # fmt: skip
    OpInfo(
        "std",
        lambda a: sg.std(a, axis=-1, correction=1.0),
        lambda a: a.std(-1, ddof=1),
        ((3, 5),),
        lambda a: a.std(-1),
        covers=("std",),
    ),  # fmt: skip
    OpInfo(
        "norm",
        lambda a: sg.norm(a, axis=-1),
        lambda a: np.linalg.norm(a, axis=-1),
        ((3, 5),),
        lambda a: torch.linalg.vector_norm(a, dim=-1),
        covers=("norm",),
    ),  # fmt: skip
    OpInfo(
        "norm_1",
        lambda a: sg.norm(a, 1),
        lambda a: np.abs(a).sum(),
        ((3, 5),),
        lambda a: torch.linalg.vector_norm(a, 1),
        domain="away_from_zero",
    ),  # fmt: skip
    OpInfo(
        "norm_inf",
        lambda a: sg.norm(a, float("inf"), axis=0),
        lambda a: np.abs(a).max(0),
        ((3, 5),),
        lambda a: torch.linalg.vector_norm(a, float("inf"), dim=0),
    ),  # fmt: skip
    OpInfo(
        "argmax",
        lambda a: sg.argmax(a, axis=-1),
        lambda a: np.argmax(a, -1),
        ((3, 5),),
        lambda a: torch.argmax(a, -1),
        covers=("argmax",),
        differentiable=False,
    ),  # fmt: skip
    OpInfo(
        "argmin_all",
        lambda a: sg.argmin(a),
        lambda a: np.argmin(a),
        ((3, 5),),
        lambda a: torch.argmin(a),
        covers=("argmin",),
        differentiable=False,
    ),  # fmt: skip
    OpInfo(
        "one_hot",
        lambda a: sg.one_hot(sg.argmax(a, axis=-1), 5),
        lambda a: np.eye(5)[np.argmax(a, -1)],
        ((3, 5),),
        lambda a: F.one_hot(torch.argmax(a, -1), 5).double(),
        covers=("one_hot",),
        differentiable=False,
    ),  # fmt: skip
    OpInfo(
        "any_all",
        lambda a: sg.logical_and(sg.any(a > 1.0, axis=0), sg.all(a > -3.0, axis=0)),
        lambda a: np.logical_and((a > 1.0).any(0), (a > -3.0).all(0)),
        ((3, 5),),
        lambda a: torch.logical_and((a > 1.0).any(0), (a > -3.0).all(0)),
        covers=("any", "all"),
        differentiable=False,
    ),  # fmt: skip
    OpInfo(
        "count_nonzero",
        lambda a: sg.count_nonzero(a > 0, axis=1),
        lambda a: np.count_nonzero(a > 0, axis=1),
        ((3, 5),),
        lambda a: torch.count_nonzero(a > 0, dim=1),
        covers=("count_nonzero",),
        differentiable=False,
    ),  # fmt: skip
    OpInfo(
        "pad_constant",
        lambda a: sg.pad(a, ((1, 2), (0, 1)), value=0.5),
        lambda a: np.pad(a, ((1, 2), (0, 1)), constant_values=0.5),
        ((3, 4),),
        lambda a: F.pad(a, (0, 1, 1, 2), value=0.5),
        covers=("pad",),
    ),  # fmt: skip
    OpInfo(
        "pad_reflect",
        lambda a: sg.pad(a, ((0, 0), (2, 1)), mode="reflect"),
        lambda a: np.pad(a, ((0, 0), (2, 1)), mode="reflect"),
        ((3, 4),),
        lambda a: F.pad(a[None], (2, 1), mode="reflect")[0],
    ),  # fmt: skip
    OpInfo(
        "pad_replicate",
        lambda a: sg.pad(a, ((0, 0), (1, 2)), mode="replicate"),
        lambda a: np.pad(a, ((0, 0), (1, 2)), mode="edge"),
        ((3, 4),),
        lambda a: F.pad(a[None], (1, 2), mode="replicate")[0],
    ),  # fmt: skip
    OpInfo(
        "split",
        lambda a: sg.split(a, 2, axis=1)[1],
        lambda a: a[:, 2:4],
        ((3, 5),),
        lambda a: torch.split(a, 2, dim=1)[1],
        covers=("split",),
    ),  # fmt: skip
    OpInfo(
        "chunk",
        lambda a: sg.chunk(a, 2, axis=0)[-1],
        lambda a: a[2:],
        ((3, 5),),
        lambda a: torch.chunk(a, 2, dim=0)[-1],
        covers=("chunk",),
    ),  # fmt: skip
    OpInfo(
        "narrow",
        lambda a: sg.narrow(a, 1, 1, 3),
        lambda a: a[:, 1:4],
        ((3, 5),),
        lambda a: torch.narrow(a, 1, 1, 3),
        covers=("narrow",),
    ),  # fmt: skip
    OpInfo(
        "unflatten",
        lambda a: sg.unflatten(a, 1, (2, 3)),
        lambda a: a.reshape(4, 2, 3),
        ((4, 6),),
        lambda a: torch.unflatten(a, 1, (2, 3)),
        covers=("unflatten",),
    ),  # fmt: skip
    OpInfo(
        "tile",
        lambda a: sg.tile(a, (2, 1, 3)),
        lambda a: np.tile(a, (2, 1, 3)),
        ((3, 2),),
        lambda a: a.repeat(2, 1, 3),
        covers=("tile",),
    ),  # fmt: skip
    OpInfo(
        "repeat",
        lambda a: sg.repeat(a, 2, 1, 3),
        lambda a: np.tile(a, (2, 1, 3)),
        ((3, 2),),
        lambda a: a.repeat(2, 1, 3),
        covers=("repeat",),
    ),  # fmt: skip
    OpInfo(
        "repeat_method_tuple",
        lambda a: a.repeat((3, 1)),
        lambda a: np.tile(a, (3, 1)),
        ((2, 4),),
        lambda a: a.repeat((3, 1)),
    ),  # fmt: skip
    OpInfo(
        "repeat_zero",
        lambda a: sg.repeat(a, 0, 2),
        lambda a: np.tile(a, (0, 2)),
        ((2, 3),),
        lambda a: a.repeat(0, 2),
    ),  # fmt: skip
    OpInfo(
        "diagonal",
        lambda a: sg.diagonal(a, 1),
        lambda a: np.diagonal(a, 1, -2, -1),
        ((2, 3, 4),),
        lambda a: torch.diagonal(a, 1, -2, -1),
        covers=("diagonal",),
    ),  # fmt: skip
    OpInfo("diag", sg.diag, np.diag, ((4,),), _t("diag"), covers=("diag",)),
    OpInfo(
        "einsum_matmul",
        lambda a, b: sg.einsum("bij,bjk->bik", a, b),
        lambda a, b: np.einsum("bij,bjk->bik", a, b),
        ((2, 3, 4), (2, 4, 5)),
        lambda a, b: torch.einsum("bij,bjk->bik", a, b),
        covers=("einsum",),
    ),  # fmt: skip
    OpInfo(
        "einsum_sum_out",
        lambda a, b: sg.einsum("ij,k->i", a, b),
        lambda a, b: np.einsum("ij,k->i", a, b),
        ((3, 4), (2,)),
        lambda a, b: torch.einsum("ij,k->i", a, b),
    ),  # fmt: skip
    OpInfo(
        "einsum_outer_implicit",
        lambda a, b, c: sg.einsum("i,j,jk", a, b, c),
        lambda a, b, c: np.einsum("i,j,jk", a, b, c),
        ((3,), (4,), (4, 2)),
        lambda a, b, c: torch.einsum("i,j,jk", a, b, c),
    ),  # fmt: skip
    OpInfo(
        "einsum_trace",
        lambda a: sg.einsum("ii->", a),
        lambda a: np.einsum("ii->", a),
        ((4, 4),),
        lambda a: torch.einsum("ii->", a),
    ),  # fmt: skip
    OpInfo(
        "einsum_diagonal",
        lambda a: sg.einsum("ii->i", a),
        lambda a: np.einsum("ii->i", a),
        ((3, 3),),
        lambda a: torch.einsum("ii->i", a),
    ),  # fmt: skip
    OpInfo(
        "einsum_batched_trace_implicit",
        lambda a: sg.einsum("bii", a),
        lambda a: np.einsum("bii", a),
        ((2, 3, 3),),
        lambda a: torch.einsum("bii", a),
    ),  # fmt: skip
    OpInfo(
        "einsum_diagonal_times_matrix",
        lambda a, b: sg.einsum("iij,jk->ik", a, b),
        lambda a, b: np.einsum("iij,jk->ik", a, b),
        ((3, 3, 4), (4, 2)),
        lambda a, b: torch.einsum("iij,jk->ik", a, b),
    ),  # fmt: skip
    OpInfo(
        "einsum_both_operands_diagonal",
        lambda a, b: sg.einsum("iji,jj->ij", a, b),
        lambda a, b: np.einsum("iji,jj->ij", a, b),
        ((3, 2, 3), (2, 2)),
        lambda a, b: torch.einsum("iji,jj->ij", a, b),
    ),  # fmt: skip
    # reductions
    OpInfo("sum_all", lambda a: a.sum(), lambda a: a.sum(), ((3, 4),), lambda a: a.sum(), covers=("sum",)),
    OpInfo(
        "sum_last", lambda a: a.sum(axis=-1), lambda a: a.sum(axis=-1), ((2, 3, 4),), lambda a: a.sum(-1), kind="unary"
    ),
    OpInfo(
        "sum_first_keep",
        lambda a: a.sum(axis=0, keepdims=True),
        lambda a: a.sum(axis=0, keepdims=True),
        ((2, 3, 4),),
        lambda a: a.sum(0, keepdim=True),
        kind="unary",
    ),
    OpInfo(
        "sum_tuple",
        lambda a: sg.sum(a, axis=(0, 2)),
        lambda a: a.sum(axis=(0, 2)),
        ((2, 3, 4),),
        lambda a: a.sum((0, 2)),
    ),  # fmt: skip
    OpInfo(
        "mean",
        lambda a: a.mean(axis=1),
        lambda a: a.mean(axis=1),
        ((2, 3, 4),),
        lambda a: a.mean(1),
        covers=("mean",),
        float_only=True,
    ),  # fmt: skip
    OpInfo("mean_all", sg.mean, np.mean, ((2, 1, 4),), lambda a: a.mean(), kind="unary"),
    OpInfo(
        "max",
        lambda a: a.max(axis=-1),
        lambda a: a.max(axis=-1),
        ((3, 5),),
        lambda a: a.amax(-1),
        kind="unary",
        covers=("max",),
    ),  # fmt: skip
    OpInfo(
        "min_keep",
        lambda a: a.min(axis=0, keepdims=True),
        lambda a: a.min(axis=0, keepdims=True),
        ((3, 5),),
        lambda a: a.amin(0, keepdim=True),
        covers=("min",),
    ),
    OpInfo(
        "var",
        lambda a: a.var(axis=-1),
        lambda a: a.var(axis=-1),
        ((3, 5),),
        lambda a: a.var(-1, correction=0),
        covers=("var",),
    ),  # fmt: skip
    OpInfo(
        "var_unbiased",
        lambda a: a.var(axis=-1, correction=1.0),
        lambda a: a.var(axis=-1, ddof=1),
        ((4, 3),),
        lambda a: a.var(-1, correction=1),
    ),
    OpInfo(
        "logsumexp",
        lambda a: a.logsumexp(axis=-1),
        lambda a: _lse(a, axis=-1),
        ((3, 5),),
        lambda a: torch.logsumexp(a, -1),
        kind="unary",
        covers=("logsumexp",),
    ),  # fmt: skip
    OpInfo("logsumexp_all", lambda a: sg.logsumexp(a), _lse, ((2, 3),), lambda a: torch.logsumexp(a, (0, 1))),
    OpInfo(
        "softmax",
        lambda a: a.softmax(),
        _softmax,
        ((3, 5),),
        lambda a: torch.softmax(a, -1),
        kind="unary",
        float_only=True,
        covers=("softmax",),
    ),  # fmt: skip
    OpInfo(
        "softmax_scaled_masked",
        lambda a: sg.softmax(a, scale=0.5, mask=sg.tensor(CAUSAL)),
        lambda a: _softmax(np.where(CAUSAL, 0.5 * a, -1e9)),
        ((2, 3, 5),),
        lambda a: torch.softmax(torch.where(torch.from_numpy(CAUSAL), 0.5 * a, -1e9), -1),
    ),  # fmt: skip
    OpInfo(
        "softmax_axis0",
        lambda a: sg.softmax(a, axis=0),
        lambda a: _softmax(a, 0),
        ((3, 5),),
        lambda a: torch.softmax(a, 0),
    ),  # fmt: skip
    OpInfo(
        "log_softmax",
        lambda a: a.log_softmax(),
        lambda a: np.log(_softmax(a)),
        ((2, 3, 5),),
        lambda a: torch.log_softmax(a, -1),
        kind="unary",
        float_only=True,
        covers=("log_softmax",),
    ),  # fmt: skip
    # matrix products
    OpInfo("matmul_2d", lambda a, b: a @ b, np.matmul, ((3, 4), (4, 5)), _t("matmul"), covers=("matmul",)),
    OpInfo("matmul_vec_vec", sg.matmul, np.matmul, ((4,), (4,)), _t("matmul")),
    OpInfo("matmul_vec_mat", lambda a, b: a @ b, np.matmul, ((4,), (4, 5)), _t("matmul")),
    OpInfo("matmul_mat_vec", lambda a, b: a @ b, np.matmul, ((2, 3, 4), (4,)), _t("matmul")),
    OpInfo("matmul_batched_2d", lambda a, b: a @ b, np.matmul, ((2, 3, 4), (4, 5)), _t("matmul")),
    OpInfo("matmul_batched_broadcast", lambda a, b: a @ b, np.matmul, ((2, 1, 3, 4), (3, 4, 2)), _t("matmul")),
    OpInfo("matmul_empty", lambda a, b: a @ b, np.matmul, ((0, 4), (4, 2)), _t("matmul")),
    OpInfo(
        "linear",
        lambda x, w, b: sg.ops.linalg.linear(x, w, b),
        lambda x, w, b: x @ w + b,
        ((2, 3, 4), (4, 5), (5,)),
        lambda x, w, b: F.linear(x, w.T, b),
        covers=("linear",),
    ),
    OpInfo(
        "conv2d",
        lambda x, w, b: sg.ops.conv.conv2d(x, w, b, padding=(1, 1)),
        lambda x, w, b: _conv2d(x, w, b, padding=1),
        ((2, 3, 5, 4), (4, 3, 3, 3), (4,)),
        lambda x, w, b: F.conv2d(x, w, b, padding=1),
        covers=("conv2d",),
    ),
    OpInfo(
        "conv2d_strided_dilated",
        lambda x, w: sg.ops.conv.conv2d(x, w, None, stride=(2, 2), padding=(2, 2), dilation=(2, 2)),
        lambda x, w: _conv2d(x, w, None, stride=2, padding=2, dilation=2),
        ((2, 2, 7, 6), (3, 2, 2, 3)),
        lambda x, w: F.conv2d(x, w, None, stride=2, padding=2, dilation=2),
    ),
    OpInfo(
        "conv2d_groups",
        lambda x, w, b: sg.ops.conv.conv2d(x, w, b, groups=2),
        lambda x, w, b: _conv2d(x, w, b, groups=2),
        ((1, 4, 4, 5), (6, 2, 2, 2), (6,)),
        lambda x, w, b: F.conv2d(x, w, b, groups=2),
    ),
    OpInfo(
        "layer_norm",
        lambda x, w, b: sg.layer_norm(x, w, b),
        lambda x, w, b: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w + b,
        ((2, 3, 5), (5,), (5,)),
        lambda x, w, b: F.layer_norm(x, (5,), w, b),
        covers=("layer_norm",),
    ),
    OpInfo(
        "layer_norm_plain",
        lambda x: sg.layer_norm(x),
        lambda x: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5),
        ((4, 6),),
        lambda x: F.layer_norm(x, (6,)),
    ),
    # shape
    OpInfo(
        "reshape",
        lambda a: a.reshape(4, 3),
        lambda a: a.reshape(4, 3),
        ((3, 4),),
        lambda a: a.reshape(4, 3),
        covers=("reshape",),
    ),  # fmt: skip
    OpInfo(
        "reshape_infer",
        lambda a: sg.reshape(a, (2, -1)),
        lambda a: a.reshape(2, -1),
        ((3, 4),),
        lambda a: a.reshape(2, -1),
    ),  # fmt: skip
    OpInfo(
        "flatten",
        sg.flatten,
        lambda a: a.reshape(a.shape[0], -1),
        ((2, 3, 4),),
        lambda a: torch.flatten(a, 1),
        kind="unary",
        covers=("flatten",),
    ),  # fmt: skip
    OpInfo("transpose", lambda a: a.transpose(), lambda a: a.T, ((3, 4),), lambda a: a.T),
    OpInfo("mT", lambda a: a.mT, lambda a: np.swapaxes(a, -1, -2), ((2, 3, 4),), lambda a: a.mT, kind="unary"),
    OpInfo(
        "permute",
        lambda a: a.permute(2, 0, 1),
        lambda a: a.transpose(2, 0, 1),
        ((2, 3, 4),),
        lambda a: a.permute(2, 0, 1),
        covers=("permute",),
    ),  # fmt: skip
    OpInfo(
        "swapaxes",
        lambda a: a.swapaxes(0, 2),
        lambda a: np.swapaxes(a, 0, 2),
        ((2, 3, 4),),
        lambda a: a.swapaxes(0, 2),
        covers=("swapaxes",),
    ),  # fmt: skip
    OpInfo(
        "expand_dims",
        lambda a: a.expand_dims(0),
        lambda a: a[None],
        ((3,),),
        lambda a: a.unsqueeze(0),
        covers=("expand_dims",),
    ),  # fmt: skip
    OpInfo(
        "squeeze",
        lambda a: a.squeeze(1),
        lambda a: a.squeeze(1),
        ((3, 1, 2),),
        lambda a: a.squeeze(1),
        covers=("squeeze",),
    ),  # fmt: skip
    OpInfo(
        "broadcast_to",
        lambda a: a.broadcast_to(2, 3, 4),
        lambda a: np.broadcast_to(a, (2, 3, 4)),
        ((3, 1),),
        lambda a: a.expand(2, 3, 4),
        covers=("broadcast_to",),
    ),
    OpInfo(
        "concat",
        lambda a, b: sg.concat([a, b], axis=1),
        lambda a, b: np.concatenate([a, b], 1),
        ((2, 3), (2, 2)),
        lambda a, b: torch.cat([a, b], 1),
        covers=("concat",),
    ),
    OpInfo(
        "stack",
        lambda a, b: sg.stack([a, b], axis=-1),
        lambda a, b: np.stack([a, b], -1),
        ((2, 3), (2, 3)),
        lambda a, b: torch.stack([a, b], -1),
        covers=("stack",),
    ),
    # indexing
    OpInfo(
        "slice",
        lambda a: a[1:, ::2],
        lambda a: a[1:, ::2],
        ((3, 4),),
        lambda a: a[1:, ::2],
        kind="unary",
        covers=("getitem",),
    ),  # fmt: skip
    OpInfo("int_index", lambda a: a[1], lambda a: a[1], ((3, 4),), lambda a: a[1]),
    OpInfo(
        "fancy_repeat",
        lambda a: a[sg.tensor([0, 2, 0])],
        lambda a: a[[0, 2, 0]],
        ((3, 4),),
        lambda a: a[torch.tensor([0, 2, 0])],
    ),  # fmt: skip
    OpInfo(
        "fancy_negative",
        lambda a: a[sg.tensor([-1, 0])],
        lambda a: a[[-1, 0]],
        ((3, 4),),
        lambda a: a[torch.tensor([-1, 0])],
    ),  # fmt: skip
    OpInfo("bool_mask", lambda a: a[a > 0], lambda a: a[a > 0], ((3, 4),), lambda a: a[a > 0], domain="away_from_zero"),
    OpInfo(
        "take_along_axis",
        lambda a: a.take_along_axis(sg.tensor(LABELS)),
        lambda a: np.take_along_axis(a, LABELS, -1),
        ((2, 4),),
        lambda a: torch.gather(a, 1, torch.tensor(LABELS)),
        covers=("take_along_axis",),
    ),
    OpInfo(
        "gather",
        lambda a: sg.gather(a, sg.tensor(IDS)),
        lambda a: a[IDS],
        ((5, 2),),
        lambda a: F.embedding(torch.tensor(IDS), a),
        covers=("gather",),
    ),
]

BY_NAME = {op.name: op for op in OPS}
assert len(BY_NAME) == len(OPS), "op names must be unique"

# Rows of the op table (shapegrad/_opspec.py) checked elsewhere than here, and why.
NOT_OPS = {
    **{
        name: "a comparison's function form (untraced, no gradient); test_typegen.py checks it against its operator"
        for name in ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal")
    },
    "multinomial": "sampled: tests/test_sampling.py checks its distribution against PyTorch's",
    "transpose": "the method x.transpose(...), permute's spelling (its row covers permute)",
}


def draw(op: OpInfo, seed: int, shapes: tuple[tuple[int, ...], ...] | None = None) -> list[np.ndarray]:
    """Float64 inputs for ``op`` in its domain (``shapes`` overrides the row's own)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for shape in shapes if shapes is not None else op.shapes:
        a = rng.standard_normal(shape)
        if op.domain == "positive":
            a = np.abs(a) + 0.5
        elif op.domain == "away_from_zero":
            a = np.sign(a) * (np.abs(a) + 0.2)
            a[a == 0] = 0.3
        elif op.domain == "away_from_bounds":
            a = np.where(np.abs(np.abs(a) - 0.5) < 0.1, a + 0.25, a)
        elif op.domain == "unit":
            a = np.tanh(a) * 0.9  # inside (-1, 1): arcsin, arccos, and tan away from its poles
        elif op.domain == "wide":
            a = a * 3.0  # out to |x| ~ 9: the tails too
        elif op.domain == "off_integers":
            a = np.floor(a * 3) / 3 + 0.15  # no value near an integer or a half

        arrays.append(np.asarray(a))
    return arrays


# --------------------------------------------------------------------------- the README's list
_MODULE_TITLES = {
    "ops.elementwise": "arithmetic and comparisons",
    "ops.math": "element-wise math",
    "ops.activations": "activations",
    "ops.reductions": "reductions, scans and softmax",
    "ops.order": "order (sorting, index-valued)",
    "ops.shape": "shape",
    "ops.indexing": "indexing, masks, triangles",
    "ops.linalg": "matrix products, einsum",
    "ops.normalization": "normalization",
    "ops.creation": "creation and sampling",
    "losses": "losses",
}


# Where the README lists the method-only rows (``x[...]``, ``x.transpose()``).
_METHOD_ONLY_HOME = {"getitem": "ops.indexing", "transpose": "ops.shape"}


def readme_op_list() -> str:
    """The README's op list, made from the op table (shapegrad/_opspec.py): every op, by module."""
    from shapegrad._opspec import OPS as SPEC_OPS

    by_module: dict[str, set[str]] = {}
    for op in SPEC_OPS:
        module = op.module or _METHOD_ONLY_HOME[op.name]
        by_module.setdefault(module, set()).add(op.name)
    lines = []
    for module, title in _MODULE_TITLES.items():
        names = sorted(by_module.pop(module))
        lines.append(f"- {title} (`sg.{module}`): " + " ".join(f"`{n}`" for n in names))
    assert not by_module, f"modules without a title in the README's list: {sorted(by_module)}"
    return "\n".join(lines)


if __name__ == "__main__":
    import re
    import sys
    from pathlib import Path

    readme = Path(__file__).parents[2] / "README.md"
    text = readme.read_text()
    block = f"<!-- op list: made by `python tests/support/op_table.py --write` -->\n{readme_op_list()}\n<!-- end of op list -->"
    new = re.sub(r"<!-- op list: .*?<!-- end of op list -->", lambda _: block, text, flags=re.S)
    if "--write" in sys.argv:
        readme.write_text(new)
    print(readme_op_list())
