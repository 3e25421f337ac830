"""A convolution's window gathering (im2col) and its adjoint (col2im) for the NumPy backend,
registered in ``numba_kernels``; ``shapegrad.ops.conv`` keeps the reference (strided slices
stacked, and added back one window offset at a time), which the tests compare these with.

The layout is channels-last: an image ``(B, H, W, C)`` (any strides: a ``(B, C, H, W)``
tensor's ``permute_dims(x, (0, 2, 3, 1))``) and columns ``(B·Ho·Wo, G, kh·kw·C/G)``, a row per
output pixel, each group's taps ``(kh, kw, C/G)`` in a row. One pass writes each row from the
image (a tap's channels are a contiguous run there), zeros where a tap falls in the padding;
the reference takes ``kh·kw`` strided copies and a stack, and ``kh·kw`` read-modify-write
passes over the whole padded image for the adjoint, where this adds each row into the image
once, the pixel's neighbourhood still in cache.

- ``im2col(image, kernel, stride, padding, dilation, groups, out, ones=False) -> cols``,
  contiguous; with ``ones`` (one group only) each row ends in a 1, the column a bias
  joins the matrix product by (its gradient then comes out of the weight's product too).
- ``col2im(cols, batch, size, kernel, stride, padding, dilation, out) -> image``
  ``(B, H, W, C)``, contiguous; ``cols`` any strides.
- ``im2col_planes(x, kernel, stride, padding, dilation, out, ones=False) -> cols`` for one
  group and a channels-first input ``(B, C, H, W)`` (a network's images): the same columns
  transposed, ``(kh·kw·C [+1], B·Ho·Wo)``, a row per tap. Each row is the input's plane
  shifted, so every copy is an image row's run of ``Wo`` pixels (with stride 1), where the
  channels-last gather of three channels copies runs of 9 values: a 3-channel 32×32 batch
  gathers in about a quarter of the time, measured. None for any other layout (the
  channels-last gather, on a copy, is then as fast or faster).

float32 and float64.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["builders"]

Pair = tuple[int, int]


def _gather(
    x: Any, kernel: Any, stride: Any, dilation: Any, channels: int, groups: int, out: Any, ones: bool, cols: Any
) -> None:
    # x: the padded image as (B, Hp, Wp·C); cols (B·Ho·Wo, G·kh·kw·Cg), with `ones` (one
    # group) a last column of ones, the bias's in the matrix product. Each copy runs between
    # two 1-D slices indexed by the loop counter alone: 2.5-3× faster, measured, than flat
    # indices (numba's wraparound test of a computed index keeps LLVM from vectorising). With
    # one group and no dilation across the width, a window row's kw taps are one run of kw·C.
    (kh, kw), (sh, sw), (dh, dw), (out_h, out_w) = kernel, stride, dilation, out
    cg = channels // groups
    row = kh * kw * cg
    run = kw * channels
    n = 0
    for b in range(x.shape[0]):
        for i in range(out_h):
            for j in range(out_w):
                target = cols[n]
                n += 1
                left = j * sw * channels
                for di in range(kh):
                    line = x[b, i * sh + di * dh]
                    if groups == 1 and dw == 1:
                        source, window = line[left : left + run], target[di * run : (di + 1) * run]
                        for c in range(run):
                            window[c] = source[c]
                        continue
                    for dj in range(kw):
                        start = left + dj * dw * channels
                        source = line[start : start + channels]
                        for g in range(groups):
                            at = g * row + (di * kw + dj) * cg
                            window = target[at : at + cg]
                            for c in range(cg):
                                window[c] = source[g * cg + c]
                if ones:
                    target[groups * row] = 1


def _scatter(
    cols: Any, kernel: Any, stride: Any, dilation: Any, channels: int, groups: int, out: Any, image: Any
) -> None:
    # The adjoint of _gather: each row added into the (zeroed, padded) image (B, Hp, Wp·C).
    (kh, kw), (sh, sw), (dh, dw), (out_h, out_w) = kernel, stride, dilation, out
    cg = channels // groups
    row = kh * kw * cg
    run = kw * channels
    n = 0
    for b in range(image.shape[0]):
        for i in range(out_h):
            for j in range(out_w):
                source = cols[n]
                n += 1
                left = j * sw * channels
                for di in range(kh):
                    line = image[b, i * sh + di * dh]
                    if groups == 1 and dw == 1:
                        target, window = line[left : left + run], source[di * run : (di + 1) * run]
                        for c in range(run):
                            target[c] += window[c]
                        continue
                    for dj in range(kw):
                        start = left + dj * dw * channels
                        target = line[start : start + channels]
                        for g in range(groups):
                            at = g * row + (di * kw + dj) * cg
                            window = source[at : at + cg]
                            for c in range(cg):
                                target[g * cg + c] += window[c]


def _gather_planes(x: Any, kernel: Any, stride: Any, padding: Any, dilation: Any, out: Any, cols: Any) -> None:
    # x (B, C, H, W) with unit steps along W; cols (kh·kw·C, B·Ho·Wo), row (di, dj, c) the
    # plane c read at tap (di, dj) of every window: per output row a run of Wo pixels, zero
    # where the tap falls in the padding. The taps' order (kh, kw, C) is the channels-last
    # gather's, so the kernel's layout and the weight gradient's are the same for both.
    # (The row's slice is `dest`: named `target`, numba 0.68 compiled this loop 3.5× slower,
    # measured; renaming was the only change.)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), (out_h, out_w) = kernel, stride, padding, dilation, out
    batch, channels, h, w = x.shape
    for di in range(kh):
        for dj in range(kw):
            shift = dj * dw - pw  # output column j reads input column j·sw + shift
            lo = 0  # the first output column whose tap lies inside the image, then past the last
            while lo < out_w and lo * sw + shift < 0:
                lo += 1
            hi = out_w
            while hi > lo and (hi - 1) * sw + shift >= w:
                hi -= 1
            for c in range(channels):
                row = cols[(di * kw + dj) * channels + c]
                for b in range(batch):
                    for i in range(out_h):
                        start = (b * out_h + i) * out_w
                        dest = row[start : start + out_w]
                        r = i * sh + di * dh - ph
                        if r < 0 or r >= h:
                            for j in range(out_w):
                                dest[j] = 0
                            continue
                        line = x[b, c, r]
                        for j in range(lo):
                            dest[j] = 0
                        for j in range(hi, out_w):
                            dest[j] = 0
                        if sw == 1:  # one contiguous run: a vectorised copy
                            source, inside = line[lo + shift : hi + shift], dest[lo:hi]
                            for j in range(source.shape[0]):
                                inside[j] = source[j]
                        else:
                            for j in range(lo, hi):
                                dest[j] = line[j * sw + shift]


def builders(jit: Callable[..., Callable[..., Any]], flags: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    """The kernels' builders by name, compiled with ``jit(fn, **flags)`` on first use."""

    def im2col() -> Callable[..., Any]:
        gather = jit(_gather, **flags)

        def im2col(
            image: Any,
            kernel: Pair,
            stride: Pair,
            padding: Pair,
            dilation: Pair,
            groups: int,
            out: Pair,
            ones: bool = False,
        ) -> Any:
            # A padded contiguous copy first (a ninth of what the columns take): the loop then
            # has no bounds test, and a tap's channels are one contiguous run.
            b, h, w, c = image.shape
            if padding != (0, 0) or not image.flags.c_contiguous:
                full = np.zeros((b, h + 2 * padding[0], w + 2 * padding[1], c), dtype=image.dtype)
                full[:, padding[0] : padding[0] + h, padding[1] : padding[1] + w, :] = image
                image = full
            width = kernel[0] * kernel[1] * (c // groups) + (1 if ones else 0)
            cols = np.empty((b * out[0] * out[1], groups, width), dtype=image.dtype)
            # Sizes spelled out: a -1 beside a zero (an empty batch) is ambiguous to reshape.
            rows = image.reshape(b, image.shape[1], image.shape[2] * c)
            gather(rows, kernel, stride, dilation, c, groups, out, ones, cols.reshape(cols.shape[0], groups * width))
            return cols

        return im2col

    def col2im() -> Callable[..., Any]:
        scatter = jit(_scatter, **flags)

        def col2im(
            cols: Any, batch: int, size: Pair, kernel: Pair, stride: Pair, padding: Pair, dilation: Pair, out: Pair
        ) -> Any:
            groups, width = cols.shape[1], cols.shape[2]
            c = groups * width // (kernel[0] * kernel[1])
            h, w = size[0] + 2 * padding[0], size[1] + 2 * padding[1]
            image = np.zeros((batch, h, w, c), dtype=cols.dtype)
            flat = np.ascontiguousarray(cols).reshape(cols.shape[0], groups * width)  # no -1, as in im2col
            scatter(flat, kernel, stride, dilation, c, groups, out, image.reshape(batch, h, w * c))
            if padding != (0, 0):  # the padding's share dropped: a view of the image inside it
                image = image[:, padding[0] : padding[0] + size[0], padding[1] : padding[1] + size[1], :]
            return image

        return col2im

    def im2col_planes() -> Callable[..., Any]:
        gather = jit(_gather_planes, **flags)

        def im2col_planes(
            x: Any, kernel: Pair, stride: Pair, padding: Pair, dilation: Pair, out: Pair, ones: bool = False
        ) -> Any:
            # Channels-first rows only: a channels-last array (a convolution's result) or one
            # strided along its width goes to the channels-last gather instead.
            b, c = x.shape[0], x.shape[1]
            if x.strides[3] != x.itemsize or (c > 1 and x.strides[1] < x.strides[2]):
                return None
            n = b * out[0] * out[1]
            taps = kernel[0] * kernel[1] * c
            cols = np.empty((taps + (1 if ones else 0), n), dtype=x.dtype)
            gather(x, kernel, stride, padding, dilation, out, cols)
            if ones:
                cols[taps] = 1
            return cols

        return im2col_planes

    return {"im2col": im2col, "col2im": col2im, "im2col_planes": im2col_planes}
