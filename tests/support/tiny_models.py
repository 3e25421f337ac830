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


class Encoder(nn.Module, checked=False):
    """``Linear(3, 4)`` then ``tanh``: the first of two chained models."""

    def __init__(self) -> None:
        self.fc = nn.Linear(3, 4, generator=sg.Generator(1))

    def __call__(self, x: Any) -> Any:
        return self.fc(x).tanh()


class Decoder(nn.Module, checked=False):
    """``Linear(4, 2)``: the second of two chained models, after :class:`Encoder`."""

    def __init__(self) -> None:
        self.fc = nn.Linear(4, 2, generator=sg.Generator(2))

    def __call__(self, x: Any) -> Any:
        return self.fc(x)
