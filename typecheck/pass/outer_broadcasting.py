"""Broadcasting the way embeddings, masks and scalings are built (issue #23 §3): outer
products of a column and a row, or of a column and a vector."""

from typing import Literal as L, assert_type

import shapegrad as sg
from shapegrad import NoTape, Tensor


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


class Half(sg.Dim): ...


def sinusoidal(t: Tensor[NoTape, Batch], freqs: Tensor[NoTape, Half]) -> Tensor[NoTape, Batch, L[2], Half]:
    angles = t[:, None] * freqs[None]  # (B, 1) * (1, H)
    assert_type(angles, Tensor[NoTape, Batch, Half])
    also = t[:, None] * freqs  # (B, 1) * (H,)
    assert_type(also, Tensor[NoTape, Batch, Half])
    return sg.stack((sg.sin(angles), sg.cos(angles)), axis=1)


def causal_mask(rows: Tensor[NoTape, Seq]) -> Tensor[NoTape, Seq, Seq]:
    return rows[None] <= rows[:, None]  # (1, S) <= (S, 1)


def normalised_adjacency(d: Tensor[NoTape, Seq], a: Tensor[NoTape, Seq, Seq]) -> Tensor[NoTape, Seq, Seq]:
    return d[:, None] * a * d[None, :]  # D^-1/2 A D^-1/2


def batched_outer(q: Tensor[NoTape, Batch, Seq, L[1]], k: Tensor[NoTape, Batch, L[1], Seq]) -> None:
    scores = q - k  # (B, S, 1) - (B, 1, S)
    assert_type(scores, Tensor[NoTape, Batch, Seq, Seq])
    fn = sg.mul(k, q)
    assert_type(fn, Tensor[NoTape, Batch, Seq, Seq])
    print(scores, fn)


def main() -> None:
    t, freqs = sg.arange(Batch(4), dtype="float32"), sg.arange(Half(3), dtype="float32")
    print(sinusoidal(t, freqs).shape, causal_mask(sg.arange(Seq(5))).shape)
    d = sg.ones(Seq(5))
    print(normalised_adjacency(d, sg.ones(Seq(5), Seq(5))).shape)
    batched_outer(sg.ones(Batch(2), Seq(3), 1), sg.ones(Batch(2), 1, Seq(3)))


if __name__ == "__main__":
    main()
