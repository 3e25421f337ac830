"""Activations and dropout as modules (each maps N features to N)."""

from __future__ import annotations

import numbers
from typing import Any, Literal

from typing_extensions import TypeVar

from .._errors import DTypeError, HyperparameterError
from .._tensor import Tensor, wrap
from .._typevars import S, T
from ..ops import activations as act
from ..ops.creation import Generator
from ._module import Layer
from ._torch_config import TorchTwin, expect_kind, same, supported

__all__ = [
    "ELU",
    "GELU",
    "SELU",
    "Dropout",
    "Hardtanh",
    "Identity",
    "LeakyReLU",
    "LogSigmoid",
    "Mish",
    "ReLU",
    "SiLU",
    "Sigmoid",
    "Softplus",
    "Tanh",
]

# A default, so that a layer built without a type argument (self.act = ReLU()) is ReLU[Any],
# not ReLU[Unknown] in strict mode (PEP 696).
N = TypeVar("N", default=Any)


class ReLU(TorchTwin, Layer[N, N, N], checked=False):
    """``max(x, 0)``."""

    def __call__(self, x: Tensor[T, *S]) -> Tensor[T, *S]:
        return act.relu(x)


class Identity(TorchTwin, Layer[N, N, N], checked=False):
    """Its input, unchanged (the same tensor, tape and all): PyTorch's ``nn.Identity``, for
    an architecture that picks a layer by configuration and a model whose head is removed.
    Like PyTorch's, it takes any arguments and uses none. ``from_torch`` matches it with
    ``nn.Identity`` (or a ``Dropout`` of 0, which is the identity too).

    Examples:
        >>> import shapegrad as sg
        >>> width_in, width_out = 64, 64
        >>> proj = sg.nn.Linear(width_in, width_out) if width_in != width_out else sg.nn.Identity()
        >>> x = sg.ones(2, 64)
        >>> proj(x) is x
        True
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        del args, kwargs  # PyTorch's nn.Identity(54, unused_argument=0.1) is the identity too

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch module other than ``nn.Identity`` or a ``Dropout`` of 0."""
        if type(torch_module).__name__ == "Dropout" and getattr(torch_module, "p", None) == 0.0:
            return
        super().torch_check(torch_module, path)

    def __call__(self, x: Tensor[T, *S]) -> Tensor[T, *S]:
        return x


class GELU(TorchTwin, Layer[N, N, N], checked=False):
    """GELU: the tanh approximation by default, exact with ``approximate="none"`` (PyTorch's
    ``nn.GELU()`` default)."""

    _torch_settings = ("approximate",)

    def __init__(self, approximate: Literal["tanh", "none"] = "tanh") -> None:
        self.approximate: Literal["tanh", "none"] = approximate

    def __call__(self, x: Tensor[T, *S]) -> Tensor[T, *S]:
        return act.gelu(x, self.approximate)


class Tanh(TorchTwin, Layer[N, N, N], checked=False):
    """Hyperbolic tangent."""

    def __call__(self, x: Tensor[T, *S]) -> Tensor[T, *S]:
        return act.tanh(x)


class Sigmoid(TorchTwin, Layer[N, N, N], checked=False):
    """Logistic sigmoid."""

    def __call__(self, x: Tensor[T, *S]) -> Tensor[T, *S]:
        return act.sigmoid(x)


class Softplus(TorchTwin, Layer[N, N, N], checked=False):
    """``log(1 + e^x)``."""

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse another kind, or PyTorch's ``beta`` other than 1 (shapegrad's has none)."""
        super().torch_check(torch_module, path)
        supported(torch_module, path, "beta", 1.0, "it computes log(1 + e^(beta·x)) / beta; scale x yourself")

    def __call__(self, x: Tensor[T, *S]) -> Tensor[T, *S]:
        return act.softplus(x)


class SiLU(TorchTwin, Layer[N, N, N], checked=False):
    """``x · σ(x)`` (swish), as ``nn.SiLU``."""

    def __call__(self, x: Tensor[T, *S]) -> Tensor[T, *S]:
        return act.silu(x)


class Mish(TorchTwin, Layer[N, N, N], checked=False):
    """``x · tanh(softplus(x))``, as ``nn.Mish``."""

    def __call__(self, x: Tensor[T, *S]) -> Tensor[T, *S]:
        return act.mish(x)


class SELU(TorchTwin, Layer[N, N, N], checked=False):
    """Self-normalising ELU, as ``nn.SELU``."""

    def __call__(self, x: Tensor[T, *S]) -> Tensor[T, *S]:
        return act.selu(x)


class LogSigmoid(TorchTwin, Layer[N, N, N], checked=False):
    """``log σ(x)``, computed stably, as ``nn.LogSigmoid``."""

    def __call__(self, x: Tensor[T, *S]) -> Tensor[T, *S]:
        return act.log_sigmoid(x)


class ELU(TorchTwin, Layer[N, N, N], checked=False):
    """``x`` where positive, ``alpha (e^x - 1)`` elsewhere, as ``nn.ELU``."""

    _torch_settings = ("alpha",)

    def __init__(self, alpha: float = 1.0) -> None:
        self.alpha = alpha

    def __call__(self, x: Tensor[T, *S]) -> Tensor[T, *S]:
        return act.elu(x, self.alpha)


class Hardtanh(TorchTwin, Layer[N, N, N], checked=False):
    """``x`` clipped to ``[min_val, max_val]``, as ``nn.Hardtanh``."""

    _torch_settings = ("min_val", "max_val")

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0) -> None:
        self.min_val, self.max_val = min_val, max_val

    def __call__(self, x: Tensor[T, *S]) -> Tensor[T, *S]:
        return act.hardtanh(x, self.min_val, self.max_val)


class LeakyReLU(TorchTwin, Layer[N, N, N], checked=False):
    """``x`` where positive, ``negative_slope · x`` elsewhere."""

    _torch_settings = ("negative_slope",)

    def __init__(self, negative_slope: float = 0.01) -> None:
        self.negative_slope = negative_slope

    def __call__(self, x: Tensor[T, *S]) -> Tensor[T, *S]:
        return act.leaky_relu(x, self.negative_slope)


def checked_dropout(layer: str, setting: str, p: object) -> float:
    """A dropout probability in PyTorch's range ``[0, 1]`` as a float; else
    ``HyperparameterError`` naming the layer, the setting and the value."""
    if not isinstance(p, bool) and isinstance(p, numbers.Real) and 0.0 <= float(p) <= 1.0:
        return float(p)
    raise HyperparameterError(
        f"{layer} expects {setting} to be a probability in [0, 1] (as PyTorch), found {p!r} ({type(p).__name__})"
    )


class Dropout(Layer[N, N, N], checked=False):
    """In training mode, zero each value with probability ``p`` and scale the rest by
    ``1/(1-p)``; in eval mode, the identity. The mask comes from ``generator`` (seedable).

    ``p`` is in PyTorch's range ``[0, 1]``: ``p=1`` zeroes every value in training mode
    (``x · 0``, as PyTorch's: an inf or a NaN gives NaN; the gradient is 0), with no
    division by ``1 - p``. Another ``p`` raises ``HyperparameterError``.

    Examples:
        >>> import shapegrad as sg
        >>> sg.nn.Dropout(1.0)(sg.ones(3)).numpy().tolist()
        [0.0, 0.0, 0.0]
    """

    def __init__(self, p: float = 0.5, *, generator: Generator | None = None) -> None:
        self.p = checked_dropout("Dropout", "p", p)
        self._generator = generator

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch module other than ``nn.Dropout`` (``Dropout2d`` drops whole
        channels), or another ``p``."""
        if self.p == 0.0 and type(torch_module).__name__ == "Identity":
            return  # both the identity (a port often drops a dropout of 0)
        expect_kind(torch_module, path, self, "Dropout")
        same(torch_module, path, "p", self.p)

    def __call__(self, x: Tensor[T, *S]) -> Tensor[T, *S]:
        if not self.training or self.p == 0.0:
            return x
        from ..ops.creation import default_generator

        backend = x._backend
        name = x.backend_dtype_name()
        if not name.startswith("float"):  # draws in an integer dtype would all be 0: every value dropped
            raise DTypeError(
                f"Dropout expects a floating-point tensor, found dtype {name} with shape {x.shape}; "
                "convert it with .astype('float32')"
            )
        gen = self._generator or default_generator(backend)
        # Drawn and built in x's dtype: no float64 draws or temporaries.
        draws = gen.uniform(x.shape, dtype=x.backend_dtype_name())
        # p = 1 keeps nothing: a scale of 0 (1/(1-p) would divide by zero), so x · 0 as PyTorch
        scale = 0.0 if self.p == 1.0 else 1.0 / (1.0 - self.p)
        mask = backend.xp.astype(draws >= self.p, x.dtype) * scale
        kept: Tensor[T, *S] = x * wrap(mask, backend)
        return kept
