"""A wrong computed size in the op table's forms: each is a Pyrefly error at the line."""

from __future__ import annotations

from shape_extensions import assert_shape

import shapegrad as sg
from shapegrad import NoTape, Tensor


def main(x: Tensor[NoTape, [4, 8, 16]], w: Tensor[NoTape, [8, 32]]) -> None:
    x @ w  # E: `@` is not supported
    x + sg.ones(8)  # E: Cannot broadcast dimension Int[16] with dimension Int[8]
    assert_shape(x.mean(axis=1).shape, (4, 8))  # E: assert_shape((4, 16), (4, 8)) failed
    x.squeeze(1)  # E: No matching overload
    assert_shape(x.permute(0, 2, 1).shape, (4, 8, 16))  # E: assert_shape((4, 16, 8), (4, 8, 16)) failed
    x.reshape(3, -1)  # E: the sizes' product is not the tensor's size
    x.reshape(-1, -1)  # E: at most one size may be -1
    assert_shape(x[:, 1:5].shape, (4, 5, 16))  # E: assert_shape((4, 4, 16), (4, 5, 16)) failed
    sg.concat((x, w), axis=0)  # E: ranks differ
    assert_shape(sg.stack((x, x), axis=1).shape, (4, 2, 8))  # E: failed
