"""PyTorch's ``w.transpose(0, 1)`` swaps a matrix's axes; NumPy's, and so shapegrad's, is the
identity permutation. On a square matrix the type does not change, so nothing else would see a
port that kept it: the overload is deprecated, with our message."""

from typing import Literal as L

from shapegrad import NoTape, Tensor


def project(x: Tensor[NoTape, L[4], L[8]], w: Tensor[NoTape, L[8], L[8]]) -> None:
    print(x @ w.transpose(0, 1))  # E: identity permutation
    print(x @ w.T)  # the fix
    print(x @ w.swapaxes(0, 1))  # the fix
    print(x.transpose(1, 0))  # a real swap: accepted
