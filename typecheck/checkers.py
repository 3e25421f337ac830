"""The typecheck/ corpus under the other checkers: mypy, Pyrefly and ty (issue #28).

    python typecheck/checkers.py            # the table: marked mistakes reported, clean files
    python typecheck/checkers.py --write    # record today's results in typecheck/checkers.json

pyright (strict) is the reference: tests/test_typecheck.py holds it to every mark. The other
checkers are held to their recorded results (tests/test_checkers.py): a mark one of them
caught and misses now, or a correct program it newly reports, fails the test and names the
program; so does a mark it now catches (record it: the table in the README is made from the
record). Each checker runs once over the whole corpus, in its default mode with calls of
deprecated overloads as errors (shapegrad states some mistakes as ``@deprecated`` overloads,
which pyright's strict mode reports), from the repository root, with the project's virtual
environment; only errors count.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "typecheck"
RECORD = SUITE / "checkers.json"
BIN = Path(sys.executable).parent
PYTHON = str(Path(sys.executable))

# The pinned versions (pyproject.toml's dev extra): a new version changes the scores.
COMMANDS: dict[str, list[str]] = {
    "mypy": [
        str(BIN / "mypy"),
        "--python-executable",
        PYTHON,
        "--no-error-summary",
        "--show-column-numbers",
        "--hide-error-context",
        "--no-color-output",
        "--follow-imports=silent",
        "--cache-dir=/dev/null",
        "--enable-error-code=deprecated",
    ],
    "pyrefly": [
        str(BIN / "pyrefly"),
        "check",
        "--python-interpreter-path",
        PYTHON,
        "--search-path",
        ".",
        "--output-format",
        "min-text",
        "--error",
        "deprecated",
    ],
    "ty": [
        str(BIN / "ty"),
        "check",
        "--python",
        PYTHON,
        "--extra-search-path",
        ".",
        "--output-format",
        "concise",
        "--error",
        "deprecated",
    ],
}
# An error line of each checker: its file and line.
ERROR_LINE = {
    "mypy": re.compile(r"^(?P<file>[^:\s]+\.py):(?P<line>\d+):\d+: error:"),
    "pyrefly": re.compile(r"^ERROR (?P<file>[^:\s]+\.py):(?P<line>\d+):"),
    "ty": re.compile(r"^(?P<file>[^:\s]+\.py):(?P<line>\d+):\d+: error\["),
}
MARK = re.compile(r"#\s*E(?::|\s*$)")


@dataclass
class Score:
    """One checker's results over the corpus."""

    checker: str
    version: str
    missed: list[str] = field(default_factory=list[str])  # "fail/x.py:12": a marked line it did not report
    noisy: list[str] = field(default_factory=list[str])  # "pass/y.py": a correct program it reports
    marks: int = 0
    programs: int = 0
    seconds: float = 0.0

    def caught(self) -> int:
        return self.marks - len(self.missed)


def corpus() -> tuple[list[Path], list[Path]]:
    return sorted((SUITE / "pass").glob("*.py")), sorted((SUITE / "fail").glob("*.py"))


def marked_lines(path: Path) -> list[int]:
    return [n for n, text in enumerate(path.read_text().splitlines(), 1) if MARK.search(text)]


def version(checker: str) -> str:
    command = [COMMANDS[checker][0], "--version"]
    out = subprocess.run(command, capture_output=True, text=True, cwd=ROOT).stdout.strip()
    return out.split()[1]  # "mypy 2.4.1 (compiled: yes)", "pyrefly 1.4.1", "ty 0.0.104"


def run(checker: str) -> Score:
    """Run ``checker`` once over typecheck/pass and typecheck/fail."""
    passing, failing = corpus()
    files = [str(p.relative_to(ROOT)) for p in [*passing, *failing]]
    started = time.perf_counter()
    result = subprocess.run(
        [*COMMANDS[checker], *files],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "MYPYPATH": str(ROOT)},
    )
    seconds = time.perf_counter() - started
    reported: dict[str, set[int]] = {}
    for text in (result.stdout + result.stderr).splitlines():
        m = ERROR_LINE[checker].match(text.strip())
        if m:
            reported.setdefault(Path(m["file"]).as_posix(), set()).add(int(m["line"]))
    score = Score(checker, version(checker), programs=len(passing) + len(failing), seconds=seconds)
    for path in failing:
        name = path.relative_to(SUITE).as_posix()
        for line in marked_lines(path):
            score.marks += 1
            if line not in reported.get(f"typecheck/{name}", set()):
                score.missed.append(f"{name}:{line}")
    score.noisy = [
        p.relative_to(SUITE).as_posix() for p in passing if f"typecheck/{p.relative_to(SUITE).as_posix()}" in reported
    ]
    return score


def recorded() -> dict[str, Any]:
    """typecheck/checkers.json: per checker its version, each mark it misses and each correct
    program it reports, with the reason (and the upstream issue where there is one)."""
    return json.loads(RECORD.read_text()) if RECORD.exists() else {}


UNEXPLAINED = "to be explained"


def write(scores: list[Score]) -> None:
    """Record ``scores``, keeping the reasons already written for the marks and programs
    that stay; a new one reads ``UNEXPLAINED`` until someone writes why."""
    old = recorded()
    data: dict[str, Any] = {}
    for s in scores:
        entry = old.get(s.checker, {})
        missed_why: dict[str, str] = entry.get("missed", {})
        noisy_why: dict[str, str] = entry.get("noisy", {})
        data[s.checker] = {
            "version": s.version,
            "missed": {mark: missed_why.get(mark, UNEXPLAINED) for mark in s.missed},
            "noisy": {name: noisy_why.get(name, UNEXPLAINED) for name in s.noisy},
        }
    RECORD.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def table(scores: list[Score]) -> str:
    _, failing = corpus()
    lines = [
        "| checker | marked mistakes reported | correct files with errors | time |",
        "| --- | ---: | ---: | ---: |",
    ]
    for s in scores:
        lines.append(
            f"| {s.checker} {s.version} | {s.caught()}/{s.marks} | {len(s.noisy)}/{s.programs - len(failing)} "
            f"| {s.seconds:.1f} s |"
        )
    return "\n".join(lines)


PYRIGHT_ROW = "| pyright 1.1.414 (strict, the reference) | {marks}/{marks} | 0/{clean} |"
README_BLOCK = re.compile(
    r"(<!-- checker table: python typecheck/checkers.py --write -->\n).*?(<!-- end of checker table -->)", re.S
)


def readme_table() -> str:
    """The README's table, from the record and the corpus (no checker runs)."""
    passing, failing = corpus()
    marks = sum(len(marked_lines(p)) for p in failing)
    lines = [
        "| checker | marked mistakes reported | correct files with errors |",
        "| --- | ---: | ---: |",
        PYRIGHT_ROW.format(marks=marks, clean=len(passing)),
    ]
    names = {"mypy": "mypy", "pyrefly": "Pyrefly", "ty": "ty"}
    for checker, entry in recorded().items():
        lines.append(
            f"| {names[checker]} {entry['version']} | {marks - len(entry['missed'])}/{marks} "
            f"| {len(entry['noisy'])}/{len(passing)} |"
        )
    return "\n".join(lines) + "\n"


def write_readme() -> None:
    readme = ROOT / "README.md"
    readme.write_text(README_BLOCK.sub(lambda m: m[1] + readme_table() + m[2], readme.read_text()))


def main() -> None:
    scores = [run(c) for c in COMMANDS]
    if "--write" in sys.argv:
        write(scores)
        write_readme()
    print(table(scores))
    for s in scores:
        if s.missed:
            print(f"\n{s.checker} misses: " + ", ".join(s.missed))
        if s.noisy:
            print(f"{s.checker} reports correct programs: " + ", ".join(s.noisy))


if __name__ == "__main__":
    main()
