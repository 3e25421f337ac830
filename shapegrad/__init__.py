"""shapegrad: tensors whose type carries their shape and their tape.

Pyright finds shape and tape mistakes before the program runs; ``sg.checked`` functions and
module calls check the same annotations at run time; ops run on NumPy, CuPy or any backend
registered under the ``shapegrad.backends`` entry-point group.

Examples:
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

from typing import TYPE_CHECKING, NoReturn

from . import _function_ops, data, losses, nn, optim
from ._anomaly import detect_anomaly
from ._autodiff import NoTape, OwnedTape
from ._backend import Backend, active_backend, available_backends, backend_info, get_backend, set_backend, use_backend
from ._checking import cast, checked, checks_enabled
from ._compile import CompiledStep, compile
from ._dims import Dim, Half, LiteralSize, Open, Prod, Sum, Twice
from ._errors import (
    AnnotationError,
    BackendError,
    CheckpointError,
    CompileError,
    CompileWarning,
    DTypeError,
    GradientsMismatchError,
    HyperparameterError,
    KeywordError,
    NumericalAnomalyError,
    ParameterError,
    ShapeError,
    ShapegradError,
    TapeError,
    UnusedParameterError,
)
from ._function_ops import *  # noqa: F403  (the ops, by the op table)
from ._gradients import Gradients
from ._no_grad import no_grad
from ._serialize import load, save
from ._summary import Summary, summary
from ._tensor import AnyTensor, Tensor, backward
from ._torch_names import missing_module_attribute
from .ops.creation import Generator, seed

__all__: list[str] = [
    "active_backend",
    "AnnotationError",
    "AnyTensor",
    "available_backends",
    "Backend",
    "backend_info",
    "BackendError",
    "backward",
    "cast",
    "checked",
    "CheckpointError",
    "compile",
    "CompiledStep",
    "CompileError",
    "CompileWarning",
    "checks_enabled",
    "data",
    "detect_anomaly",
    "Dim",
    "DTypeError",
    "Generator",
    "get_backend",
    "Gradients",
    "Half",
    "GradientsMismatchError",
    "HyperparameterError",
    "KeywordError",
    "load",
    "losses",
    "nn",
    "no_grad",
    "NoTape",
    "NumericalAnomalyError",
    "LiteralSize",
    "Open",
    "optim",
    "OwnedTape",
    "ParameterError",
    "Prod",
    "save",
    "seed",
    "set_backend",
    "ShapeError",
    "ShapegradError",
    "Sum",
    "summary",
    "Summary",
    "TapeError",
    "Tensor",
    "UnusedParameterError",
    "Twice",
    "use_backend",
]
# Every op that is sg.<name>: the function forms of the op table (shapegrad/_opspec.py).
__all__ += _function_ops.__all__

__version__ = "0.1.0"

if not TYPE_CHECKING:  # hidden from the checkers: sg.cat stays an unknown attribute to them

    def __getattr__(name: str) -> NoReturn:
        """``sg.cat`` and PyTorch's other module names: an ``AttributeError`` naming
        shapegrad's spelling (``sg.concat``); called only for a name the module lacks."""
        missing_module_attribute(__name__, name)
