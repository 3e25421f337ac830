"""The project's exceptions: each says what was expected and what was found, by name."""

from __future__ import annotations

from collections.abc import Sequence

from . import _hooks

__all__ = [
    "AnnotationError",
    "BackendError",
    "CheckpointError",
    "CompileError",
    "CompileWarning",
    "DTypeError",
    "GradientsMismatchError",
    "HyperparameterError",
    "NumericalAnomalyError",
    "ParameterError",
    "ShapeError",
    "ShapegradError",
    "TapeError",
    "UnusedParameterError",
]


class ShapegradError(Exception):
    """Base class of every error shapegrad raises on purpose."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        recorder = _hooks.recorder
        if recorder is not None:  # sg.compile records a step: an error the step may catch (see _Recorder.raising)
            recorder.raising(self)


class ShapeError(ShapegradError, ValueError):
    """Operand shapes do not fit the operation; the message names both shapes."""


class DTypeError(ShapegradError, TypeError):
    """A tensor's dtype does not suit the operation (say integer data into ``exp``)."""


class TapeError(ShapegradError, RuntimeError):
    """A tracing mistake: backward on an untraced or non-scalar tensor, a tape used after
    it ended, a tape used from another thread, a gradient asked for a leaf never reached."""


class BackendError(ShapegradError, RuntimeError):
    """An unknown backend name, a backend whose library or device is missing, or tensors
    of two backends mixed in one operation."""


class UnusedParameterError(ShapegradError, RuntimeError):
    """Trainable parameters received no gradient; ``paths`` lists their dotted names."""

    def __init__(self, paths: Sequence[str], message: str | None = None) -> None:
        self.paths: tuple[str, ...] = tuple(paths)
        names = ", ".join(repr(p) for p in self.paths)
        super().__init__(
            message
            or f"{len(self.paths)} trainable parameter(s) received no gradient: {names}. "
            "Every trainable parameter is expected to take part in the loss. Freeze them "
            "(module.freeze()), or build the optimizer with unused='warn' or 'ignore'. "
            "No parameter was changed."
        )


class ParameterError(ShapegradError, TypeError):
    """A parameter attribute of a module replaced by a tensor that is not a parameter
    (which would silently stop training it); PyTorch raises a ``TypeError`` here too."""


class KeywordError(ShapegradError, TypeError):
    """A keyword argument in PyTorch's spelling that shapegrad spells otherwise (``dim=`` for
    ``axis=``, ``keepdim=`` for ``keepdims=``); the message names ours. A ``TypeError``, as
    Python's own error for an unknown keyword."""


class HyperparameterError(ShapegradError, ValueError):
    """A setting out of its range: an optimizer's (``lr < 0``, ``betas`` outside [0, 1),
    ``eps <= 0``, ...), a batch norm's ``momentum``, a loss's ``reduction``, an optimizer
    with no parameter to train, or a sampling request ``multinomial`` cannot meet (its
    ``num_samples``, weights without a distribution)."""


class GradientsMismatchError(ShapegradError, RuntimeError):
    """Gradients recorded for one model were given to an optimizer of another."""


class CheckpointError(ShapegradError, ValueError):
    """A checkpoint file is truncated, corrupted, or does not match the model."""


class NumericalAnomalyError(ShapegradError, FloatingPointError):
    """Anomaly detection found NaN or Inf in an op's forward or backward result."""


class AnnotationError(ShapegradError, TypeError):
    """A checked function's annotations cannot be evaluated (a name they use is not defined
    where the function was defined), or do not describe what a check can read."""


class CompileError(ShapegradError, RuntimeError):
    """``sg.compile`` cannot record or replay a step as asked (a traced argument,
    ``sg.distributed`` inside a compiled step, a replay that diverged)."""


class CompileWarning(UserWarning):
    """A compiled step runs eagerly from now on; the message says why (a value read by its
    Python code, or array math the recording cannot follow)."""
