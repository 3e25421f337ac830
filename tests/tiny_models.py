"""Small models the tests share: each one's weights come from a fixed generator, so a test
reads the same numbers every run."""

from __future__ import annotations

from typing import Any

import shapegrad as sg
from shapegrad import nn


class Line(nn.Module, checked=False):
    """``Linear(2, 1)``: the smallest model with a weight and a bias."""

    def __init__(self) -> None:
        self.fc = nn.Linear(2, 1, generator=sg.Generator(0))

    def __call__(self, x: Any) -> Any:
        return self.fc(x)
