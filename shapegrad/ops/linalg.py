"""Matrix products."""

from __future__ import annotations

from typing import Any, overload

from .._errors import ShapeError
from .._tape import NoTape
from .._tensor import AnyTensor, Tensor, record, same_backend, wants_grad
from .._typevars import A, K, N, S, T

__all__ = ["matmul"]


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
    gb = xp.matmul(xp.matrix_transpose(a), g) if need_b else None
    return ga, gb


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


def matmul_impl(a: AnyTensor, b: AnyTensor) -> Any:
    if not isinstance(b, Tensor):  # pyright: ignore[reportUnnecessaryIsInstance] -- callers may be untyped
        raise ShapeError(f"matmul expects two tensors, found {type(b).__name__} on the right")
    backend = same_backend(a, b)
    x, y = a._data, b._data
    if x.ndim == 0 or y.ndim == 0:
        raise _mismatch(a, b)
    try:
        out = backend.xp.matmul(x, y)
    except ValueError:
        raise _mismatch(a, b) from None
    return record(out, matmul_backward, (a, b), (x, y, wants_grad(a), wants_grad(b)), backend)


@overload
def matmul(a: Tensor[NoTape, *S, N, K], b: Tensor[NoTape, K, A]) -> Tensor[NoTape, *S, N, A]: ...
@overload
def matmul(a: Tensor[T, *S, N, K], b: Tensor[NoTape, K, A]) -> Tensor[T, *S, N, A]: ...
@overload
def matmul(a: Tensor[NoTape, *S, N, K], b: Tensor[T, K, A]) -> Tensor[T, *S, N, A]: ...
@overload
def matmul(a: Tensor[T, *S, N, K], b: Tensor[T, K, A]) -> Tensor[T, *S, N, A]: ...
@overload
def matmul(a: Tensor[NoTape, *S, N, K], b: Tensor[NoTape, *S, K, A]) -> Tensor[NoTape, *S, N, A]: ...
@overload
def matmul(a: Tensor[T, *S, N, K], b: Tensor[NoTape, *S, K, A]) -> Tensor[T, *S, N, A]: ...
@overload
def matmul(a: Tensor[NoTape, *S, N, K], b: Tensor[T, *S, K, A]) -> Tensor[T, *S, N, A]: ...
@overload
def matmul(a: Tensor[T, *S, N, K], b: Tensor[T, *S, K, A]) -> Tensor[T, *S, N, A]: ...
@overload
def matmul(a: Tensor[NoTape, *S, N, K], b: Tensor[NoTape, K]) -> Tensor[NoTape, *S, N]: ...
@overload
def matmul(a: Tensor[T, *S, N, K], b: Tensor[NoTape, K]) -> Tensor[T, *S, N]: ...
@overload
def matmul(a: Tensor[NoTape, *S, N, K], b: Tensor[T, K]) -> Tensor[T, *S, N]: ...
@overload
def matmul(a: Tensor[T, *S, N, K], b: Tensor[T, K]) -> Tensor[T, *S, N]: ...
@overload
def matmul(a: Tensor[NoTape, K], b: Tensor[NoTape, K, A]) -> Tensor[NoTape, A]: ...
@overload
def matmul(a: Tensor[T, K], b: Tensor[NoTape, K, A]) -> Tensor[T, A]: ...
@overload
def matmul(a: Tensor[NoTape, K], b: Tensor[T, K, A]) -> Tensor[T, A]: ...
@overload
def matmul(a: Tensor[T, K], b: Tensor[T, K, A]) -> Tensor[T, A]: ...
@overload
def matmul(a: Tensor[NoTape, K], b: Tensor[NoTape, K]) -> Tensor[NoTape]: ...
@overload
def matmul(a: Tensor[T, K], b: Tensor[NoTape, K]) -> Tensor[T]: ...
@overload
def matmul(a: Tensor[NoTape, K], b: Tensor[T, K]) -> Tensor[T]: ...
@overload
def matmul(a: Tensor[T, K], b: Tensor[T, K]) -> Tensor[T]: ...
def matmul(a: AnyTensor, b: AnyTensor) -> AnyTensor:
    """Matrix product with NumPy's rules: 1-D operands are vectors, leading dims broadcast.

    d/da = g @ bᵀ, d/db = aᵀ @ g. PyTorch: ``torch.matmul``. Unlike the ``@`` operator, a
    static mismatch here makes pyright name both argument types.

    Example:
        >>> import shapegrad as sg
        >>> sg.matmul(sg.ones(2, 3), sg.ones(3, 4)).shape
        (2, 4)
    """
    return matmul_impl(a, b)
