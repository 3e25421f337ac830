"""A Sequential of more than 16 layers that change their size: typed chains stop there, and
the message says to nest. (Layers that all keep their size make a typed chain of any length:
typecheck/pass/sequential_of_a_list.py.)"""

from typing import Literal as L

from shapegrad.nn import Linear, ReLU, Sequential


def main() -> None:
    down, up = Linear[L[8], L[4]], Linear[L[4], L[8]]
    Sequential(  # E: Sequential is typed for chains of up to 16 layers: nest them
        down(),
        ReLU(),
        up(),
        ReLU(),
        down(),
        ReLU(),
        up(),
        ReLU(),
        down(),
        ReLU(),
        up(),
        ReLU(),
        down(),
        ReLU(),
        up(),
        ReLU(),
        down(),
    )
