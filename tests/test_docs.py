"""The documentation site builds with ``mkdocs build --strict``: a broken reference, a page
missing from the navigation or a generated page that fails is a test failure."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _build(site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` into ``site``, at mkdocs' default log level: ``-q`` would
    raise it to errors, and strict mode then counts no warnings (the build passed while
    griffe warned ten times)."""
    pytest.importorskip("mkdocs", reason="the docs extra: pip install -e '.[docs]' (in '.[dev]')")
    exe = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    assert exe is not None
    return subprocess.run(
        [exe, "build", "--strict", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


def test_the_site_builds_strictly_without_a_warning(tmp_path: Path) -> None:
    """issue #24 item 18: a docstring griffe cannot parse (several parameters on one line)
    is a warning, and a warning fails the build."""
    site = tmp_path / "site"
    result = _build(site)
    log = result.stdout + result.stderr
    warnings = [line for line in log.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert result.returncode == 0 and not warnings, "\n".join(warnings) or log[-3000:]
    mistakes = (site / "generated" / "mistakes" / "index.html").read_text()
    assert "pyright:" in mistakes and "at run time:" in mistakes
    assert "shapegrad.Tensor" in (site / "api" / "tensor" / "index.html").read_text()
    linear = (site / "api" / "nn" / "index.html").read_text()
    assert "in_features, out_features" not in linear  # one row per parameter


def migration_blocks() -> dict[str, str]:
    """The titled Python blocks of docs/migration.md, by title."""
    text = (ROOT / "docs" / "migration.md").read_text()
    return dict(re.findall(r'```python title="(.*?)"\n(.*?)```', text, re.S))


def test_migration_port_runs_and_matches_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """issue #25: the migration page's worked port runs as written: the PyTorch program
    saves safetensors, the shapegrad one loads it with from_torch and trains on, and the
    check finds the same outputs."""
    pytest.importorskip("torch", reason="the port starts from a PyTorch model: pip install -e '.[dev,torch]'")
    blocks = migration_blocks()
    assert list(blocks) == ["pytorch_cnn.py", "shapegrad_cnn.py", "check.py"]
    monkeypatch.chdir(tmp_path)
    theirs: dict[str, Any] = {"__name__": "pytorch_cnn"}
    exec(compile(blocks["pytorch_cnn.py"], "pytorch_cnn.py", "exec"), theirs)
    ours: dict[str, Any] = {"__name__": "shapegrad_cnn"}
    exec(compile(blocks["shapegrad_cnn.py"], "shapegrad_cnn.py", "exec"), ours)
    assert ours["loss"].item() > 0
    exec(compile(blocks["check.py"], "check.py", "exec"), {**theirs, **ours})
