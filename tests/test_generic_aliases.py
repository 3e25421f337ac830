"""Generic aliases that hold ``Tensor[T, ...]`` inside a builtin or ``typing`` generic
(``Hidden = tuple[Tensor[T, ...], Tensor[T, ...]]``, then ``Hidden[T]``, ``Hidden[NoTape]``):
they are generic at run time and checked as what they expand to.

``typing`` and builtin generics skip classes when they collect TypeVars, so while
``Tensor[T, ...]`` was a class ``Hidden`` had no parameters and ``Hidden[T]`` raised
``TypeError`` at import (found porting pytorch/examples' word language model)."""

# Not `from __future__ import annotations`: the subscriptions run where they are written, as
# they did in the port that failed (tests/test_checking.py covers string annotations).

import typing
from typing import Literal as L, Optional, TypeVar, TypeVarTuple

import pytest
from jaxtyping import TypeCheckError

import shapegrad as sg
from shapegrad import NoTape, OwnedTape, Tensor

T = TypeVar("T")
M = TypeVar("M")
S = TypeVarTuple("S")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


State = Tensor[T, L[2], Batch, L[4]]
Hidden = tuple[Tensor[T, L[2], Batch, L[4]], Tensor[T, L[2], Batch, L[4]]]
States = list[Tensor[T, L[2], Batch, L[4]]]
NamedStates = dict[str, Tensor[T, L[2], Batch, L[4]]]
MaybeState = Optional[Tensor[T, L[2], Batch, L[4]]]  # noqa: UP045 -- typing's Union, on purpose
StateOrNone = Tensor[T, L[2], Batch, L[4]] | None


def _pair(batch: int = 3, width: int = 4) -> Hidden[NoTape]:
    """Two untraced states (the sizes given, unchecked: the tests hand some wrong ones in)."""
    return sg.zeros(2, batch, width), sg.ones(2, batch, width)  # pyright: ignore[reportReturnType] -- any sizes on purpose


def _traced(x: Tensor[NoTape, L[2], Batch, L[4]]) -> Tensor[OwnedTape[None], L[2], Batch, L[4]]:
    return x.trace(sg.Gradients())


@sg.checked
def keep_untraced(h: Hidden[NoTape]) -> Hidden[NoTape]:
    return h


@sg.checked
def keep_traced(h: Hidden[OwnedTape[M]]) -> Hidden[OwnedTape[M]]:
    return h


@sg.checked
def swap(h: Hidden[T]) -> Hidden[T]:
    return h[1], h[0]


@sg.checked
def step(x: Tensor[T, Batch, L[4]], h: Hidden[T]) -> Hidden[NoTape]:
    """Batch is bound once across ``x`` and both states."""
    return h[0].detach(), h[1].detach()


# ------------------------------------------------------------------------------- substitution


# typing.Tuple and Optional on purpose (noqa UP006/UP045): typing's own substitution is another
# code path than builtin tuple's and X | None's.


def test_a_tuple_alias_is_generic_in_the_tensors_typevar() -> None:
    assert Hidden.__parameters__ == (T,)
    assert typing.Tuple[State, State].__parameters__ == (T,)  # noqa: UP006


def test_substitution_gives_the_tensors_annotation_with_the_tape_in_place() -> None:
    untraced = Tensor[NoTape, L[2], Batch, L[4]]
    assert Hidden[NoTape] == tuple[untraced, untraced]
    assert typing.Tuple[State, State][NoTape] == typing.Tuple[untraced, untraced]  # noqa: UP006
    assert Hidden[T] == Hidden  # the same TypeVar again: the same alias


def test_list_dict_and_optional_aliases_substitute() -> None:
    untraced = Tensor[NoTape, L[2], Batch, L[4]]
    assert States[NoTape] == list[untraced]
    assert NamedStates[NoTape] == dict[str, untraced]
    assert MaybeState[NoTape] == Optional[untraced]  # noqa: UP045
    assert StateOrNone[NoTape] == (untraced | None)


def test_a_typevartuple_takes_the_arguments_the_typevars_leave() -> None:
    rows = Tensor[T, *S, L[4]]
    pair = tuple[rows, rows]
    assert pair.__parameters__ == (T, S)
    untraced = Tensor[NoTape, Batch, Seq, L[4]]
    assert pair[NoTape, Batch, Seq] == tuple[untraced, untraced]
    assert typing.Tuple[rows, rows][NoTape, Batch, Seq] == typing.Tuple[untraced, untraced]  # noqa: UP006
    assert rows[NoTape, Batch, Seq] is untraced
    assert rows[NoTape, tuple[Batch, Seq]] is untraced  # the dims as one tuple, as before


def test_too_few_arguments_name_the_typevars() -> None:
    with pytest.raises(TypeError, match=r"takes 2 type arguments \(T, M\), found 1"):
        Tensor[T, M][NoTape]


def test_a_generic_tensor_is_cast_to() -> None:
    x = sg.zeros(2, 3, 4)
    assert sg.cast(x, State).shape == (2, 3, 4)
    with pytest.raises(sg.ShapeError, match="2 Batch 4"):
        sg.cast(sg.zeros(2, 3, 5), State)


# ------------------------------------------------------------------------------- checking


def test_a_substituted_untraced_alias_is_checked(numpy_backend: str) -> None:
    assert [t.shape for t in keep_untraced(_pair())] == [(2, 3, 4), (2, 3, 4)]
    with pytest.raises(TypeCheckError, match=r"(?s)parameter 'h'.*2 Batch 4"):
        keep_untraced(_pair(width=5))
    with pytest.raises(TypeCheckError, match=r"(?s)parameter 'h'.*untraced Tensor \(NoTape\)"):
        keep_untraced((_traced(_pair()[0]), _pair()[1]))


def test_a_substituted_traced_alias_is_checked(numpy_backend: str) -> None:
    first, second = _pair()
    assert keep_traced((_traced(first), _traced(second)))[0].traced
    with pytest.raises(TypeCheckError, match=r"(?s)parameter 'h'.*traced Tensor \(OwnedTape\)"):
        keep_traced(_pair())
    with pytest.raises(TypeCheckError, match=r"(?s)parameter 'h'.*2 Batch 4"):
        wide, _ = _pair(width=5)
        keep_traced((_traced(first), _traced(wide)))


def test_an_unsubstituted_alias_checks_dims_inside_a_generic_function(numpy_backend: str) -> None:
    first, second = _pair()
    assert swap((first, second))[0] is second
    assert swap((_traced(first), _traced(second)))[0].traced
    with pytest.raises(TypeCheckError, match=r"(?s)parameter 'h'.*Batch=3"):
        swap((first, _pair(batch=5)[1]))  # Batch bound to 3 by the first state


def test_batch_is_bound_across_a_tensor_and_an_alias(numpy_backend: str) -> None:
    assert [t.shape for t in step(sg.zeros(3, 4), _pair())] == [(2, 3, 4), (2, 3, 4)]
    with pytest.raises(TypeCheckError, match=r"(?s)parameter 'h'.*Batch=5"):
        step(sg.zeros(5, 4), _pair())


def test_list_dict_and_optional_aliases_are_checked(numpy_backend: str) -> None:
    @sg.checked
    def total(xs: States[NoTape], named: NamedStates[NoTape], extra: MaybeState[NoTape]) -> float:
        return float(len(xs) + len(named) + (extra is not None))

    @sg.checked
    def maybe(x: StateOrNone[T]) -> StateOrNone[T]:
        return x

    good = _pair()[0]
    wide = _pair(width=5)[0]
    assert total([good, good], {"a": good}, None) == 3.0
    with pytest.raises(TypeCheckError, match=r"(?s)parameter 'xs'.*2 Batch 4"):
        total([wide], {}, None)  # one item: beartype checks one item of a list, at random
    with pytest.raises(TypeCheckError, match=r"(?s)parameter 'named'.*2 Batch 4"):
        total([], {"a": wide}, None)
    with pytest.raises(TypeCheckError, match=r"(?s)parameter 'extra'.*untraced"):
        total([], {}, _traced(good))
    assert maybe(None) is None
    assert maybe(good) is good
    with pytest.raises(TypeCheckError, match=r"(?s)parameter 'x'"):
        maybe(wide)


def test_module_calls_check_a_tuple_alias(numpy_backend: str) -> None:
    class Carry(sg.nn.Module):
        def __call__(self, x: Tensor[T, Batch, L[4]], h: Hidden[T]) -> Hidden[T]:
            return h

    first, second = _pair()
    assert Carry()(sg.zeros(3, 4), (first, second))[0] is first
    with pytest.raises(TypeCheckError, match=r"(?s)parameter 'h'.*Batch=2"):
        Carry()(sg.zeros(2, 4), (first, second))


def test_a_function_over_an_alias_keeps_the_signature_cache(numpy_backend: str) -> None:
    # tuple[GenericTensor, ...] reads only tapes and shapes: a repeated call skips the full check.
    check = getattr(swap, "_shapegrad_check")
    swap(_pair())
    assert check.cacheable
    with pytest.raises(TypeCheckError):
        swap((_pair()[0], _pair(batch=5)[1]))


def test_string_annotations_resolve_to_the_alias(numpy_backend: str) -> None:
    # typing.get_type_hints re-subscripts a builtin alias's origin with its args: the alias's
    # check class rebuilds the alias from its params.
    source = (
        "from __future__ import annotations\n"
        "import shapegrad as sg\n"
        "@sg.checked\n"
        "def swap(h: Hidden[T]) -> Hidden[T]:\n"
        "    return h[1], h[0]\n"
    )
    namespace: dict[str, object] = {"__name__": "alias_with_future_import", "Hidden": Hidden, "T": T}
    exec(compile(source, "<alias>", "exec", dont_inherit=True), namespace)
    swap_strings: typing.Any = namespace["swap"]
    first, second = _pair()
    assert swap_strings((first, second))[0] is second
    with pytest.raises(TypeCheckError, match=r"(?s)parameter 'h'.*Batch=3"):
        swap_strings((first, _pair(batch=5)[1]))


def test_summary_names_the_dims_of_a_tuple_alias(numpy_backend: str) -> None:
    class Carry(sg.nn.Module):
        def __call__(self, x: Tensor[T, Batch, L[4]], h: Hidden[T]) -> Hidden[T]:
            return h

    report = sg.summary(Carry(), sg.zeros(3, 4), _pair())
    assert report.rows[0].output == "(2, Batch, 4), (2, Batch, 4)"
