# pyright: reportPrivateUsage=true
"""Optimizers bound to one model's ``Gradients[M]``, gradient clipping and schedules."""

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
