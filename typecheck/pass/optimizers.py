"""Every optimizer is bound to its model type."""

from typing import Literal as L

import shapegrad as sg
from shapegrad.nn import Linear
from shapegrad.optim import Adam, AdamW, RMSprop, Sgd, schedules


def main() -> None:
    model = Linear[L[4], L[2]]()
    grads: sg.Gradients[Linear[L[4], L[2]]] = model.alloc_grads()
    opts = [
        Sgd(model, lr=0.1, momentum=0.9, nesterov=True),
        Adam(model, lr=schedules.warmup(schedules.cosine(1e-3, 100), 10)),
        AdamW(model, weight_decay=0.01),
        RMSprop(model, centered=True, momentum=0.5),
    ]
    for opt in opts:
        opt.update(model, grads) if False else None
    print(grads)
