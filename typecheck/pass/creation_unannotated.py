"""Creation the way PyTorch code is written (issue #23 §1): unannotated locals, scaled
initialisation, int sizes from a config. A literal size in ``sg.LiteralSize`` stays literal, a
``sg.Dim`` keeps its class, an int variable gives an ``Open`` dim that flows into later ops."""

from dataclasses import dataclass
from typing import Literal as L, assert_type

import shapegrad as sg
from shapegrad import NoTape, Open, Tensor


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


@dataclass
class Config:
    n_embd: int = 32
    block_size: int = 16


def unannotated() -> None:
    w = sg.randn(8, 3)
    assert_type(w, Tensor[NoTape, L[8], L[3]])
    pos = sg.randn(1, 1, 64) * 0.02  # a scaled initialisation keeps its sizes
    assert_type(pos, Tensor[NoTape, L[1], L[1], L[64]])
    scalar = sg.full((), 0.5)
    assert_type(scalar, Tensor[NoTape])
    eye = sg.eye(4)
    assert_type(eye, Tensor[NoTape, L[4], L[4]])
    steps = sg.arange(10)
    assert_type(steps, Tensor[NoTape, L[10]])
    tokens = sg.randint(0, 65, (Batch(4), Seq(16)))
    assert_type(tokens, Tensor[NoTape, Batch, Seq])
    ones = sg.ones((2, 3))  # a tuple, as torch.ones((2, 3))
    assert_type(ones, Tensor[NoTape, L[2], L[3]])
    print(w @ sg.randn(3, 5), pos + sg.zeros(64), scalar, eye, steps, tokens, ones)


def sizes_from_a_config(cfg: Config, t: Seq) -> None:
    h = sg.zeros(1, cfg.n_embd)  # each size by itself: the literal kept, the int Open (it flows)
    assert_type(h, Tensor[NoTape, L[1], Open])
    print(h + 1.0, h * h, sg.tanh(h))
    positions = sg.arange(0, t)  # arange of a Dim is that Dim
    assert_type(positions, Tensor[NoTape, Seq])
    mask = sg.ones(t, t)
    assert_type(mask, Tensor[NoTape, Seq, Seq])
    print(positions, mask)


def stated_sizes(cfg: Config) -> None:
    # An annotation states a size the call cannot compute (like a cast, without the call);
    # an operator on the call's result comes after, on the annotated name.
    w: Tensor[NoTape, L[783], L[10]] = sg.randn(783, 10)
    w = w * 0.01
    e: Tensor[NoTape, L[32], L[32]] = sg.eye(32)
    print(w, e, cfg)


def main() -> None:
    unannotated()
    sizes_from_a_config(Config(), Seq(8))
    stated_sizes(Config())


if __name__ == "__main__":
    main()
