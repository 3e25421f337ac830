"""Normalization layers."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any, Generic, cast, overload

from typing_extensions import TypeVar

from .._autodiff import NoTape, note_written
from .._dims import Open
from .._errors import HyperparameterError, ShapeError
from .._tensor import AnyTensor, Tensor
from .._typevars import B, H, K, S, T
from ..ops._toolkit import integer
from ..ops.creation import ones, zeros
from ..ops.normalization import layer_norm
from ._module import Chan, ChanLayer, Layer, parameter
from ._torch_config import expect_kind, refuse, same, supported

__all__ = ["BatchNorm1d", "BatchNorm2d", "GroupNorm", "InstanceNorm2d", "LayerNorm"]

# Sizes given as plain ints (LayerNorm(n_embd)) leave these unsolved: Open, never int.
N = TypeVar("N", default=Open)
C = TypeVar("C", default=Open)
# The kind of the size a batch norm keeps: features (C) for BatchNorm1d, channels (Chan[C])
# for BatchNorm2d, so that Sequential takes a BatchNorm2d after a convolution. BatchNorm1d is
# also a ChanLayer[Chan[C], Chan[C]]: Sequential takes it after a Linear and after a Conv1d.
K_ = TypeVar("K_")
W_ = TypeVar("W_")  # an image's width (W is not among the shared type variables)


def _state(tensor: AnyTensor) -> Any:
    # The sizes are runtime ints; the layer's type parameter states them statically.
    return tensor


class LayerNorm(Layer[N, N, N], checked=False):
    """Normalize the last axis (or the last axes) to mean 0 and variance 1, then scale and shift.

    ``y = (x - mean) / sqrt(var + eps) · weight + bias``, with the biased variance, as
    PyTorch's ``nn.LayerNorm``: ``LayerNorm(N)`` normalizes the last axis;
    ``LayerNorm((C, H, W))`` (a tuple or a list, PyTorch's ``normalized_shape``) the last
    three together, with a ``weight`` and ``bias`` of that shape (so ``from_torch`` loads
    PyTorch's unchanged). ``bias=False`` (PyTorch's, since 2.1) keeps the ``weight`` alone;
    ``elementwise_affine=False`` has neither.

    Args:
        normalized_size: ``N``, only when it is not a ``Literal`` type argument; or a tuple
            or list of sizes, the last axes' (a type argument then states the last of them).
        eps: added to the variance.
        elementwise_affine: whether to learn a ``weight`` (ones), and a ``bias`` (zeros).
        bias: whether the affine has a ``bias``.
        dtype: the parameters' dtype.

    ``normalized_shape`` is the tuple of normalized sizes, ``normalized_size`` its last. An
    input whose last axes are not ``normalized_shape`` raises ``ShapeError``, as PyTorch
    refuses it; so does an empty ``normalized_shape``.

    Examples:
        >>> import shapegrad as sg
        >>> norm = sg.nn.LayerNorm((2, 3), bias=False)
        >>> norm(sg.randn(4, 2, 3)).shape, [name for name, _ in norm.named_parameters()]
        ((4, 2, 3), ['weight'])
    """

    # PyTorch's normalized_shape as a tuple or a list first: in the second form pyright would
    # take it for N (LayerNorm[tuple[int, int]]), whose call then wants a tuple for a last axis.
    @overload
    def __init__(
        self,
        normalized_size: Sequence[int],
        *,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        dtype: str = "float32",
    ) -> None: ...
    @overload
    def __init__(
        self,
        normalized_size: N | int | None = None,
        *,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        dtype: str = "float32",
    ) -> None: ...
    def __init__(
        self,
        normalized_size: Any = None,
        *,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        dtype: str = "float32",
    ) -> None:
        if isinstance(normalized_size, (tuple, list)):
            sizes = cast(Sequence[Any], normalized_size)
            shape = tuple(integer("LayerNorm", "normalized_shape", size) for size in sizes)
            if not shape:
                raise ShapeError("LayerNorm expects normalized_shape to hold at least one size (as PyTorch), found ()")
            self._size_arg(0, shape[-1], "normalized_size")  # a type argument states the last axis
        else:
            shape = (self._size_arg(0, normalized_size, "normalized_size"),)
        self.normalized_shape: tuple[int, ...] = shape
        self.normalized_size = shape[-1]
        self.eps = eps
        self.weight: Tensor[NoTape, N] | None = None
        self.bias: Tensor[NoTape, N] | None = None
        if elementwise_affine:
            self.weight = _state(parameter(ones(*shape, dtype=dtype)))
            if bias:
                self.bias = _state(parameter(zeros(*shape, dtype=dtype)))

    # Built from a plain int (LayerNorm(n_embd): LayerNorm[Open]), it takes and keeps any last
    # axis; the run time checks it against the weight.
    @overload
    def __call__(self: LayerNorm[Open], x: Tensor[T, *S, K]) -> Tensor[T, *S, K]: ...
    @overload
    def __call__(self, x: Tensor[T, *S, N]) -> Tensor[T, *S, N]: ...
    def __call__(self, x: Any) -> Any:
        shape = self.normalized_shape
        if len(shape) == 1 and self.bias is not None:
            return layer_norm(x, self.weight, self.bias, self.eps)  # which checks the last axis
        count = len(shape)
        if x.ndim < count or tuple(x.shape[x.ndim - count :]) != shape:
            raise ShapeError(
                f"LayerNorm expects input (..., {', '.join(map(str, shape))}) (normalized_shape={shape}), "
                f"found shape {x.shape}"
            )
        # The normalized axes as one row (channel-major, as PyTorch's weight is laid out).
        size = math.prod(shape)
        rows: AnyTensor = x.reshape(*x.shape[: x.ndim - count], size) if count > 1 else x
        weight: Any = None if self.weight is None else self.weight.reshape(size)
        bias: Any = None if self.bias is None else self.bias.reshape(size)
        y: AnyTensor = cast(AnyTensor, layer_norm(rows, weight, bias, self.eps))  # bias=False: the scale alone
        return y.reshape(*x.shape) if count > 1 else y

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch ``nn.LayerNorm`` over other axes, or with another ``eps``,
        ``elementwise_affine`` or ``bias``."""
        expect_kind(torch_module, path, self, "LayerNorm")
        same(torch_module, path, "normalized_shape", self.normalized_shape)
        same(torch_module, path, "eps", self.eps)
        same(torch_module, path, "elementwise_affine", self.weight is not None)
        theirs = getattr(torch_module, "bias", None) is not None
        if self.weight is not None and theirs != (self.bias is not None):
            refuse(path, f"has bias={theirs} in PyTorch, {self.bias is not None} here")


class _BatchNorm(Layer[K_, K_, C], Generic[K_, C], checked=False):
    _spatial_ranks: tuple[int, ...] = ()
    _torch_kind = "BatchNorm"  # the PyTorch class ``torch_check`` expects (or SyncBatchNorm)

    def __init__(
        self,
        num_features: C | int | None = None,
        *,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        dtype: str = "float32",
    ) -> None:
        self.num_features = self._size_arg(0, num_features, "num_features")
        self.eps, self.momentum = eps, _checked_momentum(type(self).__name__, momentum)
        self.weight: Tensor[NoTape, C] | None = (
            _state(parameter(ones(self.num_features, dtype=dtype))) if affine else None
        )
        self.bias: Tensor[NoTape, C] | None = (
            _state(parameter(zeros(self.num_features, dtype=dtype))) if affine else None
        )
        # Buffers: saved in checkpoints, never trained.
        self.running_mean: Tensor[NoTape, C] = _state(zeros(self.num_features, dtype=dtype))
        self.running_var: Tensor[NoTape, C] = _state(ones(self.num_features, dtype=dtype))
        # momentum=None (a cumulative average): the training batches seen, PyTorch's int64
        # scalar, an array so that a compiled step updates it by array operations. A module
        # with a number for momentum has none: its checkpoints keep their names.
        if momentum is None:
            self.num_batches_tracked: Tensor[NoTape] = zeros(dtype="int64")

    def _normalize(self, x: AnyTensor) -> Any:
        if x.ndim - 2 not in self._spatial_ranks or x.shape[1] != self.num_features:
            raise ShapeError(
                f"{type(self).__name__}({self.num_features}) expects input (batch, {self.num_features}"
                f"{', ...' if self._spatial_ranks != (0,) else ''}), found shape {x.shape}"
            )
        axes = (0, *range(2, x.ndim))
        shape = (1, self.num_features) + (1,) * (x.ndim - 2)
        if self.training:
            count = self._count(x.size // self.num_features)
            if count < 2:
                raise ShapeError(
                    f"{type(self).__name__} in training mode expects more than one value per channel, found shape {x.shape}"
                )
            mean = self._mean(x, axes, count)
            centred: Any = x - mean
            var: Any = self._mean(centred * centred, axes, count)
            self._update_running(mean, var, count)
        else:
            centred = x - self.running_mean.reshape(*shape)
            var = self.running_var.reshape(*shape)
        y: Any = centred / (var + self.eps).sqrt()
        return _affine(y, self.weight, self.bias, self.num_features, x.ndim - 2)

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch batch norm with another ``eps``, ``momentum`` (``None``, a
        cumulative average, included) or ``affine``, or ``track_running_stats=False``."""
        expect_kind(torch_module, path, self, self._torch_kind, "SyncBatchNorm")
        same(torch_module, path, "eps", self.eps)
        same(torch_module, path, "momentum", self.momentum)
        same(torch_module, path, "affine", self.weight is not None)
        supported(
            torch_module,
            path,
            "track_running_stats",
            True,
            "without running statistics PyTorch normalizes by each batch's statistics in eval mode too, "
            "shapegrad's batch norm by its running statistics",
        )

    def _count(self, local: int) -> int:
        """Values per channel the statistics are over (this batch's; SyncBatchNorm: all ranks')."""
        return local

    def _mean(self, x: AnyTensor, axes: tuple[int, ...], count: int) -> Any:
        """The per-channel mean over ``axes`` (kept as size 1)."""
        return x.mean(axes, True)

    def _update_running(self, mean: AnyTensor, var: AnyTensor, count: int) -> None:
        # In place, from the untraced values: the running statistics are state, not graph.
        backend = self.running_mean._backend
        xp = backend.xp
        m: Any = self.momentum
        if m is None:
            # 1 / (batches seen, this one included), PyTorch's cumulative average; by array
            # operations (the count's shape (1,) view keeps them arrays, never NumPy scalars),
            # so that a compiled step replays the count's update instead of baking it in.
            tracked = self.num_batches_tracked
            seen = xp.reshape(tracked.data, (1,)) + 1
            backend.copy_into(tracked.data, xp.reshape(seen, ()))
            note_written(tracked)
            m = (1.0 / seen).astype(self.running_mean.data.dtype)
        batch_mean = xp.reshape(mean.data, (self.num_features,))
        batch_var = xp.reshape(var.data, (self.num_features,)) * (count / (count - 1))
        backend.copy_into(self.running_mean.data, (1 - m) * self.running_mean.data + m * batch_mean)
        backend.copy_into(self.running_var.data, (1 - m) * self.running_var.data + m * batch_var)
        # a backward pass through an op that saved them (x * bn.running_var) would now be wrong
        note_written(self.running_mean)
        note_written(self.running_var)


def _checked_momentum(layer: str, momentum: object) -> float | None:
    """``momentum`` if it is ``None`` or a number in [0, 1]; else ``HyperparameterError``."""
    if momentum is None:
        return None
    if not isinstance(momentum, bool) and isinstance(momentum, numbers.Real) and 0.0 <= float(momentum) <= 1.0:
        return float(momentum)
    raise HyperparameterError(
        f"{layer} expects momentum to be a number in [0, 1] or None (a cumulative average), "
        f"found {momentum!r} ({type(momentum).__name__})"
    )


class BatchNorm1d(_BatchNorm[C, C], ChanLayer[Chan[C], Chan[C]], checked=False):
    """Batch normalization over ``(B, C)`` or ``(B, C, L)`` inputs, as ``nn.BatchNorm1d``.

    In training mode it normalizes with the batch's statistics and updates
    ``running_mean``/``running_var`` (unbiased): ``running = (1 - momentum) · running +
    momentum · batch``, momentum 0.1 by default; in eval mode it uses them. As PyTorch's,
    ``momentum=None`` makes them the cumulative average of every training batch's statistics:
    the module then owns an int64 buffer ``num_batches_tracked`` (saved in checkpoints,
    loaded by ``from_torch``) and updates with ``1 / num_batches_tracked``. A momentum that
    is neither ``None`` nor a number in [0, 1] raises ``HyperparameterError``.

    Examples:
        >>> import shapegrad as sg
        >>> bn = sg.nn.BatchNorm1d(2, momentum=None)
        >>> _ = bn(sg.tensor([[0.0, 1.0], [2.0, 3.0]]))
        >>> _ = bn(sg.tensor([[4.0, 5.0], [6.0, 7.0]]))
        >>> bn.running_mean.numpy().tolist(), int(bn.num_batches_tracked.item())
        ([3.0, 4.0], 2)
    """

    _spatial_ranks = (0, 1)
    _torch_kind = "BatchNorm1d"

    # Built from a plain int (BatchNorm1d(16): Open), it takes any channel count, which the
    # run time checks against its statistics.
    @overload
    def __call__(self: BatchNorm1d[Open], x: Tensor[T, B, K_]) -> Tensor[T, B, K_]: ...
    @overload
    def __call__(self: BatchNorm1d[Open], x: Tensor[T, B, K_, K]) -> Tensor[T, B, K_, K]: ...
    @overload
    def __call__(self, x: Tensor[T, B, C]) -> Tensor[T, B, C]: ...
    @overload
    def __call__(self, x: Tensor[T, B, C, K]) -> Tensor[T, B, C, K]: ...
    def __call__(self, x: Any) -> Any:
        return self._normalize(x)


class BatchNorm2d(_BatchNorm[Chan[C], C], checked=False):
    """Batch normalization over ``(B, C, H, W)`` inputs, as ``nn.BatchNorm2d``; running
    statistics, ``momentum`` and ``momentum=None`` (a cumulative average counted in
    ``num_batches_tracked``) as :class:`BatchNorm1d`'s."""

    _spatial_ranks = (2,)
    _torch_kind = "BatchNorm2d"

    @overload
    def __call__(self: BatchNorm2d[Open], x: Tensor[T, B, K_, H, K]) -> Tensor[T, B, K_, H, K]: ...
    @overload
    def __call__(self, x: Tensor[T, B, C, H, K]) -> Tensor[T, B, C, H, K]: ...
    def __call__(self, x: Any) -> Any:
        return self._normalize(x)


class _SyncBatchNorm(_BatchNorm[K_, C], checked=False):
    """Batch statistics over the global batch: every rank's samples (``comm``)."""

    def __init__(
        self,
        num_features: C | int | None = None,
        *,
        comm: Any,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        dtype: str = "float32",
    ) -> None:
        super().__init__(num_features, eps=eps, momentum=momentum, affine=affine, dtype=dtype)
        self._comm = comm

    def _count(self, local: int) -> int:
        return self._comm.sum_int(local)

    def _mean(self, x: AnyTensor, axes: tuple[int, ...], count: int) -> Any:
        from ..distributed import all_sum

        # Σ over this rank's values, summed over the ranks (differentiably), over the
        # global count: the mean of the global batch, as one process would compute it.
        total: Any = all_sum(x.sum(axes, True), self._comm)
        return total * (1.0 / count)


class SyncBatchNorm1d(_SyncBatchNorm[C, C], BatchNorm1d[C], checked=False):
    """``BatchNorm1d`` whose training statistics are over the global batch of every rank of
    ``comm`` (``shapegrad.distributed.init()``), as ``nn.SyncBatchNorm``; every rank must
    call it. In eval mode it is ``BatchNorm1d``."""


class SyncBatchNorm2d(_SyncBatchNorm[Chan[C], C], BatchNorm2d[C], checked=False):
    """``BatchNorm2d`` with global-batch statistics over ``comm``'s ranks (see
    :class:`SyncBatchNorm1d`)."""


def _affine(y: AnyTensor, weight: AnyTensor | None, bias: AnyTensor | None, channels: int, spatial: int) -> Any:
    """``y · weight + bias`` with one weight and bias per channel of ``y (..., C, *spatial)``
    (``spatial`` axes after the channels): they are reshaped to ``(C, 1, ..., 1)``."""
    if weight is None or bias is None:
        return y
    shape = (channels,) + (1,) * spatial
    scale: Any = weight.reshape(*shape)
    shift: Any = bias.reshape(*shape)
    return y * scale + shift


class GroupNorm(Layer[Chan[C], Chan[C], C], checked=False):
    """Group normalization over ``(B, C, *)`` inputs, as PyTorch's ``nn.GroupNorm(num_groups,
    num_channels)``: the ``C`` channels are split into ``num_groups`` groups of consecutive
    channels, and each sample's group is normalized over its channels and every spatial
    position, then scaled and shifted per channel.

    ``y = (x - mean) / sqrt(var + eps) · weight + bias``, the mean and the biased variance over
    each ``(sample, group)``; ``weight`` (ones) and ``bias`` (zeros) have shape ``(C,)``, as
    PyTorch's, so ``from_torch`` loads them unchanged. Independent of the batch, so the same
    in training and eval mode; it keeps no running statistics. ``num_groups=1`` normalizes
    over all of ``(C, *)`` (LayerNorm over a sample); ``num_groups=C`` is an instance norm
    with a per-channel affine. Built from ``layer_norm`` over ``(B, groups, C/groups · *)``
    and reshapes: no gradient rule of its own.

    Args:
        num_groups: the number of groups; it must divide ``num_channels``.
        num_channels: ``C``, only when it is not a ``Literal`` type argument
            (``GroupNorm[L[64]](32)`` and ``GroupNorm(32, 64)`` are the same layer).
        eps: added to the variance.
        affine: whether to learn ``weight`` and ``bias``.
        dtype: the parameters' dtype.

    A ``num_channels`` not divisible by ``num_groups``, and an input whose axis 1 is not
    ``C`` or whose rank is under 2, raise ``ShapeError``.

    Examples:
        >>> import shapegrad as sg
        >>> norm = sg.nn.GroupNorm(2, 4)
        >>> y = norm(sg.randn(3, 4, 5, 5))
        >>> y.shape
        (3, 4, 5, 5)
        >>> [name for name, _ in norm.named_parameters()]
        ['weight', 'bias']
    """

    def __init__(
        self,
        num_groups: int,
        num_channels: C | int | None = None,
        eps: float = 1e-5,
        affine: bool = True,
        *,
        dtype: str = "float32",
    ) -> None:
        self.num_channels = self._size_arg(0, num_channels, "num_channels")
        self.num_groups = integer("GroupNorm", "num_groups", num_groups)
        if self.num_groups <= 0 or self.num_channels % self.num_groups:
            raise ShapeError(
                f"GroupNorm expects num_channels divisible by a positive num_groups, found "
                f"num_channels={self.num_channels} and num_groups={self.num_groups}"
            )
        self.eps = eps
        self.affine = affine
        self.weight: Tensor[NoTape, C] | None = (
            _state(parameter(ones(self.num_channels, dtype=dtype))) if affine else None
        )
        self.bias: Tensor[NoTape, C] | None = (
            _state(parameter(zeros(self.num_channels, dtype=dtype))) if affine else None
        )

    # Built from a plain int (GroupNorm(32, 64): GroupNorm[Open]), it takes any channel count,
    # which the run time checks against num_channels.
    @overload
    def __call__(self: GroupNorm[Open], x: Tensor[T, B, K, *S]) -> Tensor[T, B, K, *S]: ...
    @overload
    def __call__(self, x: Tensor[T, B, C, *S]) -> Tensor[T, B, C, *S]: ...
    def __call__(self, x: Any) -> Any:
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ShapeError(
                f"GroupNorm({self.num_groups}, {self.num_channels}) expects input (batch, {self.num_channels}, ...), "
                f"found shape {x.shape}"
            )
        # Each (sample, group) is one row of consecutive values: channel-major, so a group's
        # channels and all their positions; layer_norm normalizes each row.
        per_group = math.prod(x.shape[1:]) // self.num_groups
        rows: AnyTensor = x.reshape(x.shape[0], self.num_groups, per_group)
        y: AnyTensor = layer_norm(rows, None, None, self.eps).reshape(*x.shape)
        return _affine(y, self.weight, self.bias, self.num_channels, x.ndim - 2)

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch ``nn.GroupNorm`` with another ``num_groups``, ``eps`` or ``affine``."""
        expect_kind(torch_module, path, self, "GroupNorm")
        same(torch_module, path, "num_groups", self.num_groups)
        same(torch_module, path, "eps", self.eps)
        same(torch_module, path, "affine", self.affine)


class InstanceNorm2d(Layer[Chan[C], Chan[C], C], checked=False):
    """Instance normalization over ``(B, C, H, W)`` or unbatched ``(C, H, W)`` inputs, as
    PyTorch's ``nn.InstanceNorm2d(num_features)``: each sample's channel is normalized over its
    height and width, ``y = (x - mean) / sqrt(var + eps)`` (biased variance), then scaled and
    shifted per channel when ``affine=True``.

    PyTorch's defaults: ``affine=False`` (no parameters: a PyTorch state dict of one has no
    entries) and ``track_running_stats=False``, so training and eval mode compute the same.
    ``track_running_stats=True`` is refused (``HyperparameterError``): shapegrad's instance
    norm keeps no running statistics. ``momentum`` is taken, as PyTorch's signature has it, and
    unused (it only moves running statistics). Built from ``layer_norm`` over ``H·W``.

    Args:
        num_features: ``C``, only when it is not a ``Literal`` type argument.
        eps: added to the variance.
        momentum: unused without running statistics; checked as ``BatchNorm2d``'s.
        affine: whether to learn a per-channel ``weight`` (ones) and ``bias`` (zeros).
        track_running_stats: ``False`` only.
        dtype: the parameters' dtype.

    An input whose channels are not ``C``, whose rank is not 3 or 4, or with a single spatial
    value (as PyTorch refuses one) raises ``ShapeError``.

    Examples:
        >>> import shapegrad as sg
        >>> norm = sg.nn.InstanceNorm2d(3)
        >>> y = norm(sg.randn(2, 3, 4, 4))
        >>> [round(abs(v), 6) for v in y.mean((2, 3)).numpy()[0].tolist()]
        [0.0, 0.0, 0.0]
        >>> norm.num_parameters()
        0
    """

    def __init__(
        self,
        num_features: C | int | None = None,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        *,
        dtype: str = "float32",
    ) -> None:
        self.num_features = self._size_arg(0, num_features, "num_features")
        if track_running_stats:
            raise HyperparameterError(
                "InstanceNorm2d expects track_running_stats=False (PyTorch's default; shapegrad's instance norm "
                "keeps no running statistics), found track_running_stats=True; use BatchNorm2d for running "
                "statistics, or GroupNorm(num_features, num_features) for a per-instance norm with an affine"
            )
        self.eps, self.momentum = eps, _checked_momentum("InstanceNorm2d", momentum)
        self.affine = affine
        self.weight: Tensor[NoTape, C] | None = (
            _state(parameter(ones(self.num_features, dtype=dtype))) if affine else None
        )
        self.bias: Tensor[NoTape, C] | None = (
            _state(parameter(zeros(self.num_features, dtype=dtype))) if affine else None
        )

    @overload
    def __call__(self: InstanceNorm2d[Open], x: Tensor[T, B, K, H, W_]) -> Tensor[T, B, K, H, W_]: ...
    @overload
    def __call__(self: InstanceNorm2d[Open], x: Tensor[T, K, H, W_]) -> Tensor[T, K, H, W_]: ...
    @overload
    def __call__(self, x: Tensor[T, B, C, H, W_]) -> Tensor[T, B, C, H, W_]: ...
    @overload
    def __call__(self, x: Tensor[T, C, H, W_]) -> Tensor[T, C, H, W_]: ...
    def __call__(self, x: Any) -> Any:
        if x.ndim not in (3, 4) or x.shape[-3] != self.num_features:
            raise ShapeError(
                f"InstanceNorm2d({self.num_features}) expects input (batch, {self.num_features}, height, width) or "
                f"({self.num_features}, height, width), found shape {x.shape}"
            )
        h, w = x.shape[-2], x.shape[-1]
        if h * w == 1:
            raise ShapeError(f"InstanceNorm2d expects more than one spatial value per channel, found shape {x.shape}")
        rows: AnyTensor = x.reshape(*x.shape[:-2], h * w)
        y: AnyTensor = layer_norm(rows, None, None, self.eps).reshape(*x.shape)
        return _affine(y, self.weight, self.bias, self.num_features, 2)

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch ``nn.InstanceNorm2d`` with another ``eps`` or ``affine``, or
        ``track_running_stats=True`` (running statistics, which this norm does not keep)."""
        expect_kind(torch_module, path, self, "InstanceNorm2d")
        same(torch_module, path, "eps", self.eps)
        same(torch_module, path, "affine", self.affine)
        supported(
            torch_module,
            path,
            "track_running_stats",
            False,
            "PyTorch then normalizes by running statistics in eval mode, shapegrad's instance norm always "
            "by each sample's",
        )
