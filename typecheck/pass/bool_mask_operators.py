"""``~mask``, ``a & b``, ``a | b`` and ``a ^ b`` on masks, as in PyTorch: untraced boolean
tensors that broadcast as the comparisons that make them do (a causal (S, S) mask with a
(B, S) padding mask, a Python bool on either side)."""

from typing import Literal as L

from typing_extensions import assert_type

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def main(
    scores: Tensor[OwnedTape[None], Batch, Seq, Seq],
    x: Tensor[OwnedTape[None], Batch, Seq],
    causal: Tensor[NoTape, Seq, Seq],
    allowed: Tensor[NoTape, Batch, Seq, Seq],
    pad: Tensor[NoTape, Batch, L[1], Seq],
) -> None:
    assert_type(~causal, Tensor[NoTape, Seq, Seq])
    assert_type(causal & causal, Tensor[NoTape, Seq, Seq])
    assert_type(causal | True, Tensor[NoTape, Seq, Seq])
    assert_type(True & causal, Tensor[NoTape, Seq, Seq])
    assert_type(False | causal, Tensor[NoTape, Seq, Seq])
    assert_type(causal ^ False, Tensor[NoTape, Seq, Seq])
    assert_type(True ^ causal, Tensor[NoTape, Seq, Seq])
    both = allowed & causal  # each item's mask with the causal one
    keep: Tensor[NoTape, Batch, Seq, Seq] = pad & both  # and the padding
    assert_type(causal | allowed, Tensor[NoTape, Batch, Seq, Seq])
    assert_type(both ^ pad, Tensor[NoTape, Batch, Seq, Seq])
    assert_type(~(x > 0.0), Tensor[NoTape, Batch, Seq])  # a traced tensor's mask: untraced
    assert_type((x > 0.0) ^ (x < 1.0), Tensor[NoTape, Batch, Seq])
    assert_type(causal.bitwise_and(causal), Tensor[NoTape, Seq, Seq])
    assert_type(sg.bitwise_or(causal, allowed), Tensor[NoTape, Batch, Seq, Seq])
    assert_type(sg.bitwise_not(causal), Tensor[NoTape, Seq, Seq])
    masked: Tensor[OwnedTape[None], Batch, Seq, Seq] = scores.masked_fill(~keep, float("-inf"))
    print(masked)
