"""Pyright's time on nested function forms grows linearly with depth (issue #23).

Pyright evaluates an argument once per expected type, and every overload it tries before the
match gives the argument an expected type of its own (the parameter type, partly solved).
Evaluated against one, a nested call solves its own overloads' results against it, which hands
the next level new expected types; pyright keeps 8 results per expression, so past eight the
work multiplies per level (read in pyright's ``validateArgTypesWithContext`` and
``typeCacheUtils.ts``). A binary function form therefore opens with two protocol overloads
(``shapegrad/_broadcast.py``): the operand being matched is a protocol, against which no
overload's result is solved, and the other a bare type variable, so every level sees the same
few expected types, the nested operand on either side. Then the union overloads
(``_typegen._common``) and the table's patterns. ``python benchmarks/typing_speed.py`` measures
each form.

Seconds above pyright's start-up, depths 1 / 2 / 3 / 4 / 5 / 6 / 7 / 8 (``typing_speed.FORMS``,
each case a file of its own; ``>N``: stopped there). The "union" column is the previous design
(union overloads first), the "protocol" column this one; the right-operand forms were measured
on 2026-12-01 with the machine's load at 8-9, the rest are within the tests' bound below:

==========  ========================================  ========================================
form        union overloads first                     protocol overloads first
==========  ========================================  ========================================
add         0.5 0.5 0.8 1.1 1.1 1.2 1.3 1.4           (test below)
mul_same    0.7 0.9 1.2 1.4 1.8 2.0 2.3 2.9           (test below)
sub_left    0.6 0.9 1.7 2.4 6.4 17.0 >25              0.4 0.5 0.7 0.7 1.2 1.5 1.4 2.0
float_left  0.1 1.1 3.7 20.7 >60                      0.1 0.3 0.3 0.2 0.6 0.6 0.7 0.2
keep_left   0.4 1.5 6.4 24.8 >60                      0.4 0.7 1.0 1.5 1.7 1.7 1.9 2.1
mean_keep   0.7 1.0 1.2 1.2 1.5 1.6 1.7 1.7           (test below)
==========  ========================================  ========================================

A GELU written in function forms with its constants on the left,
``sg.mul(0.5, sg.mul(x, sg.add(1.0, sg.tanh(...))))``, took 73 s with the union overloads
first and takes 0.6 s now, as its operator form does.

Those figures are on type-variable dims. On a model's dims (``Tensor[T, Batch, L[64]]``) the
protocols never matched, because they solved the result's dims as a TypeVarTuple: ``sub_left``
took 148 s at depth 5 and the GELU over 300 s, until the protocols returned one whole type (now
0.6-3 s above start-up at depth 8, the GELU 0.9 s).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import typing_speed  # noqa: E402  (benchmarks/ is a folder of scripts, not a package)

RATIO = 3.0  # depth 8 against depth 1, both above pyright's start-up
ABSOLUTE = 10.0  # seconds above depth 1: generous, the machine is shared
# The forms whose nested operand is on the right; the others nest on the left. Each group is
# checked in one file: a file of all of them is more work than ABSOLUTE covers, linearly.
RIGHT = ["sub_left", "float_left", "keep_left"]
LEFT = [form for form in typing_speed.FORMS if form not in RIGHT]


def _check_within_bound(
    one_body: str, eight_body: str, tmp_path: Path, ratio: float = RATIO, dims: str = "generic"
) -> None:
    """``eight_body`` checks clean within ``ratio`` times and ABSOLUTE seconds of
    ``one_body`` (both above an empty body's time, the operands' dims from
    ``typing_speed.HEADERS[dims]``); pyright is stopped at the bound, so a slow design fails in
    bounded time."""
    base, _ = typing_speed.pyright_seconds("x", tmp_path / "base", dims=dims)
    one, errors = typing_speed.pyright_seconds(one_body, tmp_path / "d1", dims=dims)
    assert errors == 0
    depth_1 = max(one - base, 1.0)  # a floor: below a second, pyright's own noise decides
    bound = min(ratio * depth_1, depth_1 + ABSOLUTE)
    try:
        eight, errors = typing_speed.pyright_seconds(eight_body, tmp_path / "d8", timeout=base + bound + 1, dims=dims)
    except subprocess.TimeoutExpired:
        pytest.fail(f"depth 8 took over {bound:.1f} s above pyright's start-up (depth 1: {one - base:.1f} s)")
    assert errors == 0
    assert eight - base <= bound, f"depth 8: {eight - base:.1f} s, depth 1: {one - base:.1f} s"


def _all(depth: int, forms: list[str]) -> str:
    """Each form nested ``depth`` deep, as the arguments of one ``print``."""
    return ", ".join(typing_speed.nested(typing_speed.FORMS[form], depth) for form in forms)


def test_depth_8_nested_add_checks_in_a_few_seconds_above_depth_1(tmp_path: Path) -> None:
    """issue #23: `sg.add` nested 8 deep (a bias on the right, in a function generic over
    T, B, D) checks within RATIO times and ABSOLUTE seconds of depth 1."""
    add = typing_speed.FORMS["add"]
    _check_within_bound(typing_speed.nested(add, 1), typing_speed.nested(add, 8), tmp_path)


def test_every_left_form_nested_8_deep_and_the_layer_norm_check_in_a_few_seconds(tmp_path: Path) -> None:
    """Every form with its nested operand on the left, 8 deep, and the layer norm, in one
    file, against the same forms 1 deep: within ABSOLUTE seconds (the ratio is no bound here:
    eight levels of seven forms are more work than one level, linearly)."""
    depth_8 = _all(8, LEFT) + ", " + typing_speed.LAYER_NORM
    _check_within_bound(_all(1, LEFT), depth_8, tmp_path, ratio=float("inf"))


def test_every_right_form_nested_8_deep_checks_in_a_few_seconds(tmp_path: Path) -> None:
    """``sg.sub(w, ...)``, ``sg.sub(1.0, ...)`` and ``sg.sub(<keepdims mean>, ...)`` nested 8
    deep, in one file, within ABSOLUTE seconds of the same forms 1 deep (the protocol
    overloads; with the union overloads first, each was past 20 s at depth 4 or 6)."""
    _check_within_bound(_all(1, RIGHT), _all(8, RIGHT), tmp_path, ratio=float("inf"))


def test_forms_on_concrete_dims_nested_8_deep_and_the_gelu_check_in_a_few_seconds(tmp_path: Path) -> None:
    """Operands typed as a model's are (``Tensor[T, Batch, L[64]]``): every right form and
    the mean and bias forms nested 8 deep, and GPT-2's GELU in function forms, within ABSOLUTE
    seconds of the forms 1 deep. Before the broadcast protocols returned one whole type, a
    literal size failed them and ``sg.sub(w, ...)`` took 148 s at depth 5, the GELU over 300 s."""
    forms = [*RIGHT, "add", "mean_keep"]
    depth_8 = _all(8, forms) + ", " + typing_speed.GELU
    _check_within_bound(_all(1, forms), depth_8, tmp_path, ratio=float("inf"), dims="concrete")


def test_rank_0_forms_nested_8_deep_check_in_a_few_seconds(tmp_path: Path) -> None:
    """Losses combined in function forms (rank 0 on both sides, the nested one on the left and
    on the right), 8 deep. The broadcast protocols once held rank 1 and up only: a rank-0
    left operand nested 8 deep took 19 minutes."""
    forms = ["sg.sub({}, w.sum())", "sg.sub(w.sum(), {})"]

    def body(depth: int) -> str:
        return ", ".join(typing_speed.nested(form, depth).replace("x", "x.sum()") for form in forms)

    _check_within_bound(body(1), body(8), tmp_path, ratio=float("inf"), dims="concrete")


def test_open_dims_against_typed_ones_nested_8_deep_check_in_a_few_seconds(tmp_path: Path) -> None:
    """An ``Open`` dim against a typed one in nested function forms (``typing_speed.OPEN_FORMS``:
    the open operand on the right, ``maximum``, an untraced typed operand first), in a function
    generic over the tape, 8 deep, within ABSOLUTE seconds of the forms 1 deep. Those patterns
    came after the table's plain overloads, each evaluating the nested call again:
    ``sg.add(sg.add(x, o), o)`` took about 10 s and one level more over 300 s. The open
    protocols now come right after the common ones (``_typegen._open_protocol``)."""

    def body(depth: int) -> str:
        forms = [typing_speed.OPEN_FORMS[name] for name in typing_speed.LINEAR_OPEN_FORMS]
        return ", ".join(typing_speed.nested(form, depth) for form in forms)

    _check_within_bound(body(1), body(8), tmp_path, ratio=float("inf"), dims="open")
