"""Fused kernels are bound by name (issue #27): a backend's kernel named like a backward rule
replaces that rule where the op is recorded, and an op asks for a fused forward by its own
name. So no two rules may share a name (one kernel would replace both), and every kernel a
backend offers must be a rule's name, with the rule's number of inputs, or a name some op asks
for (a kernel no one asks for, say after a rule was renamed, would silently drop to the slow
path)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path
from typing import Any

import shapegrad
from shapegrad_backends import cupy_kernels, numba_kernels

ROOT = Path(__file__).resolve().parent.parent


def _rules() -> dict[str, list[Any]]:
    """Every backward rule (a module-level ``*_backward`` function) in shapegrad, by name."""
    found: dict[str, list[Any]] = {}
    for info in pkgutil.walk_packages(shapegrad.__path__, "shapegrad."):
        if info.name.endswith("_typegen"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if name.endswith("_backward") and inspect.isfunction(value) and value.__module__ == info.name:
                found.setdefault(name, []).append(value)
    return found


def _asked_for() -> set[str]:
    """The names the library's code asks for a kernel by, read from the source: string
    literals on lines that look a kernel up or name one (``fused_kernel(backend, "gelu", ...)``,
    an optimizer's ``target.kernel = "sgd_momentum"``, the NumPy backend's own
    ``numba_kernels.kernel("scatter_add_rows", ...)``), and the recurrence's
    ``f"{cell}_sequence"`` for each cell it knows."""
    from shapegrad.ops.recurrent import CELL_GATES

    names = {f"{cell}_sequence" for cell in CELL_GATES}
    for path in [*(ROOT / "shapegrad").rglob("*.py"), ROOT / "backends" / "numpy_backend.py"]:
        for line in path.read_text().splitlines():
            code = line.split("#")[0]
            if "kernel" in code and not code.lstrip().startswith(('"', "'")):
                names |= set(re.findall(r"\"(\w+)\"", code))
    return names


def test_no_two_backward_rules_share_a_name() -> None:
    shared = {name: [f.__module__ for f in functions] for name, functions in _rules().items() if len(functions) > 1}
    assert shared == {}, f"rules sharing a name (one kernel would replace each): {shared}"


def _inputs_of_rule(rule: Any) -> int:
    """How many values the rule's kernel is called with: the gradient and the saved values."""
    return len(inspect.signature(rule).parameters) - 1  # all but xp


def test_every_cupy_kernel_is_a_rule_with_its_arity_or_a_forward_someone_asks_for() -> None:
    rules, asked = _rules(), _asked_for()
    for name, source in cupy_kernels.KERNELS.items():
        if name in rules:
            inputs = len([p for p in source.inputs.split(",") if p.strip()])
            assert inputs == _inputs_of_rule(rules[name][0]), f"cupy kernel {name!r}: {inputs} inputs"
        else:
            assert name in asked, f"cupy kernel {name!r} is no rule's name and no op asks for it"


def test_every_numba_kernel_is_a_rule_or_a_forward_someone_asks_for() -> None:
    rules, asked = _rules(), _asked_for()
    unknown = sorted(name for name in numba_kernels._BUILDERS if name not in rules and name not in asked)
    assert unknown == [], f"numba kernels that are no rule's name and that no op asks for: {unknown}"


def test_the_recurrence_kernels_are_asked_for_by_cell() -> None:
    """``recurrence`` asks for ``f"{cell}_sequence"``: each cell of the table has its kernels."""
    from shapegrad.ops.recurrent import CELL_GATES

    for cell in CELL_GATES:
        assert f"{cell}_sequence" in numba_kernels._BUILDERS
        assert f"{cell}_sequence_backward" in numba_kernels._BUILDERS
