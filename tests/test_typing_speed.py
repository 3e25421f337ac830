"""Pyright's time on nested function forms grows linearly with depth (issue #23).

Each function form is an overload stack generated from the op table; pyright evaluates an
argument expression once per overload it tries, so a nested `sg.add(sg.add(...), w)` inside
a function generic over its dims cost a factor per level (measured before the covariant
tape: depth 4 ~9 s, depth 5 ~90 s, depth 6 ~400 s on a 2-core machine). One overload per
pattern (the tape is covariant) and the bias pattern first make `sg.add(..., w)` match at the
first try, which pyright evaluates once. ``python benchmarks/typing_speed.py`` measures each
form and the layer-norm expression.
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


def test_depth_8_nested_add_checks_in_a_few_seconds_above_depth_1(tmp_path: Path) -> None:
    """issue #23: `sg.add` nested 8 deep (a bias on the right, in a function generic over
    T, B, D) checks within RATIO times and ABSOLUTE seconds of depth 1; pyright is stopped
    at the bound, so a slow design fails in bounded time."""
    base, _ = typing_speed.pyright_seconds("x", tmp_path / "base")
    one, errors = typing_speed.pyright_seconds(typing_speed.nested(typing_speed.FORMS["add"], 1), tmp_path / "d1")
    assert errors == 0
    depth_1 = max(one - base, 0.5)
    bound = min(RATIO * depth_1, depth_1 + ABSOLUTE)
    try:
        eight, errors = typing_speed.pyright_seconds(
            typing_speed.nested(typing_speed.FORMS["add"], 8), tmp_path / "d8", timeout=base + bound + 1
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"depth 8 took over {bound:.1f} s above pyright's start-up (depth 1: {one - base:.1f} s)")
    assert errors == 0
    assert eight - base <= bound, f"depth 8: {eight - base:.1f} s, depth 1: {one - base:.1f} s"
