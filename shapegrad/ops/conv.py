"""Sliding windows: ``unfold`` (im2col) and its adjoint ``fold`` (col2im), the convolution
built on them, and max pooling.

Transposed convolution is a composite of ``fold``, ``reshape``/``permute`` and one
``matmul`` (see ``shapegrad.nn``). ``conv2d`` is one op with its own rule: its bias is added
in place to the matrix product and its gradient is one sum over contiguous rows, where the
composite added a broadcast bias to a permuted view and reduced over three strided axes. The
windows are gathered with ``kh · kw`` strided slices, which every Array-API backend supports,
instead of NumPy-only stride tricks.
"""

from __future__ import annotations

from typing import Any

from .._autodiff import row_sums, wants_grad
from .._backend import fused_kernel, same_backend
from .._errors import ShapeError
from .._tensor import AnyTensor, record
from ._toolkit import check_same_float, keep_where

__all__ = ["conv2d", "conv_output_size", "fold", "max_pool2d", "unfold"]

Pair = tuple[int, int]


def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output length of a convolution or pooling along one axis (PyTorch's formula)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def _windows_fitting(size: Pair, kernel: Pair, stride: Pair, padding: Pair, dilation: Pair) -> Pair:
    """How many windows fit along height and width, or ``ShapeError`` when none does."""
    out = (
        conv_output_size(size[0], kernel[0], stride[0], padding[0], dilation[0]),
        conv_output_size(size[1], kernel[1], stride[1], padding[1], dilation[1]),
    )
    if out[0] <= 0 or out[1] <= 0:
        raise ShapeError(
            f"window {kernel} (dilation {dilation}, padding {padding}) does not fit input of "
            f"height×width {size[0]}×{size[1]}"
        )
    return out


def _window_slices(i: int, j: int, stride: Pair, dilation: Pair, out: Pair) -> tuple[Any, ...]:
    top, left = i * dilation[0], j * dilation[1]
    return (
        slice(None),
        slice(None),
        slice(top, top + stride[0] * (out[0] - 1) + 1, stride[0]),
        slice(left, left + stride[1] * (out[1] - 1) + 1, stride[1]),
    )


def _im2col(
    xp: Any, x: Any, kernel: Pair, stride: Pair, padding: Pair, dilation: Pair, out: Pair, window_axis: int = 2
) -> Any:
    x = _padded(xp, x, padding, 0.0)
    windows = [x[_window_slices(i, j, stride, dilation, out)] for i in range(kernel[0]) for j in range(kernel[1])]
    return xp.stack(windows, axis=window_axis)  # (N0, N1, kh*kw, Ho, Wo), or (N0, kh*kw, N1, Ho, Wo)


def _col2im(
    xp: Any,
    cols: Any,
    size: Pair,
    kernel: Pair,
    stride: Pair,
    padding: Pair,
    dilation: Pair,
    out: Pair,
    window_axis: int = 2,
) -> Any:
    lead = (cols.shape[0], cols.shape[3 - window_axis])
    h, w = size
    full = xp.zeros((*lead, h + 2 * padding[0], w + 2 * padding[1]), dtype=cols.dtype)
    k = 0
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            index = _window_slices(i, j, stride, dilation, out)
            full[index] += cols[:, k, ...] if window_axis == 1 else cols[:, :, k, ...]
            k += 1
    if padding != (0, 0):
        full = full[:, :, padding[0] : padding[0] + h, padding[1] : padding[1] + w]
    return full


def unfold_backward(
    xp: Any, g: Any, size: Pair, kernel: Pair, stride: Pair, padding: Pair, dilation: Pair, out: Pair, window_axis: int
) -> tuple[Any, ...]:
    return (_col2im(xp, g, size, kernel, stride, padding, dilation, out, window_axis),)


def unfold(
    x: AnyTensor,
    kernel: Pair,
    stride: Pair = (1, 1),
    padding: Pair = (0, 0),
    dilation: Pair = (1, 1),
    window_axis: int = 2,
) -> Any:
    """Every ``kernel``-sized window of a ``(B, C, H, W)`` tensor: ``(B, C, kh·kw, Ho, Wo)``,
    or ``(B, kh·kw, C, Ho, Wo)`` with ``window_axis=1`` (the layout a convolution over a
    ``(C, B, H, W)`` view needs for one matrix product over the whole batch).

    The adjoint of :func:`fold`, which is its gradient. PyTorch: ``F.unfold`` (laid out
    differently).
    """
    if window_axis not in (1, 2):
        raise ShapeError(f"unfold: window_axis is 1 or 2, found {window_axis}")
    if x.ndim != 4:
        raise ShapeError(f"unfold expects a (batch, channels, height, width) tensor, found shape {x.shape}")
    h, w = x.shape[2], x.shape[3]
    out = _windows_fitting((h, w), kernel, stride, padding, dilation)
    xp = x._backend.xp
    cols = _im2col(xp, x._data, kernel, stride, padding, dilation, out, window_axis)
    saved = ((h, w), kernel, stride, padding, dilation, out, window_axis)
    return record(cols, unfold_backward, (x,), saved, x._backend)


def _conv_geometry(x: AnyTensor, weight: AnyTensor, groups: int, stride: Pair, padding: Pair, dilation: Pair) -> Pair:
    if x.ndim != 4:
        raise ShapeError(f"conv2d expects input (batch, channels, height, width), found shape {x.shape}")
    if weight.ndim != 4:
        raise ShapeError(f"conv2d expects weight (out, in/groups, kh, kw), found shape {weight.shape}")
    out_ch, group_in, kh, kw = weight.shape
    c = x.shape[1]
    if groups < 1 or c != group_in * groups or out_ch % groups:
        raise ShapeError(
            f"conv2d: input has {c} channels, expected {group_in * groups} (weight {weight.shape} with groups={groups})"
        )
    return _windows_fitting((x.shape[2], x.shape[3]), (kh, kw), stride, padding, dilation)


def conv2d_backward(
    xp: Any,
    g: Any,
    cols: Any,
    kernel: Any,
    weight_shape: tuple[int, ...],
    size: Pair,
    stride: Pair,
    padding: Pair,
    dilation: Pair,
    need_x: bool,
    need_w: bool,
    has_bias: bool,
) -> tuple[Any, ...]:
    # g (B, O, Ho, Wo) as the (groups, O/groups, B·Ho·Wo) product the forward pass made.
    groups, per_group, _ = kernel.shape
    out_ch, _, kh, kw = weight_shape
    b, _, ho, wo = g.shape
    rows = xp.reshape(xp.permute_dims(g, (1, 0, 2, 3)), (groups, per_group, b * ho * wo))
    gw = xp.reshape(xp.matmul(rows, xp.matrix_transpose(cols)), weight_shape) if need_w else None
    gx = None
    if need_x:  # skipped for an input that only carries the tape (a network's first layer)
        gcols = xp.reshape(xp.matmul(xp.matrix_transpose(kernel), rows), (-1, kh * kw, b, ho, wo))
        image = _col2im(xp, gcols, size, (kh, kw), stride, padding, dilation, (ho, wo), window_axis=1)
        gx = xp.permute_dims(image, (1, 0, 2, 3))
    if not has_bias:
        return gx, gw
    return gx, gw, row_sums(xp, xp.reshape(rows, (out_ch, -1)))


def conv2d(
    x: AnyTensor,
    weight: AnyTensor,
    bias: AnyTensor | None = None,
    stride: Pair = (1, 1),
    padding: Pair = (0, 0),
    dilation: Pair = (1, 1),
    groups: int = 1,
) -> Any:
    """2-D cross-correlation of ``x (B, C, H, W)`` with ``weight (O, C/groups, kh, kw)``,
    plus ``bias (O,)``: ``(B, O, Ho, Wo)``. PyTorch: ``F.conv2d``.

    The windows of the ``(C, B, H, W)`` view are gathered once as ``(C·kh·kw, B·Ho·Wo)``
    columns (per group), so one matrix product covers the whole batch; the bias is added to
    it in place. Backward: ``gW = g·colsᵀ``, ``gb`` a sum over each output channel's row,
    ``gx`` the columns ``Wᵀ·g`` folded back (skipped for an input that only carries the tape).
    """
    backend = same_backend(x, weight)
    if bias is not None:
        same_backend(x, bias)
    check_same_float("conv2d", x, weight, ("input", "weight"))
    out = _conv_geometry(x, weight, groups, stride, padding, dilation)
    out_ch, group_in, kh, kw = weight.shape
    if bias is not None and tuple(bias.shape) != (out_ch,):
        raise ShapeError(f"conv2d: bias of shape {bias.shape} for weight {weight.shape}; expected ({out_ch},)")
    xp = backend.xp
    data = x._data
    b = data.shape[0]
    windows = _im2col(xp, xp.permute_dims(data, (1, 0, 2, 3)), (kh, kw), stride, padding, dilation, out, 1)
    cols = xp.reshape(windows, (groups, group_in * kh * kw, b * out[0] * out[1]))
    kernel = xp.reshape(weight._data, (groups, out_ch // groups, group_in * kh * kw))
    product = xp.reshape(xp.matmul(kernel, cols), (out_ch, b * out[0] * out[1]))
    inputs: tuple[AnyTensor, ...] = (x, weight)
    if bias is not None:
        product += xp.reshape(bias._data, (out_ch, 1))
        inputs = (x, weight, bias)
    result = xp.permute_dims(xp.reshape(product, (out_ch, b, *out)), (1, 0, 2, 3))
    size = (data.shape[2], data.shape[3])
    need = (wants_grad(x), wants_grad(weight), bias is not None)
    saved = (cols, kernel, tuple(weight.shape), size, stride, padding, dilation, *need)
    return record(result, conv2d_backward, inputs, saved, backend)


def fold_backward(
    xp: Any, g: Any, kernel: Pair, stride: Pair, padding: Pair, dilation: Pair, out: Pair
) -> tuple[Any, ...]:
    return (_im2col(xp, g, kernel, stride, padding, dilation, out),)


def fold(
    cols: AnyTensor, size: Pair, kernel: Pair, stride: Pair = (1, 1), padding: Pair = (0, 0), dilation: Pair = (1, 1)
) -> Any:
    """Windows ``(B, C, kh·kw, Ho, Wo)`` summed back into a ``(B, C, H, W)`` image.

    The adjoint of :func:`unfold`; with a matmul in front it is a transposed convolution.
    PyTorch: ``F.fold`` (laid out differently).
    """
    if cols.ndim != 5 or cols.shape[2] != kernel[0] * kernel[1]:
        raise ShapeError(f"fold expects windows (B, C, {kernel[0] * kernel[1]}, Ho, Wo), found shape {cols.shape}")
    out = (cols.shape[3], cols.shape[4])
    for axis in range(2):
        expected = conv_output_size(size[axis], kernel[axis], stride[axis], padding[axis], dilation[axis])
        if expected != out[axis]:
            raise ShapeError(f"fold: {out} windows do not tile an image of size {size}")
    xp = cols._backend.xp
    image = _col2im(xp, cols._data, size, kernel, stride, padding, dilation, out)
    return record(image, fold_backward, (cols,), (kernel, stride, padding, dilation, out), cols._backend)


def _pool_geometry(x: AnyTensor, kernel: Pair, stride: Pair, padding: Pair) -> Pair:
    if x.ndim != 4:
        raise ShapeError(f"pooling expects a (batch, channels, height, width) tensor, found shape {x.shape}")
    out = (
        conv_output_size(x.shape[2], kernel[0], stride[0], padding[0], 1),
        conv_output_size(x.shape[3], kernel[1], stride[1], padding[1], 1),
    )
    if out[0] <= 0 or out[1] <= 0:
        raise ShapeError(
            f"pooling window {kernel} (padding {padding}) does not fit input of height×width {x.shape[2]}×{x.shape[3]}"
        )
    return out


def _padded(xp: Any, x: Any, padding: Pair, fill: float) -> Any:
    if padding == (0, 0):
        return x
    b, c, h, w = x.shape
    full = xp.full((b, c, h + 2 * padding[0], w + 2 * padding[1]), fill, dtype=x.dtype)
    full[:, :, padding[0] : padding[0] + h, padding[1] : padding[1] + w] = x
    return full


def max_pool2d_backward(
    xp: Any, g: Any, index: Any, shape: tuple[int, ...], kernel: Pair, stride: Pair, padding: Pair, out: Pair
) -> tuple[Any, ...]:
    full = xp.zeros(shape, dtype=g.dtype)
    k = 0
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            full[_window_slices(i, j, stride, (1, 1), out)] += keep_where(xp, index == k, g)
            k += 1
    h, w = shape[2] - 2 * padding[0], shape[3] - 2 * padding[1]
    return (full[:, :, padding[0] : padding[0] + h, padding[1] : padding[1] + w],)


def max_pool2d(x: AnyTensor, kernel: Pair, stride: Pair, padding: Pair = (0, 0)) -> Any:
    """Maximum over each window of a ``(B, C, H, W)`` tensor; padding counts as ``-inf``.

    A running maximum over the ``kh·kw`` strided slices (no window copy) that also records
    which slice won, so that the gradient goes to the first maximum of each window, as
    PyTorch's ``F.max_pool2d``.
    """
    out = _pool_geometry(x, kernel, stride, padding)
    data = x._data
    compiled = fused_kernel(x._backend, "max_pool2d", data.dtype)
    if compiled is not None:  # one pass over the windows; the same index as below
        result, index = compiled(data, kernel, stride, padding, out)
        b, c, h, w = data.shape
        padded_shape = (b, c, h + 2 * padding[0], w + 2 * padding[1])
        saved = (index, padded_shape, kernel, stride, padding, out)
        return record(result, max_pool2d_backward, (x,), saved, x._backend)
    xp = x._backend.xp
    padded = _padded(xp, x._data, padding, -float("inf"))
    result = xp.asarray(padded[_window_slices(0, 0, stride, (1, 1), out)], copy=True)
    index = xp.zeros(result.shape, dtype=xp.int8 if kernel[0] * kernel[1] < 128 else xp.int32)
    k = 0
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            if k:
                window = padded[_window_slices(i, j, stride, (1, 1), out)]
                larger = window > result
                index = index + xp.astype(larger, index.dtype) * (k - index)
                result = xp.maximum(result, window)
            k += 1
    saved = (index, tuple(padded.shape), kernel, stride, padding, out)
    return record(result, max_pool2d_backward, (x,), saved, x._backend)
