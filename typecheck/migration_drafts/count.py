"""Count pyright's strict errors in each first draft, against whichever shapegrad is on
PYTHONPATH (so the same drafts can be counted at an older commit and again on main):

    PYTHONPATH=/path/to/checkout python typecheck/migration_drafts/count.py [-v]

The settings are typecheck/pyrightconfig.json's (strict, unused names not reported), with no
extra paths: shapegrad is found through PYTHONPATH only. ``-v`` also prints every error."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DRAFTS = sorted(p for p in HERE.glob("*.py") if p.name != "count.py")


def pyright() -> str:
    exe = shutil.which("pyright", path=str(Path(sys.executable).parent)) or shutil.which("pyright")
    if exe is None:
        sys.exit("pyright is not installed: pip install -e '.[dev]' brings pyright[nodejs]")
    return exe


def errors_by_draft() -> dict[str, list[str]]:
    """Every pyright error in the drafts, as 'line: message', by draft name."""
    config = json.loads((HERE.parent / "pyrightconfig.json").read_text())
    config["extraPaths"] = []
    config.pop("exclude", None)  # the corpus leaves these drafts out; here they are the subject
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "pyrightconfig.json").write_text(json.dumps(config))
        command = [pyright(), "--pythonpath", sys.executable, "--outputjson", "-p", tmp, *map(str, DRAFTS)]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    report = json.loads(result.stdout)
    found: dict[str, list[str]] = {p.stem: [] for p in DRAFTS}
    for item in report["generalDiagnostics"]:
        if item["severity"] == "error":
            name = Path(item["file"]).stem
            message = item["message"].splitlines()[0]
            found[name].append(f"{item['range']['start']['line'] + 1}: {message}")
    return found


def main() -> None:
    import shapegrad

    verbose = "-v" in sys.argv[1:]
    found = errors_by_draft()
    print(f"shapegrad from {Path(shapegrad.__file__).parent.parent}")
    for name, errors in found.items():
        print(f"{name:12} {len(errors):4} errors on {len(lines(errors)):3} lines")
        if verbose:
            for error in errors:
                print(f"    {error}")
    total = sum(len(e) for e in found.values())
    print(f"{'total':12} {total:4} errors on {sum(len(lines(e)) for e in found.values()):3} lines")


def lines(errors: list[str]) -> set[str]:
    """The lines reported (one mistake often draws several errors, Unknown ones downstream)."""
    return {error.split(":", 1)[0] for error in errors}


if __name__ == "__main__":
    main()
