"""Untraced and traced tensors meeting in one op, written the way PyTorch code is (issue #23,
section 5): ``Tensor`` is covariant in its tape and ``NoTape`` is the bottom, so an untraced
tensor goes wherever a traced one (or a tape variable ``T``) is asked for, and an op's result
carries the traced tape."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor
from shapegrad.nn import Linear, Module

T = TypeVar("T")


class Batch(sg.Dim): ...


class Steps(sg.Dim): ...


class CharRNN(Module):
    """A hand-written RNN: the zero state is untraced, each step makes it traced."""

    def __init__(self) -> None:
        self.ih = Linear[L[4], L[8]]()
        self.hh = Linear[L[8], L[8]]()
        self.head = Linear[L[8], L[5]]()

    def cell(self, x: Tensor[T, Batch, L[4]], h: Tensor[T, Batch, L[8]]) -> Tensor[T, Batch, L[8]]:
        return sg.tanh(self.ih(x) + self.hh(h))

    def init_hidden(self, batch: Batch) -> Tensor[NoTape, Batch, L[8]]:
        return sg.zeros(batch, 8)

    def __call__(self, xs: Tensor[T, Batch, Steps, L[4]]) -> Tensor[T, Batch, L[5]]:
        batch, steps = xs.shape[0], xs.shape[1]
        h = self.init_hidden(Batch(batch))
        for t in range(steps):
            h = self.cell(xs[:, t], h)  # untraced state, input of tape T: one T
        return self.head(h)


class Fusion(Module):
    """A two-input model: image features and text features on one tape."""

    def __init__(self) -> None:
        self.image = Linear[L[6], L[4]]()
        self.text = Linear[L[3], L[4]]()

    def __call__(self, image: Tensor[T, Batch, L[6]], text: Tensor[T, Batch, L[3]]) -> Tensor[T, Batch, L[4]]:
        return self.image(image) * self.text(text)


def block(x: Tensor[T, Batch, L[4]], w: Tensor[NoTape, L[4]], b: Tensor[NoTape, Batch, L[4]]) -> Tensor[T, Batch, L[4]]:
    """Generic over the tape: untraced operands on either side keep the caller's tape."""
    y = sg.sub(w, x)  # untraced first, then the caller's T
    z = b * x + sg.where(x > 0, b, x)
    return sg.mul(y, z)


def main(xs: Tensor[NoTape, Batch, Steps, L[4]], labels: Tensor[NoTape, Batch]) -> None:
    rnn = CharRNN()
    grads = rnn.alloc_grads()
    logits = rnn(xs.trace(grads))
    loss = sg.losses.cross_entropy(logits, labels)
    trained: sg.Gradients[CharRNN] = loss.backward()

    # The loop written at the top level: the variable holds either tape, and a layer or a
    # function form gives the traced one back.
    h = rnn.init_hidden(Batch(2))
    for t in range(3):
        h = rnn.cell(xs[:, t].trace(grads), h)
    final: Tensor[OwnedTape[CharRNN], Batch, L[5]] = rnn.head(h)
    again: sg.Gradients[CharRNN] = sg.sum(final).backward()

    # One traced input, one untraced.
    fusion = Fusion()
    fused = fusion.alloc_grads()
    image: Tensor[NoTape, Batch, L[6]] = sg.zeros(Batch(2), 6)
    text: Tensor[NoTape, Batch, L[3]] = sg.zeros(Batch(2), 3)
    joint: Tensor[OwnedTape[Fusion], Batch, L[4]] = fusion(image.trace(fused), text)
    from_fusion: sg.Gradients[Fusion] = joint.sum().backward()

    # concat and stack of a parameter (untraced) and a traced tensor, of traced and untraced.
    weight: Tensor[NoTape, L[4], L[8]] = rnn.ih.weight
    traced_rows = weight.trace(grads)
    rows: Tensor[OwnedTape[CharRNN], sg.Open, L[8]] = sg.concat([weight, traced_rows], axis=0)
    pair: Tensor[OwnedTape[CharRNN], sg.Open, L[4], L[8]] = sg.stack([traced_rows, weight])
    plain: Tensor[NoTape, sg.Open, L[8]] = sg.concat([weight, weight])

    # Untraced with traced, both ways, operators and function forms.
    state: Tensor[NoTape, Batch, L[8]] = rnn.init_hidden(Batch(2))
    step = rnn.hh(state.trace(grads))
    left: Tensor[OwnedTape[CharRNN], Batch, L[8]] = state + step
    right: Tensor[OwnedTape[CharRNN], Batch, L[8]] = sg.add(step, state)
    print(trained, again, from_fusion, rows, pair, plain, left, right, block)
