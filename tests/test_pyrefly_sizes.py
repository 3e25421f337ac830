"""Exact sizes under Pyrefly (issue #28): the generated Pyrefly stubs and the arith corpus.

``shapegrad/_pyrefly_stubs.py`` writes shapegrad's surface in Pyrefly's tensor-shape syntax
from the op table; ``typecheck/arith/`` holds the programs Pyrefly checks with them on:
computed sizes in ``pass/`` with no cast, a wrong computed size in ``fail/`` an error on the
marked line. The pinned extension is ``pyrefly-shape-extensions`` (the ``pyrefly`` extra).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from shapegrad import _pyrefly_stubs
from shapegrad._opspec import OPS

ROOT = Path(__file__).resolve().parent.parent
# Loaded under a name of its own: benchmarks/run.py is imported as ``run`` by test_benchmarks,
# and one sys.modules entry for both made whichever came second the other.
_spec = importlib.util.spec_from_file_location("arith_run", ROOT / "typecheck" / "arith" / "run.py")
assert _spec is not None and _spec.loader is not None
arith = importlib.util.module_from_spec(_spec)
sys.modules["arith_run"] = arith
_spec.loader.exec_module(arith)

PINNED = {"pyrefly": "1.4.1", "pyrefly-shape-extensions": "1.4.0"}

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("shape_extensions") is None,
    reason="pyrefly-shape-extensions is not installed: pip install -e '.[pyrefly]' (Pyrefly computes sizes only with it)",
)


@pytest.fixture(scope="module")
def found() -> dict[str, dict[int, list[str]]]:
    return arith.report()


def test_the_checker_and_extension_are_the_pinned_versions() -> None:
    versions = {name: importlib.metadata.version(name) for name in PINNED}
    assert versions == PINNED, "a new version changes what Pyrefly computes: re-run the corpus and pin it"


def test_the_stubs_are_generated_from_the_op_table() -> None:
    assert _pyrefly_stubs.check() == [], "stale Pyrefly stubs: python shapegrad/_pyrefly_stubs.py"


def test_every_op_of_the_table_has_its_forms_in_the_stubs() -> None:
    """The op table drives this surface as it drives pyright's: each row's method (and
    named method) on ``Tensor``, its function form ``sg.<name>`` and each loss."""

    def defined(text: str, indent: str = "") -> set[str]:
        # By their lines: the stubs use PEP 695 syntax, which this Python's ast cannot read.
        return set(re.findall(rf"^{indent}def (\w+)", text, re.M))

    root = _pyrefly_stubs.STUBS / "shapegrad"
    text = (root / "__init__.pyi").read_text()
    start = text.index("\nclass Tensor(")
    end = re.compile(r"^\S", re.M).search(text, start + 2)
    tensor = defined(text[start : end.start() if end else None], "    ")
    functions, losses = defined(text), defined((root / "losses.pyi").read_text())
    missing = [
        f"{op.name}: {form}"
        for op in OPS
        for form, present in (
            (f"Tensor.{op.method}", op.method is None or op.method in tensor),
            (f"Tensor.{op.name}", not op.named or op.name in tensor),
            (f"sg.{op.name}", not (op.module and op.top_level and op.module != "losses") or op.name in functions),
            (f"sg.losses.{op.name}", op.kind != "loss" or op.name in losses),
        )
        if not present
    ]
    assert not missing, missing


def test_the_stubs_themselves_check_clean_under_pyrefly() -> None:
    """Every shape rule in the stubs is one Pyrefly accepts: a rule it rejects makes the
    ops using it silently gradual (``Unknown``), so the stubs are checked as code."""
    files = [str(p.relative_to(_pyrefly_stubs.STUBS)) for p in sorted(_pyrefly_stubs.STUBS.rglob("*.pyi"))]
    result = subprocess.run(
        [*arith.COMMAND, *files], capture_output=True, text=True, cwd=_pyrefly_stubs.STUBS, check=False
    )
    errors = [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("ERROR")]
    assert len(files) == 4 and not errors, "\n".join(errors)


def test_pass_programs_report_nothing_and_every_mark_is_reported(found: dict[str, dict[int, list[str]]]) -> None:
    assert len(arith.programs("pass")) >= 5 and sum(len(arith.marks(p)) for p in arith.programs("fail")) >= 15
    issues = arith.problems(found)
    assert not issues, "\n".join(issues)


@pytest.mark.parametrize("path", arith.programs("pass"), ids=lambda p: p.stem)
def test_pass_programs_run_with_the_sizes_pyrefly_computed(path: Path) -> None:
    """Each model runs; its ``assert_shape`` calls, which Pyrefly checked against the computed
    sizes, hold at run time too (a stub rule that computed a wrong size would fail here)."""
    spec = importlib.util.spec_from_file_location(f"arith_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()


def test_a_wrong_computed_size_names_both_sizes(found: dict[str, dict[int, list[str]]]) -> None:
    """The CNN whose head takes 784 where the flatten gives 3136: the message says both."""
    (messages,) = found["fail/flatten_into_wrong_linear.py"].values()
    assert any("[B, 3136]" in m and "784]" in m for m in messages), messages


def test_computed_sizes_replace_the_casts_pyright_needs() -> None:
    """Each model of pass/ has a pyright twin (typecheck/arith/pyright/); the casts there that
    only state a computed size are all gone under Pyrefly, and none is left in pass/."""
    twins = {p.stem for p in arith.programs("pyright")}
    assert len(twins) >= 5 and twins <= {p.stem for p in arith.programs("pass")}
    casts = arith.computed_casts()
    assert sum(casts.values()) >= 10
    leftover = {p.name: p.read_text().count("sg.cast(") for p in arith.programs("pass")}
    assert not any(leftover.values()), leftover


def test_the_pyright_twins_check_clean_under_pyright() -> None:
    """The casts counted above are the ones pyright strict needs, not more (each one's
    removal is an error: checked when the twin was written)."""
    pyright = Path(sys.executable).parent / "pyright"
    if not pyright.exists():
        pytest.fail("pyright is not installed: pip install -e '.[dev]'")
    result = subprocess.run(
        [str(pyright), "--pythonpath", sys.executable, "-p", "typecheck/pyrightconfig.json", "typecheck/arith/pyright"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert "0 errors" in result.stdout, result.stdout
