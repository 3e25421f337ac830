"""The typecheck/ corpus under mypy, Pyrefly and ty holds its recorded results (issue #28).

pyright is the reference (tests/test_typecheck.py). For each other checker,
``typecheck/checkers.json`` records the marked mistakes it misses and the correct programs it
reports (each with the reason); this test fails, naming the program, when either list
changes: a mistake it caught and now misses, a correct program it newly reports, or a
mark it now catches (record it with ``python typecheck/checkers.py --write``).
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "typecheck"))
import checkers  # noqa: E402  (typecheck/ is a folder of programs, not a package)

RECORD = checkers.recorded()


@pytest.mark.parametrize("checker", sorted(checkers.COMMANDS))
def test_checker_scores_what_it_scored(checker: str) -> None:
    if shutil.which(checkers.COMMANDS[checker][0]) is None:
        pytest.fail(f"{checker} is not installed: it is in the dev extra (pip install -e '.[dev]')")
    expected = RECORD[checker]
    score = checkers.run(checker)
    assert score.version == expected["version"], f"{checker} {score.version} is not the pinned {expected['version']}"
    newly_missed = sorted(set(score.missed) - set(expected["missed"]))
    newly_caught = sorted(set(expected["missed"]) - set(score.missed))
    newly_noisy = sorted(set(score.noisy) - set(expected["noisy"]))
    now_clean = sorted(set(expected["noisy"]) - set(score.noisy))
    assert not newly_missed, f"{checker} no longer reports these marked mistakes: {newly_missed}"
    assert not newly_noisy, f"{checker} now reports errors in these correct programs: {newly_noisy}"
    assert not newly_caught and not now_clean, (
        f"{checker} improved ({newly_caught or ''} {now_clean or ''}): record it, python typecheck/checkers.py --write"
    )


def test_every_miss_and_every_correct_program_a_checker_reports_says_why() -> None:
    """Each missed mark and each reported correct program has its reason in the record
    (with the upstream issue where there is one), not the placeholder ``--write`` leaves."""
    unexplained = [
        f"{checker}: {name}"
        for checker, entry in RECORD.items()
        for kind in ("missed", "noisy")
        for name, why in entry[kind].items()
        if why == checkers.UNEXPLAINED
    ]
    assert not unexplained, unexplained


# The programs whose mistake is a tape, Gradients or optimizer mistake (by name).
TAPE_PROGRAMS = re.compile(r"tape|traced|backward|grads|optim|gradient")


def test_every_checker_reports_every_tape_mistake() -> None:
    """Issue #28: tape typing is portable. The record (checked against each checker above)
    holds no missed mark in a tape, Gradients or optimizer program, on any checker."""
    programs = [p.name for p in (checkers.SUITE / "fail").glob("*.py") if TAPE_PROGRAMS.search(p.name)]
    assert len(programs) >= 10
    missed = {
        checker: sorted(m for m in entry["missed"] if TAPE_PROGRAMS.search(m)) for checker, entry in RECORD.items()
    }
    assert not any(missed.values()), missed


def test_the_readme_table_is_the_record() -> None:
    readme = (checkers.ROOT / "README.md").read_text()
    block = checkers.README_BLOCK.search(readme)
    assert block is not None
    assert checkers.readme_table() in block[0], "README's checker table is stale: python typecheck/checkers.py --write"
