"""A Sequential of more than 16 layers: typed chains stop there, and the message says to nest."""

from typing import Literal as L

from shapegrad.nn import Linear, ReLU, Sequential


def main() -> None:
    width = Linear[L[8], L[8]]
    Sequential(  # E: Sequential is typed for chains of up to 16 layers: nest them
        width(),
        ReLU(),
        width(),
        ReLU(),
        width(),
        ReLU(),
        width(),
        ReLU(),
        width(),
        ReLU(),
        width(),
        ReLU(),
        width(),
        ReLU(),
        width(),
        ReLU(),
        width(),
    )
