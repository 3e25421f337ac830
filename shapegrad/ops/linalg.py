"""Matrix products."""

from __future__ import annotations

from typing import Any

from .._autodiff import column_sums, wants_grad
from .._backend import same_backend
from .._errors import DTypeError, ShapeError
from .._tensor import AnyTensor, Tensor, record

__all__ = ["linear", "matmul"]


def matmul_backward(xp: Any, g: Any, a: Any, b: Any, need_a: bool, need_b: bool) -> tuple[Any, ...]:
    if a.ndim == 1 and b.ndim == 1:
        return g * b, g * a
    if a.ndim == 1:
        # (k) @ (..., k, m) -> (..., m)
        g2 = xp.expand_dims(g, axis=-2)
        ga = xp.matmul(g2, xp.matrix_transpose(b))[..., 0, :]
        gb = xp.expand_dims(a, axis=-1) * g2
        return ga, gb
    if b.ndim == 1:
        # (..., n, k) @ (k) -> (..., n)
        g2 = xp.expand_dims(g, axis=-1)
        ga = g2 * b
        gb = xp.matmul(xp.matrix_transpose(a), g2)[..., 0]
        return ga, gb
    # The two products are the costly part of a dense layer's backward: skip the one whose
    # operand wants no gradient (an input that only carries the tape, a frozen weight).
    ga = xp.matmul(g, xp.matrix_transpose(b)) if need_a else None
    if need_b and b.ndim == 2 and a.ndim > 2:
        # A batch of rows times one matrix (a tied output head): one product over all rows,
        # not a batch of products summed afterwards.
        k, m = b.shape
        gb = xp.matmul(xp.matrix_transpose(xp.reshape(a, (-1, k))), xp.reshape(g, (-1, m)))
    else:
        gb = xp.matmul(xp.matrix_transpose(a), g) if need_b else None
    return ga, gb


def check_same_float(op: str, a: AnyTensor, b: AnyTensor, names: tuple[str, str] = ("left", "right")) -> None:
    """Refuse two floating-point operands of different precision in a product.

    Element-wise ops promote (float32 with float64 gives float64, as in NumPy and PyTorch),
    but a float64 batch meeting float32 weights in a matrix product is almost always data
    that was not converted (scikit-learn and NumPy default to float64): promoting would make
    the whole model run in float64, twice as slow, silently. PyTorch raises here too.
    """
    da, db = a._data.dtype, b._data.dtype
    if da == db:
        return
    name_a, name_b = a._backend.dtype_name(da), b._backend.dtype_name(db)
    if name_a.startswith("float") and name_b.startswith("float"):
        raise DTypeError(
            f"{op}: {names[0]} is {name_a} {a.shape} but {names[1]} is {name_b} {b.shape}; expected one "
            f"floating dtype (shapegrad, like PyTorch, does not promote in products). Convert the data, "
            f"e.g. x.astype({name_b!r})"
        )


def _mismatch(a: AnyTensor, b: AnyTensor) -> ShapeError:
    inner_a = a.shape[-1] if a.ndim else None
    inner_b = (b.shape[-2] if b.ndim >= 2 else b.shape[0]) if b.ndim else None
    if a.ndim == 0 or b.ndim == 0:
        return ShapeError(f"matmul expects operands of rank >= 1, found shapes {a.shape} and {b.shape}")
    if inner_a != inner_b:
        return ShapeError(
            f"matmul: inner dims differ: left {a.shape} has {inner_a} columns (axis -1), "
            f"right {b.shape} has {inner_b} rows; expected them equal"
        )
    return ShapeError(f"matmul: batch dims of {a.shape} and {b.shape} do not broadcast")


def matmul(a: AnyTensor, b: AnyTensor) -> Any:
    """Matrix product with NumPy's rules: 1-D operands are vectors, leading dims broadcast.

    d/da = g @ bᵀ, d/db = aᵀ @ g. PyTorch: ``torch.matmul``. Unlike the ``@`` operator, a
    static mismatch here makes pyright name both argument types.

    Examples:
        >>> import shapegrad as sg
        >>> sg.matmul(sg.ones(2, 3), sg.ones(3, 4)).shape
        (2, 4)
    """
    if not isinstance(b, Tensor):  # pyright: ignore[reportUnnecessaryIsInstance] -- callers may be untyped
        raise ShapeError(f"matmul expects two tensors, found {type(b).__name__} on the right")
    backend = same_backend(a, b)
    check_same_float("matmul", a, b)
    x, y = a._data, b._data
    if x.ndim == 0 or y.ndim == 0:
        raise _mismatch(a, b)
    try:
        out = backend.xp.matmul(x, y)
    except ValueError:
        raise _mismatch(a, b) from None
    return record(out, matmul_backward, (a, b), (x, y, wants_grad(a), wants_grad(b)), backend)


def linear_backward(xp: Any, g: Any, x: Any, w: Any, need_x: bool, need_w: bool, has_bias: bool) -> tuple[Any, ...]:
    features_in, features_out = w.shape
    rows = xp.reshape(g, (-1, features_out))
    gx = xp.reshape(xp.matmul(rows, xp.matrix_transpose(w)), x.shape) if need_x else None
    gw = xp.matmul(xp.matrix_transpose(xp.reshape(x, (-1, features_in))), rows) if need_w else None
    if not has_bias:
        return gx, gw
    return gx, gw, column_sums(xp, rows)


def linear(x: AnyTensor, weight: AnyTensor, bias: AnyTensor | None = None) -> Any:
    """``x @ weight + bias`` over the last axis of ``x`` (any leading dims), as one op.

    Fused so that the backward pass is two plain matrix products over all leading dims at
    once (``gW = xᵀ·g`` with the batch flattened) and the bias gradient one sum, instead of
    a batched product and a broadcast reduction. ``weight`` is ``(in, out)``.
    PyTorch: ``F.linear(x, weight.T, bias)``.
    """
    backend = same_backend(x, weight)
    if bias is not None:
        same_backend(x, bias)
    check_same_float("linear", x, weight, ("input", "weight"))
    data, w = x._data, weight._data
    if data.ndim == 0 or w.ndim != 2 or data.shape[-1] != w.shape[0]:
        raise ShapeError(
            f"linear: inner dims differ: input {x.shape} has {data.shape[-1] if data.ndim else 'no'} features "
            f"(axis -1), weight {weight.shape} expects {w.shape[0] if w.ndim else '?'}"
        )
    xp = backend.xp
    if data.ndim > 2:  # one (rows × in) @ (in × out) product rather than one per leading index
        out = xp.reshape(xp.matmul(xp.reshape(data, (-1, w.shape[0])), w), (*data.shape[:-1], w.shape[1]))
    else:
        out = xp.matmul(data, w)
    inputs: tuple[AnyTensor, ...] = (x, weight)
    if bias is not None:
        out += bias._data
        inputs = (x, weight, bias)
    saved = (data, w, wants_grad(x), wants_grad(weight), bias is not None)
    return record(out, linear_backward, inputs, saved, backend)
