"""shapegrad: tensors whose type carries their shape and their tape.

Pyright finds shape and tape mistakes before the program runs; ``sg.checked`` functions and
module calls check the same annotations at run time; ops run on NumPy, CuPy or any backend
registered under the ``shapegrad.backends`` entry-point group.

Example:
    >>> from typing import Literal as L
    >>> import shapegrad as sg
    >>> from shapegrad import Tensor, NoTape
    >>> grads = sg.Gradients()
    >>> w: Tensor[NoTape, L[3]] = sg.ones(3)
    >>> traced = w.trace(grads)
    >>> grads = (traced * 2.0).sum().backward()
    >>> grads[traced].tolist()
    [2.0, 2.0, 2.0]
"""

from __future__ import annotations

from . import data, losses, nn, optim
from ._anomaly import detect_anomaly
from ._autodiff import NoTape, OwnedTape
from ._backend import Backend, active_backend, available_backends, backend_info, get_backend, set_backend, use_backend
from ._checking import cast, checked, checks_enabled
from ._creation import (
    Generator,
    arange,
    asarray,
    from_numpy,
    full,
    full_like,
    ones,
    ones_like,
    rand,
    rand_like,
    randn,
    randn_like,
    seed,
    tensor,
    zeros,
    zeros_like,
)
from ._dims import Dim
from ._errors import (
    BackendError,
    CheckpointError,
    DTypeError,
    GradientsMismatchError,
    HyperparameterError,
    NumericalAnomalyError,
    ParameterError,
    ShapeError,
    ShapegradError,
    TapeError,
    UnusedParameterError,
)
from ._gradients import Gradients, backward
from ._serialize import load, save
from ._tensor import AnyTensor, Tensor
from .ops.elementwise import (
    abs,
    add,
    astype,
    clamp,
    div,
    exp,
    gelu,
    leaky_relu,
    log,
    maximum,
    minimum,
    mul,
    neg,
    pow,
    relu,
    sigmoid,
    softplus,
    sqrt,
    square,
    sub,
    tanh,
    where,
)
from .ops.indexing import gather, take_along_axis
from .ops.linalg import matmul
from .ops.reductions import log_softmax, logsumexp, max, mean, min, softmax, sum, var
from .ops.shape import broadcast_to, concat, expand_dims, flatten, permute, reshape, squeeze, stack, swapaxes

__all__ = [
    "data",
    "AnyTensor",
    "Backend",
    "BackendError",
    "CheckpointError",
    "DTypeError",
    "Dim",
    "Generator",
    "Gradients",
    "GradientsMismatchError",
    "NoTape",
    "NumericalAnomalyError",
    "OwnedTape",
    "ShapeError",
    "ShapegradError",
    "TapeError",
    "Tensor",
    "UnusedParameterError",
    "abs",
    "active_backend",
    "add",
    "arange",
    "astype",
    "available_backends",
    "backend_info",
    "backward",
    "broadcast_to",
    "cast",
    "checked",
    "checks_enabled",
    "clamp",
    "concat",
    "detect_anomaly",
    "div",
    "exp",
    "expand_dims",
    "flatten",
    "full",
    "full_like",
    "gather",
    "gelu",
    "get_backend",
    "leaky_relu",
    "load",
    "log",
    "log_softmax",
    "logsumexp",
    "losses",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mul",
    "neg",
    "nn",
    "ones",
    "ones_like",
    "optim",
    "permute",
    "pow",
    "rand",
    "rand_like",
    "randn",
    "randn_like",
    "relu",
    "reshape",
    "save",
    "seed",
    "set_backend",
    "sigmoid",
    "softmax",
    "softplus",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "sub",
    "sum",
    "swapaxes",
    "take_along_axis",
    "tanh",
    "tensor",
    "asarray",
    "from_numpy",
    "HyperparameterError",
    "ParameterError",
    "use_backend",
    "var",
    "where",
    "zeros",
    "zeros_like",
]

__version__ = "0.1.0"
