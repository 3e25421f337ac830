# pyright: reportPrivateUsage=true
"""Optimizers bound to one model's ``Gradients[M]``, gradient clipping and schedules."""

from typing import TYPE_CHECKING, NoReturn

from .._torch_names import missing_module_attribute
from . import schedules
from ._base import Optimizer, clip_grad_norm
from ._groups import Group
from ._rules import Adadelta, Adagrad, Adam, AdamW, RMSprop, Sgd

SGD = Sgd  # PyTorch's spelling, kept as an alias; Sgd is the documented one

__all__ = [
    "Adadelta",
    "Adagrad",
    "Adam",
    "AdamW",
    "Group",
    "Optimizer",
    "RMSprop",
    "Sgd",
    "clip_grad_norm",
    "schedules",
]


if not TYPE_CHECKING:  # hidden from the checkers: PyTorch's names stay unknown attributes to them

    def __getattr__(name: str) -> NoReturn:
        """PyTorch's names (``lr_scheduler.CosineAnnealingLR``): an ``AttributeError`` naming shapegrad's spelling;
        called only for a name the module lacks."""
        missing_module_attribute(__name__, name)
