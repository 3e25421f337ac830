"""A GNN's gather and scatter-add, and einsum, keep the tape of their traced operand (attack 15,
F3 and F7): ``backward()`` of a loss through them is accepted (it was reported as untraced), and
``h[src]`` with a vector of indices is ``(Open, 16)``, which a typed layer takes (``h.gather(src)``
keeps ``Edges``; ``typecheck/pass/boolean_mask_index.py`` says why)."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor, nn

T = TypeVar("T")


class Nodes(sg.Dim): ...


class Edges(sg.Dim): ...


class Batch(sg.Dim): ...


class Src(sg.Dim): ...


lin = nn.Linear[L[16], L[16]]()


def message_pass(
    h: Tensor[T, Nodes, L[16]], src: Tensor[NoTape, Edges], dst: Tensor[NoTape, Edges]
) -> Tensor[T, Nodes, L[16]]:
    n, d = h.shape
    messages = lin(h[src])  # (Open, 16); lin(h.gather(src)) is (Edges, 16)
    gathered: Tensor[T, Edges, L[16]] = h[src] + h.gather(src)
    print(gathered)
    return sg.zeros(n, d).at[dst].add(messages) + h.at[dst].set(0.0)


def attend(query: Tensor[T, Batch, L[32]], keys: Tensor[NoTape, Batch, Src, L[32]]) -> Tensor[T, Batch, L[32]]:
    scores = sg.einsum("bsh,bh->bs", keys, query)  # traced when the query is
    weights = sg.cast(scores, Tensor[T, Batch, Src]).softmax(axis=-1)
    return sg.cast(sg.einsum("bs,bsh->bh", weights, keys), Tensor[T, Batch, L[32]])


def main() -> None:
    grads = lin.alloc_grads()
    table: Tensor[NoTape, Nodes, L[16]] = sg.randn(Nodes(5), 16)  # annotated: see checkers.json, Pyrefly
    h = table.trace(grads)
    src = sg.cast(sg.tensor([0, 1, 1, 4]), Tensor[NoTape, Edges])
    dst = sg.cast(sg.tensor([1, 2, 3, 0]), Tensor[NoTape, Edges])
    message_pass(h, src, dst).sum().backward()
    print(grads[lin.weight].shape)
    free = sg.Gradients()
    query: Tensor[NoTape, Batch, L[32]] = sg.randn(Batch(2), 32)
    q = query.trace(free)
    attend(q, sg.randn(Batch(2), Src(5), 32)).sum().backward()
    sg.einsum("bh,bh->", q, q).backward()  # an open rank may be rank 0: the run time checks it
    print(free[q].shape)


if __name__ == "__main__":
    main()
