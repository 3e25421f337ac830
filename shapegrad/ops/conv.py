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

import builtins
import math
from collections.abc import Callable
from typing import Any

from .._autodiff import column_sums, wants_grad
from .._backend import fused_kernel, same_backend
from .._errors import ShapeError
from .._tensor import AnyTensor, record, wrap
from ._toolkit import check_same_float, keep_where

__all__ = [
    "avg_pool_cells",
    "check_extents",
    "check_pool_padding",
    "conv2d",
    "conv_output_size",
    "fold",
    "max_pool2d",
    "pool_geometry",
    "pool_output_size",
    "unfold",
]

Pair = tuple[int, int]


def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output length of a convolution or pooling along one axis (PyTorch's formula)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


_EXTENTS = ("channels", "height", "width")


def check_extents(op: str, shape: tuple[int, ...], empty_batch_spatial: bool = False) -> None:
    """``ShapeError`` naming each zero extent but the batch of a ``(B, C, H, W)`` input.
    PyTorch's pooling and ``unfold`` take an empty batch and nothing else empty; its
    convolutions also take a zero height or width in an empty batch (``empty_batch_spatial``;
    the padding must still fit a window), and zero channels, for which they return no output
    channels whatever the weight has: refused here."""
    zero = [
        name
        for name, n in zip(_EXTENTS, shape[1:4], strict=False)
        if n == 0 and not (empty_batch_spatial and shape[0] == 0 and name != "channels")
    ]
    if zero:
        also = " (and in an empty batch the height or width)" if empty_batch_spatial else ""
        extents = " and zero ".join(zero)
        raise ShapeError(f"{op}: input of shape {tuple(shape)} has zero {extents}; only the batch may be empty{also}")


def _check_steps(op: str, kernel: Pair, stride: Pair, dilation: Pair) -> None:
    # A zero kernel, stride or dilation: PyTorch refuses it, and a zero stride divides by zero.
    for name, pair in (("kernel", kernel), ("stride", stride), ("dilation", dilation)):
        if min(pair) < 1:
            raise ShapeError(f"{op}: {name} {pair} must be positive")


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
    check_extents("unfold", x.shape)
    _check_steps("unfold", kernel, stride, dilation)
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
    check_extents("conv2d", x.shape, empty_batch_spatial=True)
    if out_ch == 0:  # PyTorch: "expected weight to be at least 1 at dimension 0"
        raise ShapeError(f"conv2d: weight {weight.shape} has no output channels")
    if groups < 1 or c != group_in * groups or out_ch % groups:
        raise ShapeError(
            f"conv2d: input has {c} channels, expected {group_in * groups} (weight {weight.shape} with groups={groups})"
        )
    _check_steps("conv2d", (kh, kw), stride, dilation)
    return _windows_fitting((x.shape[2], x.shape[3]), (kh, kw), stride, padding, dilation)


def _tap_slices(i: int, j: int, stride: Pair, dilation: Pair, out: Pair) -> tuple[Any, ...]:
    # The (B, Ho, Wo, C) pixels that tap (i, j) of every window reads, channels-last.
    rows, cols = _window_slices(i, j, stride, dilation, out)[2:]
    return (slice(None), rows, cols, slice(None))


def _gather_windows(
    xp: Any, image: Any, kernel: Pair, stride: Pair, padding: Pair, dilation: Pair, groups: int, out: Pair
) -> Any:
    """The reference im2col, channels-last: ``image (B, H, W, C)`` to columns
    ``(B·Ho·Wo, G, kh·kw·C/G)``, a row per output pixel (``backends/numba_conv.py`` gathers
    the same in one pass)."""
    b, h, w, c = image.shape
    if padding != (0, 0):
        full = xp.zeros((b, h + 2 * padding[0], w + 2 * padding[1], c), dtype=image.dtype)
        full[:, padding[0] : padding[0] + h, padding[1] : padding[1] + w, :] = image
        image = full
    taps = [image[_tap_slices(i, j, stride, dilation, out)] for i in range(kernel[0]) for j in range(kernel[1])]
    windows = xp.stack(taps, axis=3)  # (B, Ho, Wo, kh·kw, C)
    n, k = b * out[0] * out[1], kernel[0] * kernel[1]
    if groups == 1:
        return xp.reshape(windows, (n, 1, k * c))
    grouped = xp.permute_dims(xp.reshape(windows, (n, k, groups, c // groups)), (0, 2, 1, 3))
    return xp.reshape(grouped, (n, groups, k * (c // groups)))


def _scatter_windows(
    xp: Any, cols: Any, batch: int, size: Pair, kernel: Pair, stride: Pair, padding: Pair, dilation: Pair, out: Pair
) -> Any:
    """The adjoint of :func:`_gather_windows`: columns ``(B·Ho·Wo, G, kh·kw·C/G)`` summed back
    into an image ``(B, H, W, C)``."""
    groups, k = cols.shape[1], kernel[0] * kernel[1]
    per_group = cols.shape[2] // k
    c = groups * per_group
    windows = xp.reshape(cols, (batch, out[0], out[1], groups, k, per_group))
    h, w = size
    full = xp.zeros((batch, h + 2 * padding[0], w + 2 * padding[1], c), dtype=cols.dtype)
    tap = 0
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            full[_tap_slices(i, j, stride, dilation, out)] += xp.reshape(
                windows[:, :, :, :, tap, :], (batch, out[0], out[1], c)
            )
            tap += 1
    if padding != (0, 0):
        full = full[:, padding[0] : padding[0] + h, padding[1] : padding[1] + w, :]
    return full


def _per_group(xp: Any, m: Any, groups: int) -> Any:
    """``(rows, G·n)`` as ``(G, rows, n)``: a view, each group's block a strided matrix."""
    # Sizes spelled out: a -1 beside zero rows (an empty batch) is ambiguous to reshape.
    return xp.permute_dims(xp.reshape(m, (m.shape[0], groups, m.shape[1] // groups)), (1, 0, 2))


def _grouped_product(xp: Any, a: Any, b: Any, groups: int) -> Any:
    """``a (rows, G, k) @ b (G, k, n)`` per group, as ``(rows, G·n)``: one matrix product
    for one group, else a batched one and a copy into the rows' layout."""
    if groups == 1:
        return xp.matmul(a[:, 0, :], b[0, ...])
    product = xp.matmul(xp.permute_dims(a, (1, 0, 2)), b)  # (G, rows, n)
    return xp.reshape(xp.permute_dims(product, (1, 0, 2)), (a.shape[0], groups * b.shape[2]))


# Rows per product in a sum over pixels (the weight's gradient): OpenBLAS's sgemm took
# 1.3-2.1× as long for colsᵀ·g over all B·Ho·Wo rows at once as for the same sum cut into
# products of 512 rows (one batched matmul) and added, measured one thread on the CIFAR
# CNN's three shapes (a small output, a long reduction); 1,024 rows lost most of the gain.
_PIXEL_CHUNK = 512


def _pixel_sum(xp: Any, a: Any, b: Any) -> Any:
    """``Σₙ a[..., n, :]ᵀ b[..., n, :]`` for ``a (..., N, m)``, ``b (..., N, n)``: the
    product ``aᵀ·b`` over the long axis ``N``, as one batched product over chunks of
    :data:`_PIXEL_CHUNK` rows summed (the rows past the last whole chunk in one more product)."""
    n = a.shape[-2]
    whole = n - n % _PIXEL_CHUNK
    if whole < 2 * _PIXEL_CHUNK:
        return xp.matmul(xp.matrix_transpose(a), b)
    lead = a.shape[:-2]

    def chunks(m: Any) -> Any:  # (..., N, k) to (..., N/chunk, chunk, k): a view
        return xp.reshape(m[..., :whole, :], (*lead, whole // _PIXEL_CHUNK, _PIXEL_CHUNK, m.shape[-1]))

    total = xp.sum(xp.matmul(xp.matrix_transpose(chunks(a)), chunks(b)), axis=-3)
    if whole < n:
        total = total + xp.matmul(xp.matrix_transpose(a[..., whole:, :]), b[..., whole:, :])
    return total


def _image_chunks(batch: int, images: int) -> list[Pair]:
    """``(first, count)`` of each run of ``images`` images; one empty run for an empty batch."""
    return [(first, min(images, batch - first)) for first in range(0, batch, images)] or [(0, 0)]


def conv2d_backward(
    xp: Any,
    g: Any,
    cols: Any,
    by_tap: bool,
    regather: Any,
    kernel: Any,
    weight_shape: tuple[int, ...],
    size: Pair,
    stride: Pair,
    padding: Pair,
    dilation: Pair,
    col2im: Any,
    images: int,
    need_x: bool,
    need_w: bool,
    has_bias: bool,
) -> tuple[Any, ...]:
    # g (B, O, Ho, Wo) as the (B·Ho·Wo, O) product the forward pass made: its own memory
    # when g is channels-last, as the forward's result and its element-wise successors are.
    groups, per_group, k = kernel.shape
    out_ch, group_in, kh, kw = weight_shape
    b, _, ho, wo = g.shape
    rows = xp.reshape(xp.permute_dims(g, (0, 2, 3, 1)), (b * ho * wo, out_ch))
    taps = gw = gb = None
    # Σ over pixels of window ⊗ g, per group: (G, k, N) @ (G, N, O/G). As colsᵀ·g, not
    # gᵀ·cols: OpenBLAS takes 2-2.5× as long for the latter's layout (a small output, the
    # long sum over pixels in the operands' slow axis), measured.
    if need_w and by_tap:  # columns a row per tap (one group): (k [+1], N) @ (N, O) as it stands
        taps = xp.matmul(cols, rows)
    elif need_w and regather is None and groups == 1:
        taps = _pixel_sum(xp, cols[:, 0, :], rows)
    elif need_w and regather is None:
        taps = _pixel_sum(xp, xp.permute_dims(cols, (1, 0, 2)), _per_group(xp, rows, groups))
    parts = list[Any]()
    if need_x or (need_w and regather is not None):
        # On the host, `images` at a time (about _PIXEL_CHUNK pixels), while the chunk's
        # rows of g are in cache: its windows gathered again (`regather`, one group) for
        # the weight's sum, and its columns g·W summed into its images for the input's,
        # instead of all the columns (nine times the image for a 3×3 kernel) going out to
        # memory and back. The input's gradient is skipped for an input that only carries
        # the tape (a network's first layer).
        out = (ho, wo)
        for first, count in _image_chunks(b, images):
            part = rows[first * ho * wo : (first + count) * ho * wo, :]
            if need_w and regather is not None:
                term = xp.matmul(xp.matrix_transpose(regather(first, count)[:, 0, :]), part)
                taps = term if taps is None else taps + term
            if not need_x:
                continue
            grouped_rows = xp.reshape(part, (part.shape[0], groups, per_group))
            gcols = xp.reshape(_grouped_product(xp, grouped_rows, kernel, groups), (part.shape[0], groups, k))
            if col2im is not None:
                parts.append(col2im(gcols, count, size, (kh, kw), stride, padding, dilation, out))
            else:
                parts.append(_scatter_windows(xp, gcols, count, size, (kh, kw), stride, padding, dilation, out))
    if taps is not None:
        if taps.shape[-2] == k + 1:  # the forward's column (row) of ones: the bias's gradient
            gb, taps = taps[k, :], taps[:k, :]
        # (G, kh, kw, C/G, O/G) to the weight's (O, C/G, kh, kw), contiguous (a small copy).
        taps = xp.reshape(taps, (groups, kh, kw, group_in, per_group))
        gw = xp.reshape(xp.reshape(xp.permute_dims(taps, (0, 4, 3, 1, 2)), (-1,)), weight_shape)
    gx = None
    if need_x:
        image = parts[0] if len(parts) == 1 else xp.concat(parts, axis=0)
        gx = xp.permute_dims(image, (0, 3, 1, 2))
    if not has_bias:
        return gx, gw
    return gx, gw, column_sums(xp, rows) if gb is None else gb


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

    Channels-last inside: the windows of the ``(B, H, W, C)`` view are gathered once as
    ``(B·Ho·Wo, kh·kw·C)`` rows (per group), so one matrix product with the
    ``(O, kh·kw·C)`` kernel covers the whole batch, and the result is that ``(B·Ho·Wo, O)``
    product itself, viewed as ``(B, O, Ho, Wo)`` (element-wise ops and pooling keep the
    layout, and the next convolution's view of it is contiguous). The bias is added to it in
    place, or, where numba gathers the windows (one group), joins the product as a column of
    ones. Backward: ``gW = colsᵀ·g`` (summed over chunks of pixels), ``gb`` a sum over each
    output channel's column, ``gx`` the columns ``g·W`` summed back into the image (on the
    host a few images at a time; skipped for an input that only carries the tape). On the
    NumPy backend with numba the gathering and its adjoint are one compiled pass each
    (``backends/numba_conv.py``); with one group, a channels-first input (a network's
    images) is gathered transposed, a row per tap, the product reading it so, and a
    channels-last one (a convolution's result) a few images at a time, each chunk's columns
    multiplied while in cache and gathered again for the weight's gradient, never all kept.
    """
    backend = same_backend(x, weight)
    if bias is not None:
        same_backend(x, bias)
    check_same_float("conv2d", x, weight, ("input", "weight"))
    out = _conv_geometry(x, weight, groups, stride, padding, dilation)
    out_ch, _, kh, kw = weight.shape
    if bias is not None and tuple(bias.shape) != (out_ch,):
        raise ShapeError(f"conv2d: bias of shape {bias.shape} for weight {weight.shape}; expected ({out_ch},)")
    xp = backend.xp
    data = x._data
    b = data.shape[0]
    image = xp.permute_dims(data, (0, 2, 3, 1))
    im2col = fused_kernel(backend, "im2col", data.dtype)
    # With the compiled gathering and one group the bias rides in the product: each window
    # ends in a 1 and the kernel in the bias, so no pass over the result adds it (the first
    # layer's result is the largest array of a CNN), and the backward pass's product for the
    # weight gives the bias's gradient as its last row.
    ones = im2col is not None and bias is not None and groups == 1
    # A channels-first input (a network's images) is gathered a row per tap instead,
    # (kh·kw·C [+1], B·Ho·Wo): long runs of pixels where the channels-last rows of a
    # 3-channel image are runs of 9 values (backends/numba_conv.py); None for other layouts.
    planes = fused_kernel(backend, "im2col_planes", data.dtype) if groups == 1 else None
    cols = None if planes is None else planes(data, (kh, kw), stride, padding, dilation, out, ones)
    by_tap = cols is not None
    # Images per chunk on the host (about _PIXEL_CHUNK output pixels: the gathering, the
    # products and the input's gradient), all of them on a device (one product, one
    # scatter); at least one, so that an empty batch's chunk loop still has a step.
    images = max(1, _PIXEL_CHUNK // (out[0] * out[1]) if getattr(backend, "on_host", True) else b)
    # The kernel's taps in the columns' order, (G, O/G, kh·kw·C/G): a small copy.
    kernel = xp.reshape(xp.permute_dims(weight._data, (0, 2, 3, 1)), (groups, out_ch // groups, -1))
    taps = xp.matrix_transpose(kernel)
    if ones:
        assert bias is not None
        taps = xp.concat([taps, xp.reshape(bias._data, (1, 1, out_ch))], axis=1)
    regather: Callable[[int, int], Any] | None = None
    if by_tap:  # (B·Ho·Wo, O) as colsᵀ·taps: BLAS reads the transposed operand in place
        product = xp.matmul(xp.matrix_transpose(cols), taps[0, ...])
    elif im2col is not None and groups == 1:
        # Compiled, one group: the windows of a few images at a time, each chunk's columns
        # multiplied while in cache and dropped; the backward pass gathers them again for
        # the weight's gradient. All the columns at once (nine times the image) went out to
        # memory and came back cold twice: a tenth slower at the CIFAR CNN's second and
        # third layers, measured (forward and weight gradient, the gathering included).
        def gather(first: int, count: int) -> Any:  # the columns of images [first, first + count)
            return im2col(image[first : first + count], (kh, kw), stride, padding, dilation, 1, out, ones)

        regather = gather
        chunks = [xp.matmul(gather(first, count)[:, 0, :], taps[0, ...]) for first, count in _image_chunks(b, images)]
        product = chunks[0] if len(chunks) == 1 else xp.concat(chunks, axis=0)
    else:
        if im2col is not None:
            cols = im2col(image, (kh, kw), stride, padding, dilation, groups, out, ones)
        else:
            cols = _gather_windows(xp, image, (kh, kw), stride, padding, dilation, groups, out)
        product = _grouped_product(xp, cols, taps, groups)  # (B·Ho·Wo, O)
    inputs: tuple[AnyTensor, ...] = (x, weight)
    if bias is not None:
        if not ones:
            product += bias._data
        inputs = (x, weight, bias)
    result = xp.permute_dims(xp.reshape(product, (b, *out, out_ch)), (0, 3, 1, 2))
    size = (data.shape[2], data.shape[3])
    need = (wants_grad(x), wants_grad(weight), bias is not None)
    col2im = fused_kernel(backend, "col2im", data.dtype) if need[0] else None
    saved = (
        cols,
        by_tap,
        regather,
        kernel,
        tuple(weight.shape),
        size,
        stride,
        padding,
        dilation,
        col2im,
        images,
        *need,
    )
    # Regathering reads the input's memory again in the backward pass: a write into it is seen.
    watched = (x,) if regather is not None else ()
    return record(result, conv2d_backward, inputs, saved, backend, watch=watched)


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
    if cols.shape[1] == 0:  # PyTorch: "non-zero dimensions" but the batch
        raise ShapeError(f"fold: windows of shape {cols.shape} have zero channels (only the batch may be empty)")
    _check_steps("fold", kernel, stride, dilation)
    out = (cols.shape[3], cols.shape[4])
    for axis in range(2):
        expected = conv_output_size(size[axis], kernel[axis], stride[axis], padding[axis], dilation[axis])
        if expected != out[axis] or expected <= 0:  # no window: PyTorch refuses it too
            raise ShapeError(f"fold: {out} windows do not tile an image of size {size}")
    xp = cols._backend.xp
    image = _col2im(xp, cols._data, size, kernel, stride, padding, dilation, out)
    return record(image, fold_backward, (cols,), (kernel, stride, padding, dilation, out), cols._backend)


def check_pool_padding(op: str, kernel: Pair, padding: Pair) -> None:
    """``ShapeError`` for padding over half the window, which PyTorch's pooling refuses:
    there a window can lie wholly in the padding (a max of ``-inf``, a mean of padding)."""
    if padding[0] > kernel[0] // 2 or padding[1] > kernel[1] // 2 or min(padding) < 0:
        raise ShapeError(f"{op}: padding {padding} must be between 0 and half the kernel {kernel}, as in PyTorch")


def pool_output_size(
    size: int, kernel: int, stride: int, padding: int, ceil_mode: bool = False, dilation: int = 1
) -> int:
    """Output length of a pooling along one axis, PyTorch's: rounded down, or with
    ``ceil_mode`` up, where the last window must still start inside the input or its left
    padding (one that would start in the right padding is dropped). A window spans
    ``dilation·(kernel - 1) + 1`` cells."""
    if not ceil_mode:
        return conv_output_size(size, kernel, stride, padding, dilation)
    out = (size + 2 * padding - dilation * (kernel - 1) - 1 + stride - 1) // stride + 1
    if (out - 1) * stride >= size + padding:
        out -= 1
    return out


def pool_geometry(
    op: str,
    x: AnyTensor,
    kernel: Pair,
    stride: Pair,
    padding: Pair,
    ceil_mode: bool = False,
    dilation: Pair = (1, 1),
) -> tuple[Pair, Pair]:
    """A pooling's windows per axis and the cells ``ceil_mode`` adds past the input and its
    right padding (``(0, 0)`` without it, or where rounding up adds no window): the last
    windows run off the end there, clipped as PyTorch clips them. ``ShapeError`` for an input
    PyTorch refuses."""
    if x.ndim != 4:
        raise ShapeError(f"pooling expects a (batch, channels, height, width) tensor, found shape {x.shape}")
    check_extents(op, x.shape)
    _check_steps(op, kernel, stride, dilation)
    check_pool_padding(op, kernel, padding)
    size = (x.shape[2], x.shape[3])
    out = (
        pool_output_size(size[0], kernel[0], stride[0], padding[0], ceil_mode, dilation[0]),
        pool_output_size(size[1], kernel[1], stride[1], padding[1], ceil_mode, dilation[1]),
    )
    if out[0] <= 0 or out[1] <= 0:
        dilated = "" if dilation == (1, 1) else f", dilation {dilation}"
        raise ShapeError(
            f"pooling window {kernel} (padding {padding}{dilated}) does not fit input of height×width "
            f"{size[0]}×{size[1]}"
        )
    span = (dilation[0] * (kernel[0] - 1) + 1, dilation[1] * (kernel[1] - 1) + 1)
    extra = (
        builtins.max(0, (out[0] - 1) * stride[0] + span[0] - size[0] - 2 * padding[0]),
        builtins.max(0, (out[1] - 1) * stride[1] + span[1] - size[1] - 2 * padding[1]),
    )
    return out, extra


def avg_pool_cells(size: int, kernel: int, stride: int, padding: int, out: int, count_include_pad: bool) -> list[int]:
    """What PyTorch's average pooling divides each of ``out`` windows along one axis by (the
    divisor is the product of the two axes'): the window's cells up to the end of the right
    padding (a ``ceil_mode`` window running past it is clipped there) with
    ``count_include_pad``, else its cells inside the input alone."""
    cells: list[int] = []
    for o in range(out):
        start = o * stride - padding
        end = builtins.min(start + kernel, size + padding)
        if not count_include_pad:
            start, end = builtins.max(start, 0), builtins.min(end, size)
        cells.append(end - start)
    return cells


def _padded(xp: Any, x: Any, padding: Pair, fill: float, extra: Pair = (0, 0)) -> Any:
    # ``padding`` on each side of the height and width, and ``extra`` more at their ends.
    if padding == (0, 0) and extra == (0, 0):
        return x
    b, c, h, w = x.shape
    full = xp.full((b, c, h + 2 * padding[0] + extra[0], w + 2 * padding[1] + extra[1]), fill, dtype=x.dtype)
    full[:, :, padding[0] : padding[0] + h, padding[1] : padding[1] + w] = x
    return full


def max_pool2d_backward(
    xp: Any, g: Any, index: Any, shape: tuple[int, ...], kernel: Pair, stride: Pair, padding: Pair, out: Pair
) -> tuple[Any, ...]:
    # `shape` is the input's with its padding; ceil_mode's last windows may reach past its
    # end (max_pool2d_clipped_backward), where no maximum lies (-inf, never the first maximum).
    return max_pool2d_dilated_backward(xp, g, index, shape, kernel, stride, padding, out, (1, 1))


def max_pool2d_clipped_backward(
    xp: Any, g: Any, index: Any, shape: tuple[int, ...], kernel: Pair, stride: Pair, padding: Pair, out: Pair
) -> tuple[Any, ...]:
    """``max_pool2d_backward`` where ceil_mode's last windows run past the padded input: a rule
    of its own name, so that no backend's fused kernel for the other (whose 2×2 loops test no
    bounds) is put in its place."""
    return max_pool2d_dilated_backward(xp, g, index, shape, kernel, stride, padding, out, (1, 1))


def max_pool2d_dilated_backward(
    xp: Any,
    g: Any,
    index: Any,
    shape: tuple[int, ...],
    kernel: Pair,
    stride: Pair,
    padding: Pair,
    out: Pair,
    dilation: Pair,
) -> tuple[Any, ...]:
    """Each window's gradient added to the tap that won it (``index``, the tap's number in the
    window, row-major): the rule of a dilated pooling (no fused kernel takes a dilation), and
    the reference of the two above."""
    span = (dilation[0] * (kernel[0] - 1) + 1, dilation[1] * (kernel[1] - 1) + 1)
    reach = ((out[0] - 1) * stride[0] + span[0], (out[1] - 1) * stride[1] + span[1])
    full = xp.zeros((*shape[:2], builtins.max(shape[2], reach[0]), builtins.max(shape[3], reach[1])), dtype=g.dtype)
    k = 0
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            full[_window_slices(i, j, stride, dilation, out)] += keep_where(xp, index == k, g)
            k += 1
    h, w = shape[2] - 2 * padding[0], shape[3] - 2 * padding[1]
    return (full[:, :, padding[0] : padding[0] + h, padding[1] : padding[1] + w],)


def max_pool2d(
    x: AnyTensor,
    kernel: Pair,
    stride: Pair,
    padding: Pair = (0, 0),
    ceil_mode: bool = False,
    dilation: Pair = (1, 1),
    return_indices: bool = False,
) -> Any:
    """Maximum over each window of a ``(B, C, H, W)`` tensor; padding counts as ``-inf``.
    With ``ceil_mode`` the size is rounded up, as PyTorch's: the last windows may run off the
    input's end, and are clipped there (the cells past it also count as ``-inf``). A window's
    taps are ``dilation`` apart.

    A running maximum over the ``kh·kw`` strided slices (no window copy) that also records
    which slice won, so that the gradient goes to the first maximum of each window, as
    PyTorch's ``F.max_pool2d``. With ``return_indices`` also where each maximum is, as
    PyTorch's: an untraced int64 tensor of the result's shape holding ``row·W + column`` in
    the input's ``(H, W)`` plane (what ``MaxUnpool2d`` takes).
    """
    out, extra = pool_geometry("max_pool2d", x, kernel, stride, padding, ceil_mode, dilation)
    data = x._data
    xp = x._backend.xp
    b, c, h, w = data.shape
    # The input's shape with its padding, as the backward rules (and numba's) take it: they
    # drop what ceil_mode's windows reach past it.
    padded_shape = (b, c, h + 2 * padding[0], w + 2 * padding[1])
    windows_padding = padding
    if extra != (0, 0):  # ceil_mode's windows past the end: the input padded there too, once
        data, windows_padding = _padded(xp, data, padding, -math.inf, extra), (0, 0)
    # the compiled kernel's windows are contiguous: a dilated pooling takes the passes below
    compiled = fused_kernel(x._backend, "max_pool2d", data.dtype) if dilation == (1, 1) else None
    if compiled is not None:  # one pass over the windows; the same index as below
        result, index = compiled(data, kernel, stride, windows_padding, out)
    else:
        padded = _padded(xp, data, windows_padding, -math.inf)
        result = xp.asarray(padded[_window_slices(0, 0, stride, dilation, out)], copy=True)
        index = xp.zeros(result.shape, dtype=xp.int8 if kernel[0] * kernel[1] < 128 else xp.int32)
        k = 0
        for i in range(kernel[0]):
            for j in range(kernel[1]):
                if k:
                    window = padded[_window_slices(i, j, stride, dilation, out)]
                    larger = window > result
                    index = index + xp.astype(larger, index.dtype) * (k - index)
                    result = xp.maximum(result, window)
                k += 1
    index = _first_inside_at_minus_inf(xp, result, index, kernel, stride, padding, out, dilation)
    if dilation != (1, 1):
        saved: tuple[Any, ...] = (index, padded_shape, kernel, stride, padding, out, dilation)
        rule: Any = max_pool2d_dilated_backward
    else:
        saved = (index, padded_shape, kernel, stride, padding, out)
        rule = max_pool2d_backward if extra == (0, 0) else max_pool2d_clipped_backward
    values = record(result, rule, (x,), saved, x._backend)
    if not return_indices:
        return values
    return values, wrap(_plane_indices(xp, index, kernel, stride, padding, dilation, out, w), x._backend)


def _plane_indices(
    xp: Any, index: Any, kernel: Pair, stride: Pair, padding: Pair, dilation: Pair, out: Pair, width: int
) -> Any:
    """Each window's winning tap (its number in the window, row-major) as PyTorch's index:
    ``row·width + column`` of the input without its padding, int64."""
    taps = xp.astype(index, xp.int64)
    top = xp.reshape(xp.arange(out[0], dtype=xp.int64) * stride[0] - padding[0], (out[0], 1))
    left = xp.reshape(xp.arange(out[1], dtype=xp.int64) * stride[1] - padding[1], (1, out[1]))
    rows = top + (taps // kernel[1]) * dilation[0]
    cols = left + (taps % kernel[1]) * dilation[1]
    return rows * width + cols


def _first_inside_at_minus_inf(
    xp: Any, result: Any, index: Any, kernel: Pair, stride: Pair, padding: Pair, out: Pair, dilation: Pair = (1, 1)
) -> Any:
    """A window whose maximum is -inf sends its gradient to its first element inside the
    image, as PyTorch; the running maximum kept the first tap, which may be padding (also
    -inf), and the gradient was lost. Only windows at -inf can have picked padding."""
    if padding == (0, 0):
        return index
    # the first tap at or past the image's start: ceil((padding - start) / dilation)
    rows = [builtins.max(0, -(-(padding[0] - o * stride[0]) // dilation[0])) for o in range(out[0])]
    cols = [builtins.max(0, -(-(padding[1] - o * stride[1]) // dilation[1])) for o in range(out[1])]
    first = xp.asarray([[r * kernel[1] + c for c in cols] for r in rows], dtype=index.dtype)
    return xp.where(result == -math.inf, first, index)
