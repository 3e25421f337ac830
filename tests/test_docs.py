"""The documentation site builds with ``mkdocs build --strict``: a broken reference, a page
missing from the navigation or a generated page that fails is a test failure."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

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
