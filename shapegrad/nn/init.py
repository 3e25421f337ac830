"""Initialisation in place, under PyTorch's ``torch.nn.init`` names.

Each function overwrites ``tensor``'s values (a parameter, usually) and returns it; a
backward pass through the old values then raises, as after any in-place write. Random
ones draw from ``generator`` (the default generator of the tensor's backend when none is
given), so a seeded generator reproduces them.

Fans follow each tensor's layout: a 2-D tensor is shapegrad's ``Linear.weight``, ``(in,
out)``, so ``fan_in = shape[0]`` (a parameter of your own from ``sg.nn.parameter`` too);
the 2-D weights shapegrad keeps in PyTorch's layout, recurrent layers' ``weight_ih_l*`` and
``weight_hh_l*`` ``(gates · H, in)`` and ``Embedding.weight`` ``(V, D)``, have PyTorch's
fans, ``fan_in = shape[1]``; a tensor of 3 or more axes is a convolution's ``(out, in,
*kernel)``, as PyTorch. So ``kaiming_normal_(layer.weight)`` draws what PyTorch's draws for
the same layer, where its weight is the transpose of ours as well.

Examples:
    >>> import shapegrad as sg
    >>> layer = sg.nn.Linear(64, 32)
    >>> w = sg.nn.init.kaiming_normal_(layer.weight, nonlinearity="relu", generator=sg.Generator(0))
    >>> round(float(w.numpy().std()), 1)  # √(2 / fan_in) = √(2 / 64)
    0.2
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

from .._autodiff import note_written
from .._errors import BackendError, DTypeError, HyperparameterError, ShapeError
from .._tensor import AnyTensor, Tensor
from .._typevars import S, T
from ..ops.creation import Generator, default_generator

__all__ = [
    "calculate_gain",
    "constant_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "orthogonal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]

FanMode = Literal["fan_in", "fan_out"]


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The gain PyTorch recommends for ``nonlinearity`` (``"relu"``: √2, ``"tanh"``: 5/3,
    ``"leaky_relu"``: √(2 / (1 + slope²)) with ``param`` the slope, default 0.01,
    ``"selu"``: 3/4; ``"linear"``, ``"sigmoid"`` and the convolutions: 1)."""
    if nonlinearity in ("linear", "identity", "sigmoid", "conv1d", "conv2d", "conv3d", "conv_transpose2d"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise HyperparameterError(
        f"calculate_gain: unknown nonlinearity {nonlinearity!r}; expected one of linear, sigmoid, tanh, relu, "
        "leaky_relu, selu, conv1d, conv2d, conv3d, conv_transpose2d"
    )


def _generator(tensor: AnyTensor, generator: Generator | None, what: str) -> Generator:
    dtype = tensor.backend_dtype_name()
    if not dtype.startswith("float"):
        raise DTypeError(f"{what} expects a floating-point tensor, found dtype {dtype}")
    gen = generator or default_generator(tensor._backend)
    if gen.backend is not tensor._backend:
        raise BackendError(
            f"{what}: the generator draws {gen.backend.name!r} arrays, the tensor is on {tensor.backend!r}; "
            f"expected a generator of its backend (sg.Generator(seed, backend={tensor.backend!r}))"
        )
    return gen


def _write(tensor: Tensor[T, *S], values: Any) -> Tensor[T, *S]:
    tensor._backend.copy_into(tensor._data, values)
    note_written(tensor)  # a backward pass through the old values would now be wrong
    return tensor


def _fans(tensor: AnyTensor, what: str) -> tuple[int, int]:
    shape = tensor.shape
    if len(shape) < 2:
        raise ShapeError(f"{what} needs a fan in and out: expected a tensor of 2 or more axes, found shape {shape}")
    if len(shape) == 2:
        info = tensor._param
        if info is not None and info.out_in:
            return shape[1], shape[0]  # PyTorch's (out, in): a recurrent weight, an embedding
        return shape[0], shape[1]  # Linear's (in, out)
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive  # a convolution's (out, in, *kernel)


def normal_(
    tensor: Tensor[T, *S], mean: float = 0.0, std: float = 1.0, *, generator: Generator | None = None
) -> Tensor[T, *S]:
    """Fill ``tensor`` with draws from ``N(mean, std²)``."""
    gen = _generator(tensor, generator, "normal_")
    return _write(tensor, gen.normal(tensor.shape, tensor.backend_dtype_name()) * std + mean)


def uniform_(
    tensor: Tensor[T, *S], a: float = 0.0, b: float = 1.0, *, generator: Generator | None = None
) -> Tensor[T, *S]:
    """Fill ``tensor`` with draws from ``U(a, b)``."""
    gen = _generator(tensor, generator, "uniform_")
    return _write(tensor, gen.uniform(tensor.shape, a, b, tensor.backend_dtype_name()))


def constant_(tensor: Tensor[T, *S], val: float) -> Tensor[T, *S]:
    """Fill ``tensor`` with ``val``."""
    return _write(tensor, tensor._backend.xp.full_like(tensor._data, val))


def zeros_(tensor: Tensor[T, *S]) -> Tensor[T, *S]:
    """Fill ``tensor`` with zeros."""
    return constant_(tensor, 0)


def ones_(tensor: Tensor[T, *S]) -> Tensor[T, *S]:
    """Fill ``tensor`` with ones."""
    return constant_(tensor, 1)


def xavier_uniform_(tensor: Tensor[T, *S], gain: float = 1.0, *, generator: Generator | None = None) -> Tensor[T, *S]:
    """Glorot's uniform: ``U(-a, a)`` with ``a = gain · √(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans(tensor, "xavier_uniform_")
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator=generator)


def xavier_normal_(tensor: Tensor[T, *S], gain: float = 1.0, *, generator: Generator | None = None) -> Tensor[T, *S]:
    """Glorot's normal: ``N(0, std²)`` with ``std = gain · √(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans(tensor, "xavier_normal_")
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator=generator)


def _kaiming_std(tensor: AnyTensor, a: float, mode: str, nonlinearity: str, what: str) -> float:
    if mode not in ("fan_in", "fan_out"):
        raise HyperparameterError(f"{what}: mode must be 'fan_in' or 'fan_out', found {mode!r}")
    fan_in, fan_out = _fans(tensor, what)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan_in if mode == "fan_in" else fan_out)


def kaiming_uniform_(
    tensor: Tensor[T, *S],
    a: float = 0.0,
    mode: FanMode = "fan_in",
    nonlinearity: str = "leaky_relu",
    *,
    generator: Generator | None = None,
) -> Tensor[T, *S]:
    """He's uniform: ``U(-b, b)`` with ``b = gain · √(3 / fan)`` (``a``: the leaky ReLU's slope)."""
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_uniform_")
    return uniform_(tensor, -bound, bound, generator=generator)


def kaiming_normal_(
    tensor: Tensor[T, *S],
    a: float = 0.0,
    mode: FanMode = "fan_in",
    nonlinearity: str = "leaky_relu",
    *,
    generator: Generator | None = None,
) -> Tensor[T, *S]:
    """He's normal: ``N(0, std²)`` with ``std = gain / √fan`` (``a``: the leaky ReLU's slope)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_normal_")
    return normal_(tensor, 0.0, std, generator=generator)


def orthogonal_(tensor: Tensor[T, *S], gain: float = 1.0, *, generator: Generator | None = None) -> Tensor[T, *S]:
    """A (semi-)orthogonal matrix times ``gain``: ``tensor`` seen as ``(shape[0], rest)``
    has orthonormal rows or columns, whichever are fewer (Saxe et al., as PyTorch)."""
    shape = tensor.shape
    if len(shape) < 2:
        raise ShapeError(f"orthogonal_ expects a tensor of 2 or more axes, found shape {shape}")
    gen = _generator(tensor, generator, "orthogonal_")
    rows, cols = shape[0], math.prod(shape[1:])
    # QR on the host in float64: initialisation runs once, and the strict backend has no qr.
    draws = np.asarray(gen.backend.to_numpy(gen.normal((rows, cols), "float64")))
    flat = draws.T if rows < cols else draws
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diagonal(r))  # unique: the distribution is uniform (Haar), as PyTorch
    values = (q.T if rows < cols else q).reshape(shape) * gain
    return _write(tensor, tensor._backend.asarray(np.ascontiguousarray(values), tensor.backend_dtype_name()))
