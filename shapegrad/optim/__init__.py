"""Optimizers bound to one model's ``Gradients[M]``, gradient clipping and schedules."""

from . import schedules
from ._base import Optimizer, clip_grad_norm
from ._rules import Adam, AdamW, RMSprop, Sgd

SGD = Sgd  # PyTorch's spelling

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "RMSprop", "Sgd", "clip_grad_norm", "schedules"]
