"""Matrix products."""

from __future__ import annotations

import math
from typing import Any, overload

from .._autodiff import NoTape, column_sums, wants_grad
from .._backend import same_backend
from .._dims import Open
from .._errors import ShapeError
from .._products import matrix_product, times_transposed
from .._tensor import AnyTensor, Tensor, record
from .._typevars import T
from ._toolkit import check_same_float

__all__ = [
    "einsum",
    "linear",
    "matmul",
]


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
    ga = times_transposed(xp, g, b) if need_a else None
    if need_b and b.ndim == 2 and a.ndim > 2:
        # A batch of rows times one matrix (a tied output head): one product over all rows,
        # not a batch of products summed afterwards.
        k, m = b.shape
        gb = xp.matmul(xp.matrix_transpose(xp.reshape(a, (-1, k))), xp.reshape(g, (-1, m)))
    else:
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
        out = matrix_product(backend.xp, x, y)
    except ValueError:
        raise _mismatch(a, b) from None
    return record(out, matmul_backward, (a, b), (x, y, wants_grad(a), wants_grad(b)), backend)


def linear_backward(xp: Any, g: Any, x: Any, w: Any, need_x: bool, need_w: bool, has_bias: bool) -> tuple[Any, ...]:
    features_in, features_out = w.shape
    if x.ndim == 2:  # no reshapes: on a device each is a call with a launch's host cost
        rows, flat = g, x
        gx = times_transposed(xp, g, w) if need_x else None
    else:
        n = math.prod(x.shape[:-1])  # not -1 in the reshapes: ambiguous where a size is 0 (no features)
        rows, flat = xp.reshape(g, (n, features_out)), xp.reshape(x, (n, features_in))
        gx = xp.reshape(times_transposed(xp, rows, w), x.shape) if need_x else None
    gw = xp.matmul(xp.matrix_transpose(flat), rows) if need_w else None
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
        flat = xp.reshape(data, (math.prod(data.shape[:-1]), w.shape[0]))
        out = xp.reshape(matrix_product(xp, flat, w), (*data.shape[:-1], w.shape[1]))
    else:
        out = matrix_product(xp, data, w)  # w may be a transpose: nn.LSTM's (out, in) weights
    inputs: tuple[AnyTensor, ...] = (x, weight)
    if bias is not None:
        out += bias._data
        inputs = (x, weight, bias)
    saved = (data, w, wants_grad(x), wants_grad(weight), bias is not None)
    return record(out, linear_backward, inputs, saved, backend)


# --------------------------------------------------------------------------- einsum
def _parse_einsum(spec: str, count: int) -> tuple[list[str], str]:
    if "." in spec:
        raise ShapeError(f"einsum: ellipsis ('...') is not supported, found {spec!r}; name every axis")
    inputs, arrow, output = spec.replace(" ", "").partition("->")
    terms = inputs.split(",")
    if len(terms) != count:
        raise ShapeError(f"einsum: {spec!r} names {len(terms)} operands, found {count}")
    if not arrow:  # NumPy's implicit output: letters used once, in order
        output = "".join(sorted(c for c in set(inputs) if c.isalpha() and inputs.count(c) == 1))
    for letter in output:
        if letter not in inputs:
            raise ShapeError(f"einsum {spec!r}: output letter {letter!r} names no axis of the operands ({inputs!r})")
        if output.count(letter) > 1:
            raise ShapeError(f"einsum {spec!r}: output letter {letter!r} appears {output.count(letter)} times")
    for letter in inputs.replace(",", ""):
        if not letter.isalpha():
            raise ShapeError(f"einsum {spec!r}: subscripts are letters, found {letter!r}")
    return terms, output


def _distinct(term: str) -> str:
    """The letters of ``term`` in order, each once: ``"iji"`` is ``"ij"``."""
    return "".join(dict.fromkeys(term))


def _undiagonal(backend: Any, grad: Any, term: str, shape: tuple[int, ...], used: str) -> Any:
    """The gradient of an operand whose subscripts repeat a letter (``"ii"``), from the
    gradient of its diagonal (over ``_distinct(term)``): placed on the diagonal, 0 off it.
    Each repeat gets a fresh letter tied to the first by an identity matrix, so the
    placement is one contraction (``"i,ij->ij"`` with ``eye``)."""
    xp = backend.xp
    fresh = (c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in used)
    full: list[str] = []
    ties: list[str] = []
    eyes: list[Any] = []
    for axis, letter in enumerate(term):
        if letter in term[:axis]:
            other = next(fresh)
            full.append(other)
            ties.append(letter + other)
            eyes.append(xp.eye(shape[axis], dtype=grad.dtype))
        else:
            full.append(letter)
    return _contract(backend, ",".join([_distinct(term), *ties]) + "->" + "".join(full), [grad, *eyes])


def einsum_backward(
    xp: Any, g: Any, terms: list[str], output: str, arrays: tuple[Any, ...], backend: Any
) -> tuple[Any, ...]:
    grads: list[Any] = []
    used = "".join(terms) + output
    for k, term in enumerate(terms):
        others = [(t, a) for i, (t, a) in enumerate(zip(terms, arrays, strict=True)) if i != k]
        available = set(output).union(*[set(t) for t, _ in others])
        distinct = _distinct(term)
        kept = "".join(c for c in distinct if c in available)
        spec = ",".join([output, *[t for t, _ in others]]) + "->" + kept
        grad = _contract(backend, spec, [g, *[a for _, a in others]])
        shape = tuple(arrays[k].shape[term.index(c)] for c in distinct)
        if kept != distinct:  # letters only this operand had were summed away: their gradient is constant along them
            grad = xp.broadcast_to(
                xp.reshape(grad, tuple(n if c in kept else 1 for c, n in zip(distinct, shape, strict=True))), shape
            )
        if distinct != term:  # a repeated letter took a diagonal: its gradient lies on it
            grad = _undiagonal(backend, grad, term, tuple(arrays[k].shape), used)
        grads.append(grad)
    return tuple(grads)


def _contract(backend: Any, spec: str, arrays: list[Any]) -> Any:
    xp = backend.xp
    einsum_fn = getattr(xp, "einsum", None)
    if einsum_fn is not None:
        # NumPy's and CuPy's einsum choose the contraction order with opt_einsum's greedy path.
        return einsum_fn(spec, *arrays, optimize="greedy")
    import numpy as np  # a strict Array-API library has no einsum: contract on the host

    host = np.einsum(spec, *[np.asarray(backend.to_numpy(a)) for a in arrays], optimize="greedy")
    return backend.asarray(host, None)


# The result is traced when an operand is. An untraced first operand before a caller's tape
# variable first (pyright solves ``T`` from it to ``Never`` and does not widen it after: see
# ``_typegen.UNTRACED_FIRST``).
@overload
def einsum(
    spec: str, first: Tensor[NoTape, *tuple[Any, ...]], /, *operands: Tensor[T, *tuple[Any, ...]]
) -> Tensor[T, *tuple[Open, ...]]: ...
@overload
def einsum(spec: str, /, *operands: Tensor[T, *tuple[Any, ...]]) -> Tensor[T, *tuple[Open, ...]]: ...
def einsum(spec: str, /, *operands: AnyTensor) -> Any:
    """Einstein summation, ``einsum("bij,bjk->bik", a, b)``, differentiable in every operand.
    Each letter must bind one size (else ``ShapeError`` naming the letter); the contraction
    order is chosen by NumPy's/CuPy's optimizer (opt_einsum's greedy path). A letter repeated
    within one operand takes its diagonal (``"ii->"`` is the trace, ``"ii->i"`` the
    diagonal); the output names each letter at most once. No ``...``. PyTorch:
    ``torch.einsum``.

    Examples:
        >>> import shapegrad as sg
        >>> sg.einsum("ij,jk->ik", sg.ones(2, 3), sg.ones(3, 4)).shape
        (2, 4)
    """
    if not operands:
        raise ShapeError("einsum expects at least one operand")
    terms, output = _parse_einsum(spec, len(operands))
    backend = operands[0]._backend
    sizes: dict[str, tuple[int, int]] = {}
    for i, (term, operand) in enumerate(zip(terms, operands, strict=True)):
        same_backend(operands[0], operand)
        if len(term) != operand.ndim:
            raise ShapeError(f"einsum: operand {i} has shape {operand.shape} but subscripts {term!r}")
        for letter, size in zip(term, operand.shape, strict=True):
            seen = sizes.setdefault(letter, (size, i))
            if seen[0] != size:
                raise ShapeError(
                    f"einsum {spec!r}: letter {letter!r} is {seen[0]} in operand {seen[1]} but {size} in operand {i}"
                )
    for i, operand in enumerate(operands[1:], start=1):  # one dtype, as matmul (NumPy would promote)
        check_same_float("einsum", operands[0], operand, ("operand 0", f"operand {i}"))
    arrays = tuple(o._data for o in operands)
    out = _contract(backend, f"{','.join(terms)}->{output}", list(arrays))
    # The arrays are saved inside a tuple, where the engine's search by identity does not look:
    # every operand is read (each one's gradient reads the others), the result is not.
    reads = (True,) * len(operands) + (False,)
    return record(out, einsum_backward, operands, (terms, output, arrays, backend), backend, reads)
