"""``concat``, ``stack``, ``split`` and ``chunk`` at the axes models use (issue #23 §2, found
porting the PyTorch translation tutorial's attention decoder: ``concat((embedded, context),
axis=2)``): axes 0, 1, 2, -2 and -1 keep every dim they do not join or split, a tuple pair
joins its sizes as ``Sum``; a list with an open-rank tensor in it (a padded up-sampling
beside a U-Net skip) gives an open rank, as an operator does; another axis gives an open rank
too, never ``Any``."""

from typing import Literal as L, assert_type

import shapegrad as sg
from shapegrad import NoTape, Open, Sum, Tensor


class Batch(sg.Dim): ...


def decoder_input(
    embedded: Tensor[NoTape, Batch, L[1], L[32]], context: Tensor[NoTape, Batch, L[1], L[32]]
) -> Tensor[NoTape, Batch, L[1], Sum[L[32], L[32]]]:
    assert_type(sg.concat([embedded, context], axis=2), Tensor[NoTape, Batch, L[1], Open])
    assert_type(sg.concat([embedded, context], axis=-2), Tensor[NoTape, Batch, Open, L[32]])
    return sg.concat((embedded, context), axis=2)


def stacked(rows: Tensor[NoTape, Batch, L[32]], cols: Tensor[NoTape, Batch, L[4], L[8]]) -> None:
    assert_type(sg.stack([rows, rows], axis=2), Tensor[NoTape, Batch, L[32], Open])
    assert_type(sg.stack((rows, rows), axis=-2), Tensor[NoTape, Batch, L[2], L[32]])
    assert_type(sg.stack((cols, cols), axis=2), Tensor[NoTape, Batch, L[4], L[2], L[8]])


def pieces(qkv: Tensor[NoTape, Batch, L[16], L[96]], img: Tensor[NoTape, Batch, L[8], L[16], L[16]]) -> None:
    q, k, v = qkv.split(32, axis=2)
    assert_type(q, Tensor[NoTape, Batch, L[16], Open])
    assert_type(k + v, Tensor[NoTape, Batch, L[16], Open])
    top, _ = img.chunk(2, axis=-2)
    assert_type(top, Tensor[NoTape, Batch, L[8], Open, L[16]])
    assert_type(img.chunk(2, axis=3)[0], Tensor[NoTape, *tuple[Open, ...]])  # an axis not typed: open


def skip_join(skip: Tensor[NoTape, Batch, L[8], L[16], L[16]], up: Tensor[NoTape, *tuple[Open, ...]]) -> None:
    joined: Tensor[NoTape, *tuple[Open, ...]] = sg.concat([skip, up], axis=1)
    pair: Tensor[NoTape, *tuple[Open, ...]] = sg.concat((up, skip), axis=1)
    print(joined.shape, pair.shape)


def main() -> None:
    x: Tensor[NoTape, Batch, L[1], L[32]] = sg.randn(Batch(2), 1, 32)
    assert decoder_input(x, x).shape == (2, 1, 64)
    stacked(sg.randn(Batch(2), 32), sg.randn(Batch(2), 4, 8))
    pieces(sg.randn(Batch(2), 16, 96), sg.randn(Batch(2), 8, 16, 16))
    up: Tensor[NoTape, Batch, L[4], L[16], L[16]] = sg.randn(Batch(2), 4, 16, 16)
    skip_join(sg.randn(Batch(2), 8, 16, 16), up.reshape(2, 4, 16, -1))


if __name__ == "__main__":
    main()
