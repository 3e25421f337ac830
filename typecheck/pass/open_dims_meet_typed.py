"""Open dims meeting typed ones in element-wise ops and comparisons (issue #23 §2, "open dims
flow"): a convolution's open height and width added back to its input (a ResNet block with
padding 1), a list-indexed column compared with logits (nanoGPT's top-k), a batch read from
data against a named one. The result has the typed dim (at run time the open size is that
size or 1), or stays open where the typed side is a size-1 axis. Keepdims over the last two
axes (instance norm, a squeeze-excite scale) broadcasts back over ``(B, C, H, W)``, and a
function form with an untraced first operand keeps the traced operand's tape."""

from typing import Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor, nn

T = TypeVar("T")


class Batch(sg.Dim): ...


class BasicBlock(nn.Module):
    """A ResNet block written as in torchvision: 3x3 convolutions with padding 1."""

    def __init__(self) -> None:
        self.conv1 = nn.Conv2d[L[8], L[8]](3, padding=1)
        self.conv2 = nn.Conv2d[L[8], L[8]](3, padding=1)

    def __call__(self, x: Tensor[T, Batch, L[8], L[32], L[32]]) -> Tensor[T, Batch, L[8], L[32], L[32]]:
        out = self.conv2(self.conv1(x).relu())
        assert_type(out, Tensor[T, Batch, L[8], Open, Open])
        return (out + x).relu()


def squeeze_excite(x: Tensor[T, Batch, L[8], L[32], L[32]]) -> Tensor[T, Batch, L[8], L[32], L[32]]:
    scale = x.mean((-2, -1), keepdims=True).sigmoid()
    assert_type(scale, Tensor[T, Batch, L[8], L[1], L[1]])
    centred = x - x.mean((-2, -1), keepdims=True)
    return centred * scale


def open_against_keepdims(out: Tensor[NoTape, Batch, L[8], Open, Open]) -> None:
    assert_type(out - out.mean((-2, -1), keepdims=True), Tensor[NoTape, Batch, L[8], Open, Open])


def top_k_filter(logits: Tensor[NoTape, Batch, L[65]]) -> Tensor[NoTape, Batch, L[65]]:
    v, _ = logits.topk(5)
    kth = v[:, [-1]]
    assert_type(kth, Tensor[NoTape, Batch, Open])
    return logits.masked_fill(logits < kth, float("-inf"))


def from_data(scores: Tensor[NoTape, Batch, L[10]], rows: Tensor[NoTape, Open, L[10]]) -> Tensor[NoTape, Batch, L[10]]:
    return scores - rows  # a batch read from data meets the named batch


def positional(x: Tensor[T, Batch, L[16], L[32]], table: Tensor[NoTape, L[16], L[32]]) -> Tensor[T, Batch, L[16], L[32]]:
    return sg.add(table, x)  # the untraced table first: the result is x's tape, not untraced


def main() -> None:
    x: Tensor[NoTape, Batch, L[8], L[32], L[32]] = sg.randn(Batch(2), 8, 32, 32)
    assert BasicBlock()(x).shape == (2, 8, 32, 32)
    assert squeeze_excite(x).shape == (2, 8, 32, 32)
    open_against_keepdims(sg.cast(sg.randn(2, 8, 30, 30), Tensor[NoTape, Batch, L[8], Open, Open]))
    logits: Tensor[NoTape, Batch, L[65]] = sg.randn(Batch(2), 65)
    assert top_k_filter(logits).shape == (2, 65)
    scores: Tensor[NoTape, Batch, L[10]] = sg.randn(Batch(3), 10)
    assert from_data(scores, sg.cast(sg.randn(3, 10), Tensor[NoTape, Open, L[10]])).shape == (3, 10)
    grads = sg.Gradients()
    seq: Tensor[NoTape, Batch, L[16], L[32]] = sg.randn(Batch(2), 16, 32)
    table: Tensor[NoTape, L[16], L[32]] = sg.randn(16, 32)
    positional(seq.trace(grads), table).sum().backward()


if __name__ == "__main__":
    main()
