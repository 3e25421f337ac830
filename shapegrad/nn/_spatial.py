"""Image resampling layers: ``Upsample`` and ``ReflectionPad2d``, composites of reshapes,
broadcasts, matmuls and ``pad`` (no gradient rule of their own)."""

from __future__ import annotations

import math
from typing import Any, Generic, Literal, cast, overload

import numpy as np
from typing_extensions import TypeVar

from .._dims import Open, Twice
from .._errors import HyperparameterError, ShapeError
from .._tensor import AnyTensor, Tensor, wrap
from .._typevars import B, T
from ..ops._toolkit import integer
from ..ops.shape import broadcast_to, pad
from ._conv import Doubles, SizeRule
from ._module import Chan, Layer
from ._torch_config import expect_kind, refuse, same, torch_pair

__all__ = ["ReflectionPad2d", "Upsample"]

# The channels, height and width of a call, bound from the input; defaults because they
# follow R (which has one) in the methods.
Ch = TypeVar("Ch", default=Any)
H = TypeVar("H", default=Any)
W = TypeVar("W", default=Any)
# A layer's size rule; covariant, so that a layer with a precise rule is also the plain one.
R = TypeVar("R", covariant=True, default=SizeRule)

_MODES = ("nearest", "nearest-exact", "bilinear")
_NEAREST = ("nearest", "nearest-exact")


def _scale_pair(value: object) -> tuple[float, float]:
    """``scale_factor`` as two positive numbers: a whole one (``2``, ``2.0``) as an int, any
    other as a float (``1.5``, as PyTorch takes it); anything else is refused
    (``HyperparameterError``)."""
    values: list[Any] = list(value) if isinstance(value, (tuple, list)) else [value, value]  # pyright: ignore[reportUnknownArgumentType] -- any sequence, checked below
    pair = [_positive(v) for v in values]
    if len(values) == 2 and None not in pair:
        return cast(float, pair[0]), cast(float, pair[1])
    raise HyperparameterError(
        f"Upsample expects scale_factor to be a positive number or a pair of them (height, width), found {value!r}"
    )


def _positive(value: object) -> float | None:
    """``value`` as a scale factor: an int when it is a whole number, else a float; None
    when it is no number (a bool is none) or not positive and finite."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    number = float(cast(float, value))
    if not (math.isfinite(number) and number > 0):
        return None
    return int(number) if number.is_integer() else number


def _nearest_sources(n_in: int, n_out: int, exact: bool, factor: float | None = None) -> np.ndarray[Any, Any]:
    """The input pixel each of ``n_out`` pixels copies along one axis, as PyTorch computes it:
    ``floor(o · scale)`` for ``"nearest"``, ``floor((o + 0.5) · scale)`` for
    ``"nearest-exact"``, at most ``n_in - 1``, in float32 arithmetic as PyTorch's (in
    float64, 11 of the sizes up to 39 → 59 would pick another pixel somewhere). ``scale`` is
    ``1/factor`` for a scale factor (PyTorch's ``compute_scales_value``: the reciprocal in
    float64, then float32), else ``n_in/n_out``; ``"nearest"`` copies through where the sizes
    are equal or double (its ``nearest_idx``)."""
    if not exact and n_out == n_in:
        return np.arange(n_out, dtype=np.int64)
    if not exact and n_out == 2 * n_in:
        return np.arange(n_out, dtype=np.int64) >> 1
    scale = np.float32(1.0 / factor) if factor is not None else np.float32(n_in) / np.float32(n_out)
    out = np.arange(n_out, dtype=np.float32) + (np.float32(0.5) if exact else np.float32(0.0))
    return np.minimum(np.floor(out * scale).astype(np.int64), n_in - 1)


def _interpolation_matrix(n_in: int, n_out: int, scale: float | None, align_corners: bool) -> np.ndarray[Any, Any]:
    """The ``(n_out, n_in)`` matrix of linear interpolation weights along one axis, as PyTorch
    computes its source positions: ``align_corners=False``: ``(o + 0.5)·scale - 0.5`` clamped
    at 0, with ``scale = 1/scale_factor`` (or ``n_in/n_out`` for a size); ``True``:
    ``o·(n_in - 1)/(n_out - 1)``. Equal sizes copy (PyTorch's
    ``compute_source_index_and_lambda``), whatever the scale: ``floor(3 · 1.3)`` is 3 pixels
    from 3, not interpolated by ``1/1.3``."""
    if n_in == n_out:
        return np.eye(n_in)
    out = np.arange(n_out, dtype=np.float64)
    if align_corners:
        source = out * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        step = scale if scale is not None else n_in / n_out
        source = np.maximum((out + 0.5) * step - 0.5, 0.0)
    lower = np.minimum(np.floor(source).astype(np.int64), n_in - 1)
    upper = np.minimum(lower + 1, n_in - 1)
    frac = source - lower
    matrix = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    np.add.at(matrix, (rows, lower), 1.0 - frac)
    np.add.at(matrix, (rows, upper), frac)
    return matrix


class Upsample(Layer[Chan[Any], Chan[Any]], Generic[R], checked=False):
    """Up-sampling of ``(B, C, H, W)`` images, as PyTorch's ``nn.Upsample``: by a
    ``scale_factor`` (a number or a (height, width) pair) or to a ``size``.

    ``mode="nearest"`` (the default) repeats each pixel ``scale_factor`` times along each axis
    (a reshape and a broadcast), and so for a ``size`` that is a whole multiple of the input.
    To any other ``size`` each output pixel copies input pixel ``floor(o · in/out)``, as
    PyTorch's (in its float32 arithmetic); ``mode="nearest-exact"`` picks
    ``floor((o + 0.5) · in/out)``, PyTorch's too (by whole factors the two agree). The
    gradient adds each output pixel's into the pixel it copies. ``mode="bilinear"``
    interpolates as PyTorch's (``align_corners=False`` by default, or ``True``), by one
    interpolation matrix per axis (two matmuls), to any ``size``. A fractional
    ``scale_factor`` (``1.5``) gives ``floor(in · scale_factor)`` pixels, each from the source
    PyTorch computes with ``1/scale_factor`` (or ``in/out`` with
    ``recompute_scale_factor=True``), in every mode. Other modes (``"bicubic"``, ...) and
    ``align_corners`` with a nearest mode are refused when built (``HyperparameterError``);
    an input that is not ``(B, C, H, W)``, or one that a factor below 1 leaves no pixel,
    raises ``ShapeError``.

    ``Upsample(scale_factor=2)`` (a literal 2) is an ``Upsample[Doubles]``: its call types
    the height and width as ``Twice[H]``, ``Twice[W]``, as ``ConvTranspose2d[I, O, Doubles]``
    does; other factors and sizes give ``sg.Open``. It has no parameters.

    Args:
        size: the output's height and width (an int for both, or a pair), instead of
            ``scale_factor``.
        scale_factor: a positive number (``2``, ``2.0``, ``1.5``) or a (height, width) pair.
        mode: ``"nearest"``, ``"nearest-exact"`` or ``"bilinear"``.
        align_corners: bilinear only: ``False`` (``None``, the default) maps pixel centres,
            ``True`` the corner pixels, as PyTorch.
        recompute_scale_factor: ``True``: a fractional factor's source pixels from the sizes
            (``in/out``) instead of ``1/scale_factor``, as PyTorch; no effect with whole factors.

    Examples:
        >>> import shapegrad as sg
        >>> up = sg.nn.Upsample(scale_factor=2)
        >>> up(sg.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])).numpy()[0, 0].tolist()
        [[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0], [3.0, 3.0, 4.0, 4.0], [3.0, 3.0, 4.0, 4.0]]
        >>> sg.nn.Upsample(scale_factor=2, mode="bilinear")(sg.ones(1, 3, 4, 4)).shape
        (1, 3, 8, 8)
    """

    # A literal 2 (U-Nets' and GANs' usual up-sampling) gives the Doubles rule; any other
    # factor or a size is Open. (Keyword-only, as PyTorch models write it.)
    @overload
    def __init__(
        self: Upsample[Doubles],
        size: None = None,
        *,
        scale_factor: Literal[2],
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None: ...
    @overload
    def __init__(
        self: Upsample[SizeRule],
        size: int | tuple[int, int] | None = None,
        scale_factor: float | tuple[float, float] | None = None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None: ...
    def __init__(
        self,
        size: int | tuple[int, int] | None = None,
        scale_factor: float | tuple[float, float] | None = None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        if mode not in _MODES:
            raise HyperparameterError(
                f"Upsample expects mode 'nearest', 'nearest-exact' or 'bilinear', found mode={mode!r}; shapegrad "
                "has no other interpolation"
            )
        if (size is None) == (scale_factor is None):
            raise HyperparameterError(
                f"Upsample expects exactly one of size and scale_factor, found size={size!r}, "
                f"scale_factor={scale_factor!r}"
            )
        if align_corners is not None and mode in _NEAREST:
            raise HyperparameterError(
                f"Upsample expects align_corners=None with mode={mode!r} (as PyTorch: it only applies to "
                f"interpolating modes), found align_corners={align_corners!r}"
            )
        self.mode = mode
        self.align_corners = bool(align_corners)
        self.recompute_scale_factor = recompute_scale_factor
        self.size: tuple[int, int] | None = None
        # (ints for whole factors, floats for fractional ones)
        self.scale_factor: tuple[float, float] | None = None
        if size is not None:
            sizes = size if isinstance(size, (tuple, list)) else (size, size)
            self.size = (integer("Upsample", "size", sizes[0]), integer("Upsample", "size", sizes[1]))
            if min(self.size) < 1:
                raise HyperparameterError(f"Upsample expects a positive size, found size={size!r}")
        else:
            self.scale_factor = _scale_pair(scale_factor)
        if self._type_args[:1] == (Doubles,) and self.scale_factor != (2, 2):
            raise ShapeError(
                f"{type(self).__name__}: the type says Doubles (each size twice), but size={self.size}, "
                f"scale_factor={self.scale_factor}; expected scale_factor=2"
            )

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch ``Upsample`` of another mode, ``align_corners``, size or scale
        factor (or a module of another kind): none is in a state dict."""
        expect_kind(torch_module, path, self, "Upsample")
        same(torch_module, path, "mode", self.mode)
        theirs_corners = getattr(torch_module, "align_corners", None)
        if bool(theirs_corners) != self.align_corners:
            refuse(path, f"has align_corners={theirs_corners!r} in PyTorch, {self.align_corners!r} here")
        theirs_size, theirs_scale = getattr(torch_module, "size", None), getattr(torch_module, "scale_factor", None)
        # as numbers: PyTorch keeps 2.0 where ours is 2
        size = None if theirs_size is None else tuple(float(v) for v in torch_pair(theirs_size))
        scale = None if theirs_scale is None else tuple(float(v) for v in torch_pair(theirs_scale))
        if size != self.size or scale != self.scale_factor:
            refuse(
                path,
                f"has size={theirs_size!r}, scale_factor={theirs_scale!r} in PyTorch, size={self.size!r}, "
                f"scale_factor={self.scale_factor!r} here",
            )

    def _out_sizes(self, h: int, w: int) -> tuple[tuple[int, int], tuple[float | None, float | None]]:
        """The output's height and width, and the scale factors PyTorch computes the source
        pixels with (None: from the sizes): ``floor(in · scale_factor)`` in float64 for a
        scale factor, as PyTorch's ``interpolate``."""
        if self.size is not None:
            return self.size, (None, None)
        assert self.scale_factor is not None, "built with a size or a scale factor"
        sh, sw = self.scale_factor
        out_h, out_w = math.floor(h * sh), math.floor(w * sw)
        if min(out_h, out_w) < 1:
            raise ShapeError(
                f"Upsample: scale_factor={self.scale_factor} leaves no pixel of an input of height {h} and width {w}"
            )
        factors = (None, None) if self.recompute_scale_factor else (sh, sw)
        return (out_h, out_w), factors

    def _nearest(self, x: AnyTensor) -> Any:
        """``"nearest"`` and ``"nearest-exact"``: by a whole factor (a whole scale factor, or a
        size that is a multiple of the input) each pixel a block, which both modes agree on;
        else each output pixel a copy of its source pixel (``_nearest_sources``)."""
        b, c, h, w = x.shape
        (out_h, out_w), factors = self._out_sizes(h, w)
        # blocks where each axis is a whole multiple of the input, by that factor (3.1 from 5
        # pixels is 15, each from floor(o / 3.1), not blocks of 3)
        whole = all(m % n == 0 and f in (None, m // n) for n, m, f in ((h, out_h, factors[0]), (w, out_w, factors[1])))
        if not whole:
            exact = self.mode == "nearest-exact"
            backend = x._backend
            rows, cols = (
                wrap(backend.asarray(_nearest_sources(n, m, exact, f).reshape(shape), "int64"), backend)
                for n, m, f, shape in ((h, out_h, factors[0], (-1, 1)), (w, out_w, factors[1], (1, -1)))
            )
            # one gather; its gradient adds each output pixel's into its source (a scatter-add)
            return x[:, :, rows, cols]
        sh, sw = out_h // h, out_w // w
        # each pixel a (sh, sw) block: a broadcast along two new axes, then merged, so
        # the gradient sums each block (the engine sums a broadcast axis)
        blocks = broadcast_to(x.reshape(b, c, h, 1, w, 1), (b, c, h, sh, w, sw))
        return blocks.reshape(b, c, h * sh, w * sw)

    @overload
    def __call__(self: Upsample[Doubles], x: Tensor[T, B, Ch, H, W]) -> Tensor[T, B, Ch, Twice[H], Twice[W]]: ...
    @overload
    def __call__(self, x: Tensor[T, B, Ch, H, W]) -> Tensor[T, B, Ch, Open, Open]: ...
    def __call__(self, x: Any) -> Any:
        if x.ndim != 4 or min(x.shape[2:]) < 1:
            raise ShapeError(f"Upsample expects input (batch, channels, height, width), found shape {x.shape}")
        if self.mode in _NEAREST:
            return self._nearest(x)
        h, w = x.shape[2], x.shape[3]
        (out_h, out_w), factors = self._out_sizes(h, w)
        scales = tuple(None if f is None else 1.0 / f for f in factors)
        rows = self._matrix(x, h, out_h, scales[0])  # (out_h, h)
        cols = self._matrix(x, w, out_w, scales[1]).swapaxes(0, 1)  # (w, out_w)
        return rows @ x @ cols

    def _matrix(self, x: AnyTensor, n_in: int, n_out: int, scale: float | None) -> Any:
        """The interpolation weights along one axis as a constant tensor of ``x``'s backend and dtype."""
        weights = _interpolation_matrix(n_in, n_out, scale, self.align_corners)
        # through the backend's asarray: a compiled step records it as a constant
        return wrap(x._backend.asarray(weights, x._backend.dtype_name(x.dtype)), x._backend)


Padding = int | tuple[int, int, int, int]


class ReflectionPad2d(Layer[Chan[Any], Chan[Any]], checked=False):
    """Padding by the values mirrored at the edge (the edge itself not repeated) of the last two
    axes of ``(B, C, H, W)`` or ``(C, H, W)`` inputs, as PyTorch's ``nn.ReflectionPad2d``
    (style transfer's and CycleGAN's convolutions pad this way).

    Args:
        padding: an int for every side, or ``(left, right, top, bottom)`` as PyTorch's.

    Each width must be smaller than its axis (``ShapeError`` otherwise, as PyTorch refuses);
    the height and width of the result are typed ``sg.Open``. ``sg.pad(x, ((0, 0), (0, 0),
    (top, bottom), (left, right)), mode="reflect")`` is the same as a function. It has no
    parameters.

    Examples:
        >>> import shapegrad as sg
        >>> pad = sg.nn.ReflectionPad2d((2, 1, 0, 0))
        >>> pad(sg.tensor([[[[1.0, 2.0, 3.0]]]])).numpy()[0, 0].tolist()
        [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]]
    """

    def __init__(self, padding: Padding) -> None:
        values: tuple[Any, ...] = tuple(padding) if isinstance(padding, (tuple, list)) else (padding,) * 4
        if len(values) != 4:
            raise HyperparameterError(
                f"ReflectionPad2d expects padding as an int or 4 ints (left, right, top, bottom), found {padding!r}"
            )
        left, right, top, bottom = (integer("ReflectionPad2d", "padding", v) for v in values)
        self.padding: tuple[int, int, int, int] = (left, right, top, bottom)

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch module other than ``ReflectionPad2d``, or other widths."""
        expect_kind(torch_module, path, self, "ReflectionPad2d")
        same(torch_module, path, "padding", self.padding)

    @overload
    def __call__(self, x: Tensor[T, B, Ch, H, W]) -> Tensor[T, B, Ch, Open, Open]: ...
    @overload
    def __call__(self, x: Tensor[T, Ch, H, W]) -> Tensor[T, Ch, Open, Open]: ...
    def __call__(self, x: Any) -> Any:
        if x.ndim not in (3, 4):
            raise ShapeError(
                f"ReflectionPad2d expects input (batch, channels, height, width) or (channels, height, width), "
                f"found shape {x.shape}"
            )
        left, right, top, bottom = self.padding
        widths = ((0, 0),) * (x.ndim - 2) + ((top, bottom), (left, right))
        image: AnyTensor = x
        return pad(image, widths, mode="reflect")
