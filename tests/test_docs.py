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


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the docs extra: pip install -e '.[docs]' (in '.[dev]')")
    exe = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    assert exe is not None
    site = tmp_path / "site"
    result = subprocess.run(
        [exe, "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    mistakes = (site / "generated" / "mistakes" / "index.html").read_text()
    assert "pyright:" in mistakes and "at run time:" in mistakes
    assert "shapegrad.Tensor" in (site / "api" / "tensor" / "index.html").read_text()
