"""Optimizers bound to one model's ``Gradients[M]``, gradient clipping and schedules."""

from . import schedules
from ._base import Optimizer, clip_grad_norm
from ._rules import Adam, AdamW, RMSprop, Sgd

SGD = Sgd  # PyTorch's spelling, kept as an alias; Sgd is the documented one

__all__ = ["Adam", "AdamW", "Optimizer", "RMSprop", "Sgd", "clip_grad_norm", "schedules"]
