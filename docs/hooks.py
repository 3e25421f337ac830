"""mkdocs hook: the pages that must stay true are generated at every build, never edited.

- the getting-started, concepts and data-parallel pages: sections of README.md;
- one page per example model: its docstring and its source;
- the common-mistakes page: every program of ``typecheck/fail/`` with the mistake (its
  docstring), the message pyright gives at its marked line, and the error it raises at run
  time with checks on;
- the benchmark page: ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import json
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "generated"
MODELS = {
    "digits": ("Digits: a typed MLP and CNN", "train_digits.py"),
    "gpt": ("A character-level GPT", "gpt.py"),
    "resnet": ("ResNet", "resnet.py"),
    "vae": ("A variational autoencoder", "vae.py"),
    "distributed-digits": ("Digits, data-parallel over MPI", "train_digits_distributed.py"),
}


def _section(readme: str, title: str) -> str:
    found = re.search(r"^## " + re.escape(title) + r"\n(.*?)(?=^## |\Z)", readme, re.S | re.M)
    if found is None:
        raise ValueError(f"README.md has no section {title!r}")
    return found.group(1).strip()


def _pyright_messages(folder: Path) -> dict[tuple[str, int], str]:
    exe = shutil.which("pyright", path=str(Path(sys.executable).parent)) or shutil.which("pyright")
    if exe is None:
        raise RuntimeError("pyright is not installed: pip install -e '.[dev]'")
    config = ROOT / "typecheck" / "pyrightconfig.json"
    result = subprocess.run(
        [exe, "--pythonpath", sys.executable, "--outputjson", "-p", str(config), str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    messages: dict[tuple[str, int], str] = {}
    for d in json.loads(result.stdout)["generalDiagnostics"]:
        if d["severity"] == "error":
            key = (Path(d["file"]).name, d["range"]["start"]["line"] + 1)
            messages.setdefault(key, d["message"].splitlines()[0])
    return messages


def _runtime_message(path: Path) -> str:
    import shapegrad as sg

    namespace = runpy.run_path(str(path), run_name=f"docs_{path.stem}")
    try:
        with sg.use_backend("numpy"):
            namespace["main"]()
    except Exception as exc:
        first = str(exc).strip().splitlines()
        return f"{type(exc).__name__}: {first[0] if first else ''}"
    return "(runs: this mistake is caught by pyright only)"


def _mistakes() -> str:
    fail = ROOT / "typecheck" / "fail"
    pyright = _pyright_messages(fail)
    rows = [
        "# Common mistakes and what pyright says",
        "",
        "Every program in `typecheck/fail/` makes one mistake; this page is generated from them at",
        "each docs build: the mistake, the line pyright marks with its message, and what the same",
        "program raises at run time with checks on. The test suite checks both messages.",
        "",
    ]
    for path in sorted(fail.glob("*.py")):
        source = path.read_text()
        doc = re.match(r'r?"""(.*?)"""', source, re.S)
        mistake = (doc.group(1).split("\n\n")[0] if doc else path.stem).strip()
        marked = [i + 1 for i, line in enumerate(source.splitlines()) if re.search(r"#\s*E(:|$)", line.rstrip())]
        rows += [f"## {path.stem.replace('_', ' ')}", "", mistake, ""]
        for line in marked:
            code = re.split(r"#\s*E(:|$)", source.splitlines()[line - 1])[0].strip()
            message = pyright.get((path.name, line), "(no message)")
            rows += ["```python", code, "```", "", f"pyright: `{message}`", ""]
        if "runtime:" in source:
            rows += [f"at run time: `{_runtime_message(path)}`", ""]
    return "\n".join(rows) + "\n"


def _model_page(title: str, script: str) -> str:
    source = (ROOT / "examples" / script).read_text()
    doc = re.match(r'"""(.*?)"""', source, re.S)
    text = doc.group(1).strip() if doc else ""
    return f"# {title}\n\n{text}\n\nThe whole script, `examples/{script}`:\n\n```python\n{source}```\n"


def on_pre_build(config: Any, **kwargs: Any) -> None:
    """Write every generated page before mkdocs collects the files."""
    readme = (ROOT / "README.md").read_text()
    (OUT / "models").mkdir(parents=True, exist_ok=True)
    intro = readme.split("\n## ")[0].replace("# shapegrad", "# shapegrad: getting started", 1)
    pages = {
        "index.md": f"{intro}\n\n## A first model\n\n{_section(readme, 'A first model')}\n\n"
        f"## Example models\n\n{_section(readme, 'Example models')}\n\n## Backends\n\n{_section(readme, 'Backends')}\n",
        "concepts.md": f"# Concepts\n\n{_section(readme, 'Concepts')}\n\n## What there is\n\n"
        f"{_section(readme, 'What there is')}\n",
        "distributed.md": f"# Data-parallel training\n\n{_section(readme, 'Data-parallel training (MPI, NCCL)')}\n",
        "mistakes.md": _mistakes(),
        "benchmarks.md": (ROOT / "benchmarks" / "RESULTS.md").read_text(),
    }
    for name, (title, script) in MODELS.items():
        pages[f"models/{name}.md"] = _model_page(title, script)
    for name, text in pages.items():
        (OUT / name).write_text(text)
