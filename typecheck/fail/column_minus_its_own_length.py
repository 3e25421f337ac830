"""A value head's (N, 1) output minus (N,) returns: NumPy broadcasts it to (N, N) and the loss
is silently wrong. An outer product of a column and a vector of another length is typed; this
one is refused (a deprecated overload, our message)."""

from typing import Literal as L

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


def advantage(values: Tensor[NoTape, Batch, L[1]], returns: Tensor[NoTape, Batch]) -> None:
    print(returns - values)  # E: broadcasts to (..., N, N)
    print(values * returns)  # E: squeeze(-1) the column
    print(sg.sub(returns, values))  # E: broadcasts to
    print(returns - values.squeeze(-1))  # the fix
