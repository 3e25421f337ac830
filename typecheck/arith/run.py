"""The arith corpus: Pyrefly with shapegrad's Pyrefly stubs on (issue #28).

    python typecheck/arith/run.py               # the marks Pyrefly reports, the clean programs, the cast count
    python typecheck/arith/run.py --each-cast   # and that pyright needs every counted cast (about a minute)

- ``pass/``: models written the way users write them, in Pyrefly's shape syntax; Pyrefly must
  report nothing. Their sizes are computed (``assert_type`` pins some), with no cast.
- ``fail/``: each line ending in ``# E`` must be reported by Pyrefly, and no other line;
  ``# E: fragment`` also requires the fragment in the message (as in typecheck/fail).
- ``pyright/``: each ``pass/`` model again for pyright (strict, ``typecheck/pyrightconfig.json``),
  which cannot compute a size: every cast there that states one is marked ``# cast: computed``.
  The count of those is what the Pyrefly stubs make unnecessary.

Checked with the configuration in this folder (``pyrefly.toml``: the stubs on the search path),
from this folder, with the project's interpreter; only errors count.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
COMMAND = [
    str(BIN / "pyrefly"),
    "check",
    "--python-interpreter-path",
    sys.executable,
    "--output-format",
    "min-text",
    "--error",
    "deprecated",  # shapegrad states backward() of an untraced tensor as a @deprecated overload
]
ERROR = re.compile(r"^ERROR (?P<file>[^:\s]+\.py):(?P<line>\d+):\S+ (?P<message>.*)$")
MARK = re.compile(r"#\s*E(?::\s*(?P<fragment>.*\S))?\s*$")
COMPUTED_CAST = "# cast: computed"


def programs(kind: str) -> list[Path]:
    return sorted((HERE / kind).glob("*.py"))


def report() -> dict[str, dict[int, list[str]]]:
    """Every Pyrefly error over pass/ and fail/, by file (``pass/cnn.py``) and line."""
    files = [str(p.relative_to(HERE)) for p in [*programs("pass"), *programs("fail")]]
    result = subprocess.run([*COMMAND, *files], capture_output=True, text=True, cwd=HERE, check=False)
    found: dict[str, dict[int, list[str]]] = {}
    for text in (result.stdout + result.stderr).splitlines():
        m = ERROR.match(text.strip())
        if m:
            found.setdefault(Path(m["file"]).as_posix(), {}).setdefault(int(m["line"]), []).append(m["message"])
    return found


def marks(path: Path) -> dict[int, str | None]:
    """The marked lines of a fail program and each one's required fragment."""
    found: dict[int, str | None] = {}
    for number, text in enumerate(path.read_text().splitlines(), 1):
        m = MARK.search(text)
        if m:
            found[number] = m["fragment"]
    return found


def problems(found: dict[str, dict[int, list[str]]]) -> list[str]:
    """What differs from the corpus's expectations: an error in a pass program, a missed
    mark, a mark whose fragment is not in the message, an error on an unmarked line."""
    out: list[str] = []
    for path in programs("pass"):
        for line, messages in sorted(found.get(f"pass/{path.name}", {}).items()):
            out.append(f"pass/{path.name}:{line}: reported {messages}")
    for path in programs("fail"):
        name = f"fail/{path.name}"
        errors = found.get(name, {})
        expected = marks(path)
        if not expected:
            out.append(f"{name}: no '# E' mark")
        for line, fragment in expected.items():
            if line not in errors:
                out.append(f"{name}:{line}: marked, not reported")
            elif fragment and not any(fragment in m for m in errors[line]):
                out.append(f"{name}:{line}: reported without {fragment!r}: {errors[line]}")
        for line in sorted(set(errors) - set(expected)):
            out.append(f"{name}:{line}: not marked, reported {errors[line]}")
    return out


def computed_casts() -> dict[str, int]:
    """Per model, the casts its pyright twin needs that only state a computed size."""
    return {p.stem: p.read_text().count(COMPUTED_CAST) for p in programs("pyright")}


def needed(path: Path) -> dict[int, int]:
    """For each counted cast of a pyright twin, pyright's error count without it (0: the
    cast is not needed and must not be counted)."""
    root = HERE.parent.parent
    lines = path.read_text().splitlines()
    counts: dict[int, int] = {}
    for i, line in enumerate(lines):
        m = re.search(r"sg\.cast\((.*), Tensor\[[^()]*\]\)  " + COMPUTED_CAST, line)
        if m is None:
            continue
        variant = [*lines[:i], line[: m.start()] + m[1], *lines[i + 1 :]]
        trial = path.with_name(f"_without_cast_{path.stem}.py")
        trial.write_text("\n".join(variant) + "\n")
        try:
            result = subprocess.run(
                [str(BIN / "pyright"), "--pythonpath", sys.executable, "-p", "typecheck/pyrightconfig.json", str(trial)],
                capture_output=True,
                text=True,
                cwd=root,
                check=False,
            )
        finally:
            trial.unlink()
        n = re.search(r"(\d+) errors?", result.stdout)
        counts[i + 1] = int(n[1]) if n else -1
    return counts


def main() -> int:
    found = report()
    issues = problems(found)
    fail_marks = sum(len(marks(p)) for p in programs("fail"))
    print(f"pass programs: {len(programs('pass'))}, fail programs: {len(programs('fail'))}, marks: {fail_marks}")
    for issue in issues:
        print(issue)
    casts = computed_casts()
    left = {p.stem: p.read_text().count("sg.cast(") for p in programs("pass")}
    print("\n| model | casts pyright needs for computed sizes | casts under Pyrefly |\n| --- | ---: | ---: |")
    for model, n in casts.items():
        print(f"| {model} | {n} | {left.get(model, '?')} |")
    print(f"| total | {sum(casts.values())} | {sum(left.values())} |")
    if "--each-cast" in sys.argv:
        for path in programs("pyright"):
            for line, errors in needed(path).items():
                print(f"pyright/{path.name}:{line}: {errors} errors without this cast")
                issues += [f"pyright/{path.name}:{line}: the cast is not needed"] if errors == 0 else []
    return 1 if issues else 0


if __name__ == "__main__":
    raise SystemExit(main())
