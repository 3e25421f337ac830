r"""A literal size beside an int one is still checked against what it is declared as: 5 is not 3.

runtime: '4 3'"""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


@sg.checked
def initial_state(batch: int) -> Tensor[NoTape, L[4], L[3]]:
    return sg.zeros(batch, 5)  # E: "Tensor[NoTape, Open, Literal[5]]" is not assignable


def features(batch: int) -> None:
    x: Tensor[NoTape, L[4], L[3], L[8]] = sg.randn(batch, 3, 9)  # E: is not assignable
    print(x.shape)


def main() -> None:
    features(4)
    print(initial_state(4).shape)


if __name__ == "__main__":
    main()
