"""Convolution and pooling layers, built from ``unfold``/``fold`` and one matmul."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Generic, Literal, cast, overload

import numpy as np
from typing_extensions import TypeVar

from .._autodiff import NoTape
from .._device_checks import require_in_range
from .._dims import Half, Open, Prod, Twice
from .._errors import DTypeError, HyperparameterError, ShapeError
from .._tensor import AnyTensor, Tensor, wrap
from .._typevars import B, T
from ..ops._toolkit import integer
from ..ops.conv import (
    avg_pool_cells,
    check_extents,
    conv2d as conv_op,
    fold,
    max_pool2d as max_pool_op,
    pool_geometry,
    unfold,
)
from ..ops.creation import Generator
from ..ops.shape import pad
from ._linear import uniform_parameter
from ._module import Chan, Layer
from ._torch_config import (
    TorchTwin,
    expect_kind,
    refuse,
    same,
    same_padding,
    same_pair,
    supported,
    torch_padding,
)

__all__ = [
    "AvgPool2d",
    "Conv1d",
    "Conv2d",
    "ConvTranspose2d",
    "Doubles",
    "Flatten",
    "GlobalAvgPool2d",
    "GlobalMaxPool2d",
    "Halves",
    "HalvesIndices",
    "Indices",
    "MaxPool2d",
    "MaxUnpool2d",
    "SameConv2d",
    "SizeRule",
    "conv2d",
    "max_pool2d",
    "max_unpool2d",
]

# Channels given as plain ints (in_channels=c) leave these unsolved: Open, never int.
I = TypeVar("I", default=Open)
O = TypeVar("O", default=Open)
C = TypeVar("C", default=Any)  # pooling and Flatten built without a type argument: Any, not Unknown
# Defaults, because they follow C (which has one) in the methods of the pooling layers.
H = TypeVar("H", default=Any)
W = TypeVar("W", default=Any)
# The channels of a call, bound from the input (a pooling layer built without a type
# argument is MaxPool2d[Any]; its calls still keep the input's channels).
Ch = TypeVar("Ch", default=Any)
Co = TypeVar("Co")  # a transposed convolution's output channels, in a self annotation
N = TypeVar("N")

Size = int | tuple[int, int]


PaddingMode = Literal["same", "valid"]


def _padding(
    value: Size | str, kernel: tuple[int, int], dilation: tuple[int, int], stride: tuple[int, int], op: str
) -> tuple[int, int]:
    """A convolution's padding as a pair of ints: PyTorch's ``"valid"`` is none, ``"same"``
    half of ``dilation·(kernel - 1)`` on each side (stride 1, as PyTorch requires). Where
    that is odd PyTorch pads one more on the right, which a symmetric padding cannot say:
    refused, naming the fix."""
    if not isinstance(value, str):
        return _pair(value, op, "padding")
    if value == "valid":
        return 0, 0
    if value != "same":
        raise HyperparameterError(f"{op} expects padding 'same', 'valid', an int or a pair, found {value!r}")
    if stride != (1, 1):
        raise HyperparameterError(f"{op}: padding='same' expects stride 1 (as PyTorch), found stride {stride}")
    half = same_padding(kernel, dilation)
    if half is None:
        raise ShapeError(
            f"{op}: padding='same' with kernel {kernel} and dilation {dilation} pads one more at the end "
            "than at the start in PyTorch, which shapegrad's symmetric padding cannot; pad first "
            "(sg.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))) with padding=0, or use an odd kernel"
        )
    return half[0], half[1]


def _pair(value: Size, op: str, what: str) -> tuple[int, int]:
    """A size or a pair of sizes as a pair of ints; ``DTypeError`` for one that is no integer
    (a float was truncated: ``kernel_size=2.5`` gave a 2 x 2 kernel)."""
    if isinstance(value, (tuple, list)):
        return integer(op, what, value[0]), integer(op, what, value[1])
    n = integer(op, what, value)
    return n, n


_IMAGE = ("batch", "channels", "height", "width")
_SIGNAL = ("batch", "channels", "length")


def _unbatched(layer: str, x: AnyTensor, axes: tuple[str, ...], run: Callable[[AnyTensor], Any]) -> Any:
    """``run`` of ``x``, whose axes are ``axes`` or, as PyTorch takes them, ``axes`` without
    the batch (``(C, H, W)`` for ``(B, C, H, W)``): that one runs as a batch of one, and its
    batch axis is removed from the result. Any other rank raises ``ShapeError``."""
    if x.ndim == len(axes):
        return run(x)
    if x.ndim != len(axes) - 1:
        raise ShapeError(
            f"{layer} expects input ({', '.join(axes)}) or unbatched ({', '.join(axes[1:])}), found shape {x.shape}"
        )
    out: AnyTensor = run(x.reshape(1, *x.shape))
    return out.reshape(*out.shape[1:])


def conv2d(
    x: AnyTensor,
    weight: AnyTensor,
    bias: AnyTensor | None = None,
    stride: Size = 1,
    padding: Size = 0,
    dilation: Size = 1,
    groups: int = 1,
) -> Any:
    """2-D cross-correlation of ``x (B, C, H, W)`` with ``weight (O, C/groups, kh, kw)``
    (``shapegrad.ops.conv.conv2d``, one op with its own gradient rule). PyTorch: ``F.conv2d``."""
    return conv_op(
        x,
        weight,
        bias,
        _pair(stride, "conv2d", "stride"),
        _pair(padding, "conv2d", "padding"),
        _pair(dilation, "conv2d", "dilation"),
        integer("conv2d", "groups", groups),
    )


def _check_torch_conv(
    torch_module: Any,
    path: str,
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
) -> None:
    """A PyTorch convolution's settings against ours (the kernel size is in the weight's shape)."""
    supported(
        torch_module,
        path,
        "padding_mode",
        "zeros",
        "PyTorch pads with reflected, replicated or circular values there, shapegrad's convolutions "
        "with zeros (for 'reflect', put sg.nn.ReflectionPad2d before a convolution with padding=0)",
    )
    same(torch_module, path, "stride", stride)
    theirs = torch_padding(torch_module, path)
    if theirs != padding:
        refuse(path, f"has padding={torch_module.padding!r} in PyTorch, {padding!r} here")
    same(torch_module, path, "dilation", dilation)
    same(torch_module, path, "groups", groups)


def _conv_parameters(
    layer: Any, kernel: tuple[int, int], bias: bool, generator: Generator | None, dtype: str
) -> tuple[Any, Any]:
    """A convolution's weight ``(O, I/groups, kh, kw)`` and bias, drawn from ``U(±1/√fan_in)``."""

    groups, in_channels, out_channels = layer.groups, layer.in_channels, layer.out_channels
    if in_channels % groups or out_channels % groups:
        raise ShapeError(
            f"{type(layer).__name__}: channels {in_channels}->{out_channels} are not divisible by groups={groups}"
        )
    bound = 1.0 / math.sqrt(in_channels // groups * kernel[0] * kernel[1])
    weight = uniform_parameter((out_channels, in_channels // groups, *kernel), bound, generator, dtype)
    return weight, uniform_parameter((out_channels,), bound, generator, dtype) if bias else None


class SizeRule:
    """How a layer makes its output's height and width, in its type (``MaxPool2d[Halves]``).
    This base rule: computed at run time, typed ``sg.Open``. A layer with a more precise rule
    is also one with this rule, so ``pool: MaxPool2d = MaxPool2d(2)`` is accepted. Never
    instantiated."""


class Halves(SizeRule):
    """The rule of a pooling layer built with a literal ``kernel_size=2`` (stride 2, no
    padding): ``MaxPool2d(2)`` is a ``MaxPool2d[Halves]``, whose call types the height and
    width as ``Half[H]``, ``Half[W]`` (floor, as PyTorch)."""


class Doubles(SizeRule):
    """The rule of an up-sampling ``ConvTranspose2d[I, O, Doubles]``: stride 2 and
    ``2·padding = dilation·(kernel - 1) + output_padding - 1`` (kernel 4 with padding 1, or
    kernel 2 with padding 0), so each spatial size doubles: ``Twice[H]``. Checked when the
    layer is built. Also the rule of ``Upsample(scale_factor=2)`` (``Upsample[Doubles]``)."""


# A layer's size rule; covariant, so that a layer with a precise rule is also the plain one.
R = TypeVar("R", covariant=True, default=SizeRule)


class Conv2d(Layer[Chan[I], Chan[O], I, O], checked=False):
    """2-D convolution from ``I`` to ``O`` channels over ``(B, I, H, W)`` inputs, or one
    unbatched ``(I, H, W)`` image as PyTorch's (the result then has no batch axis either).

    Args:
        kernel_size: an int or a (height, width) pair.
        stride: an int or a (height, width) pair.
        padding: zeros added on each side; an int or a (height, width) pair, or PyTorch's
            ``"valid"`` (none) or ``"same"`` (stride 1, an odd ``dilation·(kernel - 1)``).
        dilation: the spacing of the kernel's taps; an int or a (height, width) pair.
        groups: channels split into this many independent groups.
        in_channels: ``I``, only when it is not a ``Literal`` type argument.
        out_channels: ``O``, only when it is not a ``Literal`` type argument.
        bias: whether to add a learned bias.
        generator: the source of the initial values, ``U(±1/√(I/groups·kh·kw))`` as PyTorch.
        dtype: the parameters' dtype.

    The spatial output size is computed, not typed: the result's height and width are
    ``sg.Open`` (state them with ``sg.cast``; :class:`SameConv2d` keeps them typed).
    Weight layout ``(O, I/groups, kh, kw)``, as PyTorch.
    """

    def __init__(
        self,
        kernel_size: Size,
        stride: Size = 1,
        padding: Size | PaddingMode = 0,
        dilation: Size = 1,
        groups: int = 1,
        *,
        in_channels: I | int | None = None,
        out_channels: O | int | None = None,
        bias: bool = True,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None:
        self.in_channels = self._size_arg(0, in_channels, "in_channels")
        self.out_channels = self._size_arg(1, out_channels, "out_channels")
        self.kernel_size, self.stride, self.dilation = (
            _pair(kernel_size, "Conv2d", "kernel_size"),
            _pair(stride, "Conv2d", "stride"),
            _pair(dilation, "Conv2d", "dilation"),
        )
        self.padding = _padding(padding, self.kernel_size, self.dilation, self.stride, "Conv2d")
        self.groups = integer("Conv2d", "groups", groups)
        weight, bias_param = _conv_parameters(self, self.kernel_size, bias, generator, dtype)
        self.weight: Tensor[NoTape, O, Any, Any, Any] = weight
        self.bias: Tensor[NoTape, O] | None = bias_param

    # Built from plain ints (no type arguments: Open channels), it takes any channel count,
    # which the run time checks against its weight.
    @overload
    def __call__(self: Conv2d[Open, Co], x: Tensor[T, B, Any, H, W]) -> Tensor[T, B, Co, Open, Open]: ...
    @overload
    def __call__(self, x: Tensor[T, B, I, H, W]) -> Tensor[T, B, O, Open, Open]: ...
    # One unbatched image, as PyTorch takes it.
    @overload
    def __call__(self: Conv2d[Open, Co], x: Tensor[T, Any, H, W]) -> Tensor[T, Co, Open, Open]: ...
    @overload
    def __call__(self, x: Tensor[T, I, H, W]) -> Tensor[T, O, Open, Open]: ...
    def __call__(self, x: Any) -> Any:
        return _unbatched(type(self).__name__.split("[")[0], x, _IMAGE, self._convolve)

    def _convolve(self, x: AnyTensor) -> Any:
        return conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch ``nn.Conv2d`` with another stride, padding, dilation or groups, or
        a ``padding_mode`` other than ``"zeros"``."""
        expect_kind(torch_module, path, self, "Conv2d")
        _check_torch_conv(torch_module, path, self.stride, self.padding, self.dilation, self.groups)


class SameConv2d(Conv2d[I, O], checked=False):
    """A stride-1 convolution padded to keep the height and width (PyTorch's
    ``padding="same"``), so they stay typed: ``(B, I, H, W) -> (B, O, H, W)``.

    Args:
        kernel_size: odd (an int or a pair), so the padding is the same on both sides.
        dilation: as ``Conv2d``.
        groups: as ``Conv2d``.
        in_channels: as ``Conv2d``.
        out_channels: as ``Conv2d``.
        bias: as ``Conv2d``.
        generator: as ``Conv2d``.
        dtype: as ``Conv2d``.

    Examples:
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> conv = sg.nn.SameConv2d[L[3], L[8]](3)
        >>> conv(sg.ones(2, 3, 16, 16)).shape
        (2, 8, 16, 16)
    """

    def __init__(
        self,
        kernel_size: Size,
        dilation: Size = 1,
        groups: int = 1,
        *,
        in_channels: I | int | None = None,
        out_channels: O | int | None = None,
        bias: bool = True,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None:
        kernel, dilate = _pair(kernel_size, "SameConv2d", "kernel_size"), _pair(dilation, "SameConv2d", "dilation")
        if kernel[0] % 2 == 0 or kernel[1] % 2 == 0:
            raise ShapeError(f"SameConv2d expects an odd kernel_size (equal padding on both sides), found {kernel}")
        padding = (dilate[0] * (kernel[0] - 1) // 2, dilate[1] * (kernel[1] - 1) // 2)
        super().__init__(
            kernel,
            1,
            padding,
            dilate,
            groups,
            in_channels=in_channels,
            out_channels=out_channels,
            bias=bias,
            generator=generator,
            dtype=dtype,
        )

    @overload
    def __call__(self: SameConv2d[Open, Co], x: Tensor[T, B, Any, H, W]) -> Tensor[T, B, Co, H, W]: ...
    @overload
    def __call__(self, x: Tensor[T, B, I, H, W]) -> Tensor[T, B, O, H, W]: ...
    @overload
    def __call__(self: SameConv2d[Open, Co], x: Tensor[T, Any, H, W]) -> Tensor[T, Co, H, W]: ...
    @overload
    def __call__(self, x: Tensor[T, I, H, W]) -> Tensor[T, O, H, W]: ...
    def __call__(self, x: Any) -> Any:  # pyright: ignore[reportIncompatibleMethodOverride] -- the same convolution, whose sizes are known
        return _unbatched("SameConv2d", x, _IMAGE, self._convolve)


class Conv1d(Layer[Chan[I], Chan[O], I, O], checked=False):
    """1-D convolution from ``I`` to ``O`` channels over ``(B, I, L)`` inputs, or one
    unbatched ``(I, L)`` sequence as PyTorch's (a ``Conv2d`` over a height of 1). Arguments
    as ``Conv2d``, with ints for sizes."""

    def __init__(
        self,
        kernel_size: int,
        stride: int = 1,
        padding: int | PaddingMode = 0,
        dilation: int = 1,
        groups: int = 1,
        *,
        in_channels: I | int | None = None,
        out_channels: O | int | None = None,
        bias: bool = True,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None:
        self.in_channels = self._size_arg(0, in_channels, "in_channels")
        self.out_channels = self._size_arg(1, out_channels, "out_channels")
        self.kernel_size, self.stride, self.dilation = (
            integer("Conv1d", "kernel_size", kernel_size),
            integer("Conv1d", "stride", stride),
            integer("Conv1d", "dilation", dilation),
        )
        self.padding = _padding(padding, (1, self.kernel_size), (1, self.dilation), (1, self.stride), "Conv1d")[1]
        self.groups = integer("Conv1d", "groups", groups)
        weight, bias_param = _conv_parameters(self, (1, self.kernel_size), bias, generator, dtype)
        self.weight: Tensor[NoTape, O, Any, Any, Any] = weight
        self.bias: Tensor[NoTape, O] | None = bias_param

    def torch_layout(self, name: str, array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """PyTorch's ``weight`` is ``(O, I/groups, k)``; ours has a height of 1: ``(O, I/groups, 1, k)``."""
        if name == "weight" and array.ndim == 3:
            return array.reshape(array.shape[0], array.shape[1], 1, array.shape[2])
        return array

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch ``nn.Conv1d`` with another stride, padding, dilation or groups, or
        a ``padding_mode`` other than ``"zeros"``."""
        expect_kind(torch_module, path, self, "Conv1d")
        _check_torch_conv(torch_module, path, (self.stride,), (self.padding,), (self.dilation,), self.groups)

    # Built from plain ints (no type arguments: Open channels), it takes any channel count,
    # which the run time checks against its weight.
    @overload
    def __call__(self: Conv1d[Open, Co], x: Tensor[T, B, Any, N]) -> Tensor[T, B, Co, Open]: ...
    @overload
    def __call__(self, x: Tensor[T, B, I, N]) -> Tensor[T, B, O, Open]: ...
    # One unbatched sequence, as PyTorch takes it.
    @overload
    def __call__(self: Conv1d[Open, Co], x: Tensor[T, Any, N]) -> Tensor[T, Co, Open]: ...
    @overload
    def __call__(self, x: Tensor[T, I, N]) -> Tensor[T, O, Open]: ...
    def __call__(self, x: Any) -> Any:
        return _unbatched("Conv1d", x, _SIGNAL, self._convolve)

    def _convolve(self, x: AnyTensor) -> Any:
        b, c, length = x.shape
        image = x.reshape(b, c, 1, length)
        out: AnyTensor = conv2d(
            image, self.weight, self.bias, (1, self.stride), (0, self.padding), (1, self.dilation), self.groups
        )
        return out.reshape(b, self.out_channels, out.shape[3])


class ConvTranspose2d(Layer[Chan[I], Chan[O], I, O], Generic[I, O, R], checked=False):
    """Transposed 2-D convolution (the gradient of ``Conv2d`` with respect to its input),
    from ``I`` to ``O`` channels; upsamples by ``stride``.

    Output size per axis: ``(n - 1)·stride - 2·padding + dilation·(k - 1) + output_padding + 1``,
    typed ``sg.Open``; a third type argument :class:`Doubles` (``ConvTranspose2d[L[64],
    L[32], Doubles](4, 2, 1)``, DCGAN's and U-Net's up-sampling) types it ``Twice[H]``,
    ``Twice[W]``, and the layer refuses arguments that do not double every size.
    Weight layout ``(I, O, kh, kw)``, as PyTorch. ``groups`` is 1.
    """

    def __init__(
        self,
        kernel_size: Size,
        stride: Size = 1,
        padding: Size = 0,
        output_padding: Size = 0,
        dilation: Size = 1,
        *,
        in_channels: I | int | None = None,
        out_channels: O | int | None = None,
        bias: bool = True,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None:
        self.in_channels = self._size_arg(0, in_channels, "in_channels")
        self.out_channels = self._size_arg(1, out_channels, "out_channels")
        self.kernel_size, self.stride, self.padding = (
            _pair(kernel_size, "ConvTranspose2d", "kernel_size"),
            _pair(stride, "ConvTranspose2d", "stride"),
            _pair(padding, "ConvTranspose2d", "padding"),
        )
        self.output_padding, self.dilation = (
            _pair(output_padding, "ConvTranspose2d", "output_padding"),
            _pair(dilation, "ConvTranspose2d", "dilation"),
        )
        if any(op >= max(s, d) for op, s, d in zip(self.output_padding, self.stride, self.dilation, strict=False)):
            raise ShapeError(
                f"ConvTranspose2d: output_padding {self.output_padding} must be smaller than stride or dilation"
            )
        if len(self._type_args) > 2 and self._type_args[2] is Doubles:
            # 2n for every n: stride 2, and the size's constant part (the formula above at
            # n = 0, plus the stride) zero.
            rest = tuple(
                -2 * p + d * (k - 1) + op + 1 - s
                for s, p, d, k, op in zip(
                    self.stride, self.padding, self.dilation, self.kernel_size, self.output_padding, strict=True
                )
            )
            if self.stride != (2, 2) or rest != (0, 0):
                raise ShapeError(
                    f"{type(self).__name__}: the type says Doubles (each size twice), but kernel_size="
                    f"{self.kernel_size}, stride={self.stride}, padding={self.padding}, dilation={self.dilation}, "
                    f"output_padding={self.output_padding} give (n - 1)·{self.stride[0]} + {rest[0] + self.stride[0]}; "
                    "expected stride 2 with kernel 4 and padding 1, or kernel 2 and padding 0"
                )
        fan_in = self.out_channels * self.kernel_size[0] * self.kernel_size[1]
        bound = 1.0 / math.sqrt(fan_in)
        shape = (self.in_channels, self.out_channels, *self.kernel_size)
        self.weight: Tensor[NoTape, I, O, Any, Any] = uniform_parameter(shape, bound, generator, dtype)
        self.bias: Tensor[NoTape, O] | None = (
            uniform_parameter((self.out_channels,), bound, generator, dtype) if bias else None
        )

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch ``nn.ConvTranspose2d`` with another stride, padding,
        output_padding or dilation, or ``groups`` other than 1."""
        expect_kind(torch_module, path, self, "ConvTranspose2d")
        _check_torch_conv(torch_module, path, self.stride, self.padding, self.dilation, 1)
        same(torch_module, path, "output_padding", self.output_padding)

    @overload
    def __call__(
        self: ConvTranspose2d[N, Co, Doubles], x: Tensor[T, B, N, H, W]
    ) -> Tensor[T, B, Co, Twice[H], Twice[W]]: ...
    @overload
    def __call__(self: ConvTranspose2d[Open, Co, Any], x: Tensor[T, B, Any, H, W]) -> Tensor[T, B, Co, Open, Open]: ...
    @overload
    def __call__(self, x: Tensor[T, B, I, H, W]) -> Tensor[T, B, O, Open, Open]: ...
    def __call__(self, x: Any) -> Any:
        if x.ndim != 4 or x.shape[1] != self.in_channels:  # else a reshape of the weight fails
            raise ShapeError(
                f"ConvTranspose2d({self.in_channels}, {self.out_channels}) expects input (batch, "
                f"{self.in_channels}, height, width), found shape {x.shape}"
            )
        # PyTorch takes a zero height or width in an empty batch here; fold, which this
        # composite's windows go through, refuses zero windows, so shapegrad refuses both.
        check_extents("ConvTranspose2d", x.shape)
        b, c, h, w = x.shape
        kh, kw = self.kernel_size
        size = tuple(
            (n - 1) * s - 2 * p + d * (k - 1) + op + 1
            for n, s, p, d, k, op in zip(
                (h, w), self.stride, self.padding, self.dilation, self.kernel_size, self.output_padding, strict=False
            )
        )
        kernel: Any = self.weight.reshape(c, self.out_channels * kh * kw).permute(1, 0)
        pixels: Any = x.reshape(b, c, h * w)
        cols: AnyTensor = kernel @ pixels  # (B, O·k, H·W)
        windows = cols.reshape(b, self.out_channels, kh * kw, h, w)
        out: Any = fold(windows, (size[0], size[1]), self.kernel_size, self.stride, self.padding, self.dilation)
        if self.bias is not None:
            out = out + self.bias.reshape(self.out_channels, 1, 1)
        return out


def _flag(op: str, what: str, value: Any) -> bool:
    """A setting that is True or False (``ceil_mode``); ``HyperparameterError`` otherwise."""
    if not isinstance(value, (bool, np.bool_)):
        raise HyperparameterError(f"{op} expects {what} True or False, found {value!r}")
    return True if value else False


class _Pool2d(Layer[Chan[Any], Chan[Any]], Generic[R], checked=False):
    def __init__(
        self, kernel_size: Size, stride: Size | None = None, padding: Size = 0, ceil_mode: bool = False
    ) -> None:
        name = type(self).__name__.split("[")[0]
        self.kernel_size = _pair(kernel_size, name, "kernel_size")
        self.stride = _pair(stride, name, "stride") if stride is not None else self.kernel_size
        self.padding = _pair(padding, name, "padding")
        self.ceil_mode = _flag(name, "ceil_mode", ceil_mode)

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch pooling of another kind (average for maximum), with another window,
        stride, padding, ``ceil_mode``, ``count_include_pad`` or ``divisor_override``, or a
        maximum's other ``dilation`` or ``return_indices``."""
        expect_kind(torch_module, path, self, type(self).__name__.split("[")[0])
        for setting in ("kernel_size", "stride", "padding"):
            same_pair(torch_module, path, setting, getattr(self, setting))
        same(torch_module, path, "ceil_mode", self.ceil_mode)
        if isinstance(self, MaxPool2d):
            same_pair(torch_module, path, "dilation", self.dilation)
            same(torch_module, path, "return_indices", self.return_indices)
        elif isinstance(self, AvgPool2d):
            same(torch_module, path, "count_include_pad", self.count_include_pad)
            same(torch_module, path, "divisor_override", self.divisor_override)


class Indices:
    """The rule of a ``MaxPool2d(..., return_indices=True)``: its call returns ``(values,
    indices)``, the height and width typed ``sg.Open``. No ``SizeRule``: a layer that returns
    a pair is no layer that returns a tensor. Never instantiated."""


class HalvesIndices(Indices):
    """``Indices`` of a ``MaxPool2d(2, return_indices=True)``: both halves typed ``Half[H]``,
    ``Half[W]``."""


class MaxPool2d(_Pool2d[R], checked=False):
    """Maximum over each ``kernel_size`` window (stride defaults to the kernel size) of
    ``(B, C, H, W)`` inputs, or of one unbatched ``(C, H, W)`` image as PyTorch's.
    Padding counts as ``-inf``, as PyTorch. Of tied maxima the first gets the gradient, as PyTorch.
    Arguments in PyTorch's order:

    Args:
        kernel_size: an int or a (height, width) pair.
        stride: an int or a pair; the kernel size when None.
        padding: ``-inf`` on each side, at most half the kernel.
        dilation: the distance between a window's taps (an int or a pair), as PyTorch's.
        return_indices: also return where each maximum is, as PyTorch's: ``(values,
            indices)``, the indices an untraced int64 tensor of the values' shape holding
            ``row·W + column`` in the input's ``(H, W)`` plane (what ``MaxUnpool2d`` takes).
        ceil_mode: round the output's size up, as PyTorch's: the last window may run off the
            end (it must start inside the input or its left padding) and is clipped there.

    ``MaxPool2d(2)`` types the result's height and width as ``Half[H]``, ``Half[W]``
    (rounded down, as PyTorch: 7 -> 3); other sizes, a dilation, and ``ceil_mode=True`` give
    ``sg.Open``. A literal ``return_indices=True`` types the call as a pair of tensors (a
    ``MaxPool2d[Indices]``)."""

    # A literal 2 (PyTorch's usual pooling) gives the Halves rule; any other size is Open, and
    # so is ceil_mode=True (rounded up: Half[H] is rounded down). return_indices=True gives
    # the Indices rules, whose call returns a pair.
    # (The overloads sit on each class: a base's self annotation does not bind the subclass.)
    @overload
    def __init__(
        self: MaxPool2d[Halves],
        kernel_size: Literal[2],
        stride: Literal[2] | None = None,
        padding: Literal[0] = 0,
        dilation: Literal[1] = 1,
        return_indices: Literal[False] = False,
        ceil_mode: Literal[False] = False,
    ) -> None: ...
    @overload
    def __init__(
        self: MaxPool2d[HalvesIndices],
        kernel_size: Literal[2],
        stride: Literal[2] | None = None,
        padding: Literal[0] = 0,
        dilation: Literal[1] = 1,
        *,
        return_indices: Literal[True],
        ceil_mode: Literal[False] = False,
    ) -> None: ...
    @overload
    def __init__(
        self: MaxPool2d[SizeRule],
        kernel_size: Size,
        stride: Size | None = None,
        padding: Size = 0,
        dilation: Size = 1,
        return_indices: Literal[False] = False,
        ceil_mode: bool = False,
    ) -> None: ...
    @overload
    def __init__(
        self: MaxPool2d[Indices],
        kernel_size: Size,
        stride: Size | None = None,
        padding: Size = 0,
        dilation: Size = 1,
        *,
        return_indices: Literal[True],
        ceil_mode: bool = False,
    ) -> None: ...
    @overload
    def __init__(
        self: MaxPool2d[Any],
        kernel_size: Size,
        stride: Size | None = None,
        padding: Size = 0,
        dilation: Size = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None: ...
    def __init__(
        self,
        kernel_size: Size,
        stride: Size | None = None,
        padding: Size = 0,
        dilation: Size = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode)
        self.dilation = _pair(dilation, "MaxPool2d", "dilation")
        if min(self.dilation) < 1:
            raise HyperparameterError(f"MaxPool2d expects a positive dilation, found dilation={dilation!r}")
        self.return_indices = _flag("MaxPool2d", "return_indices", return_indices)

    @overload
    def __call__(self: MaxPool2d[Halves], x: Tensor[T, B, Ch, H, W]) -> Tensor[T, B, Ch, Half[H], Half[W]]: ...
    @overload
    def __call__(self: MaxPool2d[Halves], x: Tensor[T, Ch, H, W]) -> Tensor[T, Ch, Half[H], Half[W]]: ...
    @overload
    def __call__(  # pyright: ignore[reportOverlappingOverload] -- the halved sizes first, Indices' Open ones next
        self: MaxPool2d[HalvesIndices], x: Tensor[T, B, Ch, H, W]
    ) -> tuple[Tensor[T, B, Ch, Half[H], Half[W]], Tensor[NoTape, B, Ch, Half[H], Half[W]]]: ...
    @overload
    def __call__(  # pyright: ignore[reportOverlappingOverload] -- the halved sizes first, Indices' Open ones next
        self: MaxPool2d[HalvesIndices], x: Tensor[T, Ch, H, W]
    ) -> tuple[Tensor[T, Ch, Half[H], Half[W]], Tensor[NoTape, Ch, Half[H], Half[W]]]: ...
    @overload
    def __call__(
        self: MaxPool2d[Indices], x: Tensor[T, B, Ch, H, W]
    ) -> tuple[Tensor[T, B, Ch, Open, Open], Tensor[NoTape, B, Ch, Open, Open]]: ...
    @overload
    def __call__(
        self: MaxPool2d[Indices], x: Tensor[T, Ch, H, W]
    ) -> tuple[Tensor[T, Ch, Open, Open], Tensor[NoTape, Ch, Open, Open]]: ...
    @overload
    def __call__(self, x: Tensor[T, B, Ch, H, W]) -> Tensor[T, B, Ch, Open, Open]: ...
    @overload
    def __call__(self, x: Tensor[T, Ch, H, W]) -> Tensor[T, Ch, Open, Open]: ...
    def __call__(self, x: Any) -> Any:
        return _pooled("MaxPool2d", x, self._pool, self.return_indices)

    def _pool(self, x: AnyTensor) -> Any:
        return max_pool_op(
            x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.dilation, self.return_indices
        )


def _pooled(layer: str, x: AnyTensor, run: Callable[[AnyTensor], Any], pair: bool) -> Any:
    """``_unbatched`` for a pooling that may return ``(values, indices)`` (``pair``): an
    unbatched image's batch axis is removed from both."""
    if pair and x.ndim == len(_IMAGE) - 1:
        values, indices = run(x.reshape(1, *x.shape))
        return values.reshape(*values.shape[1:]), indices.reshape(*indices.shape[1:])
    return _unbatched(layer, x, _IMAGE, run)


# As MaxPool2d's: a literal 2 (no padding, dilation or ceil_mode) halves the height and width
# (Half[H], rounded down), the rest is Open.
@overload
def max_pool2d(  # pyright: ignore[reportOverlappingOverload] -- the halved sizes first, the Open ones next
    x: Tensor[T, B, Ch, H, W],
    kernel_size: Literal[2],
    stride: Literal[2] | None = None,
    padding: Literal[0] = 0,
    dilation: Literal[1] = 1,
    ceil_mode: Literal[False] = False,
    return_indices: Literal[False] = False,
) -> Tensor[T, B, Ch, Half[H], Half[W]]: ...
@overload
def max_pool2d(  # pyright: ignore[reportOverlappingOverload] -- the halved sizes first, the Open ones next
    x: Tensor[T, Ch, H, W],
    kernel_size: Literal[2],
    stride: Literal[2] | None = None,
    padding: Literal[0] = 0,
    dilation: Literal[1] = 1,
    ceil_mode: Literal[False] = False,
    return_indices: Literal[False] = False,
) -> Tensor[T, Ch, Half[H], Half[W]]: ...
@overload
def max_pool2d(  # pyright: ignore[reportOverlappingOverload] -- the halved sizes first, the Open ones next
    x: Tensor[T, B, Ch, H, W],
    kernel_size: Literal[2],
    stride: Literal[2] | None = None,
    padding: Literal[0] = 0,
    dilation: Literal[1] = 1,
    ceil_mode: Literal[False] = False,
    *,
    return_indices: Literal[True],
) -> tuple[Tensor[T, B, Ch, Half[H], Half[W]], Tensor[NoTape, B, Ch, Half[H], Half[W]]]: ...
@overload
def max_pool2d(  # pyright: ignore[reportOverlappingOverload] -- the halved sizes first, the Open ones next
    x: Tensor[T, Ch, H, W],
    kernel_size: Literal[2],
    stride: Literal[2] | None = None,
    padding: Literal[0] = 0,
    dilation: Literal[1] = 1,
    ceil_mode: Literal[False] = False,
    *,
    return_indices: Literal[True],
) -> tuple[Tensor[T, Ch, Half[H], Half[W]], Tensor[NoTape, Ch, Half[H], Half[W]]]: ...
@overload
def max_pool2d(
    x: Tensor[T, B, Ch, H, W],
    kernel_size: Size,
    stride: Size | None = None,
    padding: Size = 0,
    dilation: Size = 1,
    ceil_mode: bool = False,
    return_indices: Literal[False] = False,
) -> Tensor[T, B, Ch, Open, Open]: ...
@overload
def max_pool2d(
    x: Tensor[T, Ch, H, W],
    kernel_size: Size,
    stride: Size | None = None,
    padding: Size = 0,
    dilation: Size = 1,
    ceil_mode: bool = False,
    return_indices: Literal[False] = False,
) -> Tensor[T, Ch, Open, Open]: ...
@overload
def max_pool2d(
    x: Tensor[T, B, Ch, H, W],
    kernel_size: Size,
    stride: Size | None = None,
    padding: Size = 0,
    dilation: Size = 1,
    ceil_mode: bool = False,
    *,
    return_indices: Literal[True],
) -> tuple[Tensor[T, B, Ch, Open, Open], Tensor[NoTape, B, Ch, Open, Open]]: ...
@overload
def max_pool2d(
    x: Tensor[T, Ch, H, W],
    kernel_size: Size,
    stride: Size | None = None,
    padding: Size = 0,
    dilation: Size = 1,
    ceil_mode: bool = False,
    *,
    return_indices: Literal[True],
) -> tuple[Tensor[T, Ch, Open, Open], Tensor[NoTape, Ch, Open, Open]]: ...
def max_pool2d(
    x: Any,
    kernel_size: Size,
    stride: Size | None = None,
    padding: Size = 0,
    dilation: Size = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """Maximum over each window of ``(B, C, H, W)`` or one ``(C, H, W)`` image, as PyTorch's
    ``F.max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)``
    (arguments in its order, which puts ``ceil_mode`` before ``return_indices`` where
    ``nn.MaxPool2d`` puts it after): ``MaxPool2d``'s op as a function, see there. With
    ``return_indices=True``, ``(values, indices)``.

    Examples:
        >>> import shapegrad as sg
        >>> x = sg.tensor([[[[1.0, 5.0], [7.0, 2.0]]]])
        >>> values, indices = sg.nn.max_pool2d(x, 2, return_indices=True)
        >>> values.numpy().tolist(), indices.numpy().tolist()
        ([[[[7.0]]]], [[[[2]]]])
    """
    layer: MaxPool2d[Any] = MaxPool2d(kernel_size, stride, padding, dilation, return_indices, ceil_mode)
    return _pooled("max_pool2d", x, layer._pool, layer.return_indices)


class MaxUnpool2d(Layer[Chan[Any], Chan[Any]], checked=False):
    """``MaxPool2d``'s partial inverse, as PyTorch's ``nn.MaxUnpool2d``: each value of a
    ``(B, C, h, w)`` (or unbatched ``(C, h, w)``) input put at its index (``row·W + column``,
    what ``MaxPool2d(..., return_indices=True)`` returns) in a plane of zeros of height×width
    ``((h - 1)·stride - 2·padding + kernel, ...)``, or ``output_size`` at the call. Gradient:
    each value gets the output's gradient at its index. An index outside the plane is a
    ``ShapeError`` (PyTorch's "invalid max index"); of repeated indices one value is kept.
    It has no parameters.

    Args:
        kernel_size: the pooling's window, an int or a (height, width) pair.
        stride: the pooling's stride; the kernel size when None.
        padding: the pooling's padding.
    """

    def __init__(self, kernel_size: Size, stride: Size | None = None, padding: Size = 0) -> None:
        self.kernel_size = _pair(kernel_size, "MaxUnpool2d", "kernel_size")
        self.stride = _pair(stride, "MaxUnpool2d", "stride") if stride is not None else self.kernel_size
        self.padding = _pair(padding, "MaxUnpool2d", "padding")

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch module other than ``MaxUnpool2d``, or another window, stride or padding."""
        expect_kind(torch_module, path, self, "MaxUnpool2d")
        for setting in ("kernel_size", "stride", "padding"):
            same_pair(torch_module, path, setting, getattr(self, setting))

    @overload
    def __call__(
        self, x: Tensor[T, B, Ch, H, W], indices: Tensor[Any, B, Ch, H, W], output_size: Size | None = None
    ) -> Tensor[T, B, Ch, Open, Open]: ...
    @overload
    def __call__(
        self, x: Tensor[T, Ch, H, W], indices: Tensor[Any, Ch, H, W], output_size: Size | None = None
    ) -> Tensor[T, Ch, Open, Open]: ...
    def __call__(self, x: Any, indices: Any, output_size: Any = None) -> Any:
        return _max_unpool2d(x, indices, self.kernel_size, self.stride, self.padding, output_size)


@overload
def max_unpool2d(
    x: Tensor[T, B, Ch, H, W],
    indices: Tensor[Any, B, Ch, H, W],
    kernel_size: Size,
    stride: Size | None = None,
    padding: Size = 0,
    output_size: Size | None = None,
) -> Tensor[T, B, Ch, Open, Open]: ...
@overload
def max_unpool2d(
    x: Tensor[T, Ch, H, W],
    indices: Tensor[Any, Ch, H, W],
    kernel_size: Size,
    stride: Size | None = None,
    padding: Size = 0,
    output_size: Size | None = None,
) -> Tensor[T, Ch, Open, Open]: ...
def max_unpool2d(
    x: Any,
    indices: Any,
    kernel_size: Size,
    stride: Size | None = None,
    padding: Size = 0,
    output_size: Size | None = None,
) -> Any:
    """``MaxUnpool2d``'s op as a function, PyTorch's ``F.max_unpool2d(x, indices,
    kernel_size, stride, padding, output_size)``: see ``MaxUnpool2d``. ``output_size`` is
    ``(H, W)``, or a size with the batch and channels first (its last two are taken), as
    PyTorch's."""
    return _max_unpool2d(x, indices, kernel_size, stride, padding, output_size)


def _max_unpool2d(
    x: Any, indices: Any, kernel_size: Size, stride: Size | None, padding: Size, output_size: Size | None
) -> Any:
    kernel = _pair(kernel_size, "max_unpool2d", "kernel_size")
    steps = _pair(stride, "max_unpool2d", "stride") if stride is not None else kernel
    pads = _pair(padding, "max_unpool2d", "padding")
    if x.ndim not in (3, 4):
        raise ShapeError(
            f"max_unpool2d expects input (batch, channels, height, width) or (channels, height, width), "
            f"found shape {x.shape}"
        )
    if not isinstance(indices, Tensor):
        raise DTypeError(f"max_unpool2d expects indices as a Tensor (MaxPool2d's), found {type(indices).__name__}")
    index = cast(AnyTensor, indices)
    if index.shape != x.shape:
        raise ShapeError(f"max_unpool2d expects indices of the input's shape {x.shape}, found shape {index.shape}")
    dtype = index.backend_dtype_name()
    if not dtype.startswith(("int", "uint")):
        raise DTypeError(f"max_unpool2d expects integer indices (MaxPool2d's int64), found {dtype}")
    h, w = x.shape[-2], x.shape[-1]
    size = tuple((n - 1) * s - 2 * p + k for n, s, p, k in zip((h, w), steps, pads, kernel, strict=True))
    if output_size is not None:
        given: tuple[Any, ...] = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * 2
        if len(given) not in (2, x.ndim):
            raise ShapeError(
                f"max_unpool2d expects output_size (height, width) or of {x.ndim} sizes, found {output_size!r}"
            )
        wanted = tuple(integer("max_unpool2d", "output_size", n) for n in given[-2:])
        for axis, (n, default, s) in enumerate(zip(wanted, size, steps, strict=True)):
            if not default - s < n < default + s:  # PyTorch's bounds: sizes a pooling could have come from
                raise ShapeError(
                    f"max_unpool2d expects output_size {axis} ({'height' if axis == 0 else 'width'}) strictly "
                    f"between {default - s} and {default + s}, as PyTorch, found {n}"
                )
        size = wanted
    if min(size) < 1:
        raise ShapeError(f"max_unpool2d: the output's height×width {size[0]}×{size[1]} is empty")
    batched: AnyTensor = x if x.ndim == 4 else x.reshape(1, *x.shape)
    index = index if index.ndim == 4 else index.reshape(1, *index.shape)
    b, c = batched.shape[0], batched.shape[1]
    backend = batched._backend
    xp = backend.xp
    plane = size[0] * size[1]
    flat_index = index.reshape(b, c, h * w)
    require_in_range(
        backend,
        flat_index._data,
        0,
        plane,
        f"max_unpool2d: an index is outside the output's {size[0]}×{size[1]} plane (0 to {plane - 1})",
    )
    rows = wrap(xp.reshape(xp.arange(b, dtype=xp.int64), (b, 1, 1)), backend)
    channels = wrap(xp.reshape(xp.arange(c, dtype=xp.int64), (1, c, 1)), backend)
    zeros = wrap(xp.zeros((b, c, plane), dtype=batched._data.dtype), backend)
    out: AnyTensor = zeros.at[rows, channels, flat_index].set(batched.reshape(b, c, h * w))
    out = out.reshape(b, c, size[0], size[1])
    return out if x.ndim == 4 else out.reshape(c, size[0], size[1])


class AvgPool2d(_Pool2d[R], checked=False):
    """Mean over each ``kernel_size`` window of ``(B, C, H, W)`` inputs, or of one unbatched
    ``(C, H, W)`` image as PyTorch's. Arguments in PyTorch's order:

    Args:
        kernel_size: an int or a (height, width) pair.
        stride: an int or a pair; the kernel size when None.
        padding: zeros on each side, at most half the kernel.
        ceil_mode: round the output's size up, as PyTorch's: the last window may run off the
            end (it must start inside the input or its left padding) and is clipped there.
        count_include_pad: whether the padding counts in each window's mean (PyTorch's
            default, True); False divides by the window's cells inside the input alone.
        divisor_override: a nonzero int each window's sum is divided by instead.

    The divisor is PyTorch's: with ``count_include_pad`` the window's cells up to the end
    of the right padding (a ``ceil_mode`` window running past it is clipped there), without
    it the cells inside the input. ``AvgPool2d(2)`` halves the typed height and width as
    ``MaxPool2d(2)`` does; ``ceil_mode=True`` gives ``sg.Open``."""

    # A literal 2 (PyTorch's usual pooling) gives the Halves rule; any other size is Open, and
    # so is ceil_mode=True (rounded up: Half[H] is rounded down).
    # (The overloads sit on each class: a base's self annotation does not bind the subclass.)
    @overload
    def __init__(
        self: AvgPool2d[Halves],
        kernel_size: Literal[2],
        stride: Literal[2] | None = None,
        padding: Literal[0] = 0,
        ceil_mode: Literal[False] = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None: ...
    @overload
    def __init__(
        self: AvgPool2d[SizeRule],
        kernel_size: Size,
        stride: Size | None = None,
        padding: Size = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None: ...
    def __init__(
        self,
        kernel_size: Size,
        stride: Size | None = None,
        padding: Size = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode)
        self.count_include_pad = _flag("AvgPool2d", "count_include_pad", count_include_pad)
        if divisor_override is not None:
            if isinstance(divisor_override, bool) or integer("AvgPool2d", "divisor_override", divisor_override) == 0:
                raise HyperparameterError(f"AvgPool2d expects a nonzero divisor_override, found {divisor_override!r}")
            divisor_override = integer("AvgPool2d", "divisor_override", divisor_override)
        self.divisor_override = divisor_override

    @overload
    def __call__(self: AvgPool2d[Halves], x: Tensor[T, B, Ch, H, W]) -> Tensor[T, B, Ch, Half[H], Half[W]]: ...
    @overload
    def __call__(self: AvgPool2d[Halves], x: Tensor[T, Ch, H, W]) -> Tensor[T, Ch, Half[H], Half[W]]: ...
    @overload
    def __call__(self, x: Tensor[T, B, Ch, H, W]) -> Tensor[T, B, Ch, Open, Open]: ...
    @overload
    def __call__(self, x: Tensor[T, Ch, H, W]) -> Tensor[T, Ch, Open, Open]: ...
    def __call__(self, x: Any) -> Any:
        return _unbatched("AvgPool2d", x, _IMAGE, self._pool)

    def _pool(self, x: AnyTensor) -> Any:
        out, extra = pool_geometry("avg_pool2d", x, self.kernel_size, self.stride, self.padding, self.ceil_mode)
        if extra != (0, 0):  # ceil_mode's windows past the end: zeros there, left out of the divisor below
            x = pad(x, ((0, 0), (0, 0), (0, extra[0]), (0, extra[1])))
        cols: AnyTensor = unfold(x, self.kernel_size, self.stride, self.padding)
        if self.divisor_override is None and extra == (0, 0) and (self.count_include_pad or self.padding == (0, 0)):
            return cols.mean(2)  # every window's divisor is kh·kw
        size = (x.shape[2] - extra[0], x.shape[3] - extra[1])
        if self.divisor_override is not None:
            divisor: Any = float(self.divisor_override)
        else:
            rows, columns = (
                avg_pool_cells(n, k, s, p, o, self.count_include_pad)
                for n, k, s, p, o in zip(size, self.kernel_size, self.stride, self.padding, out, strict=True)
            )
            xp = x._backend.xp
            divisor = wrap(xp.asarray([[r * c for c in columns] for r in rows], dtype=x._data.dtype), x._backend)
        return cols.sum(2) / divisor


class GlobalAvgPool2d(Layer[Chan[C], C, C], checked=False):
    """Mean over height and width: ``(B, C, H, W) -> (B, C)`` (channels become features)."""

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch module other than ``AdaptiveAvgPool2d(1)``."""
        expect_kind(torch_module, path, self, "AdaptiveAvgPool2d")
        same_pair(torch_module, path, "output_size", (1, 1))

    def __call__(self, x: Tensor[T, B, Ch, H, W]) -> Tensor[T, B, Ch]:
        return x.mean((2, 3))


class GlobalMaxPool2d(Layer[Chan[C], C, C], checked=False):
    """Maximum over height and width: ``(B, C, H, W) -> (B, C)``."""

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch module other than ``AdaptiveMaxPool2d(1)``."""
        expect_kind(torch_module, path, self, "AdaptiveMaxPool2d")
        same_pair(torch_module, path, "output_size", (1, 1))

    def __call__(self, x: Tensor[T, B, Ch, H, W]) -> Tensor[T, B, Ch]:
        return x.max((2, 3))


class Flatten(TorchTwin, Layer[Chan[Any], Any], checked=False):
    """Every axis after the batch merged: ``(B, C, H, W) -> (B, Prod[C, H, W])``.

    In a ``Sequential`` it turns channels into features; the flattened size is not computed
    there (the next ``Linear`` checks it at run time, or type the model's flatten with
    ``Prod``: ``Linear[Prod[L[8], L[7], L[7]], L[10]]``)."""

    _torch_settings = ("start_dim", "end_dim")
    start_dim, end_dim = 1, -1  # PyTorch's nn.Flatten's, compared by from_torch

    @overload
    def __call__(self, x: Tensor[T, B, Ch, H, W]) -> Tensor[T, B, Prod[Ch, H, W]]: ...  # pyright: ignore[reportOverlappingOverload] -- the typed ranks first, the open fallback last
    @overload
    def __call__(self, x: Tensor[T, B, Ch, W]) -> Tensor[T, B, Prod[Ch, W]]: ...
    @overload
    def __call__(self, x: Tensor[T, B, *tuple[Any, ...]]) -> Tensor[T, B, Open]: ...
    def __call__(self, x: Any) -> Any:
        return x.reshape(x.shape[0], math.prod(x.shape[1:]))
