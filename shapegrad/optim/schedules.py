# pyright: reportPrivateUsage=true
"""Learning-rate schedules: callables from the step number (0-based) to a rate.

Pass one as an optimizer's ``lr``: ``sg.optim.Adam(model, lr=cosine(1e-3, total_steps=1000))``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["constant", "cosine", "step", "warmup"]

Schedule = Callable[[int], float]


def constant(lr: float) -> Schedule:
    """The same rate at every step."""
    return lambda _: lr


def step(lr: float, step_size: int, gamma: float = 0.1) -> Schedule:
    """``lr · gamma^(step // step_size)``, as ``torch.optim.lr_scheduler.StepLR``."""
    return lambda t: lr * gamma ** (t // step_size)


def cosine(lr: float, total_steps: int, min_lr: float = 0.0) -> Schedule:
    """Cosine decay from ``lr`` to ``min_lr`` over ``total_steps``, then ``min_lr``: as
    ``CosineAnnealingLR(T_max=total_steps, eta_min=min_lr)`` for the first ``total_steps``
    steps. Past them PyTorch's rate rises again (its cosine is periodic, back to ``lr`` at
    ``2 · total_steps``); this one stays at ``min_lr``, as a decay to the end of training is
    meant (for restarts, ``CosineAnnealingWarmRestarts``, write the schedule as a function of
    ``t % period``)."""

    def schedule(t: int) -> float:
        progress = min(t, total_steps) / total_steps
        return min_lr + (lr - min_lr) * 0.5 * (1 + math.cos(math.pi * progress))

    return schedule


def warmup(schedule: Schedule | float, warmup_steps: int) -> Schedule:
    """Linear warm-up from ``rate/warmup_steps`` to the rate over ``warmup_steps`` steps,
    then ``schedule`` (a schedule or a constant rate) counted from the end of warm-up."""
    inner = constant(schedule) if isinstance(schedule, (int, float)) else schedule

    def warmed(t: int) -> float:
        if t < warmup_steps:
            return inner(0) * (t + 1) / warmup_steps
        return inner(t - warmup_steps)

    return warmed
