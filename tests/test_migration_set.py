"""issue #23's migration set: public PyTorch models ported to shapegrad
(typecheck/pass/migration/, checked by pyright in tests/test_typecheck.py) also run: each
port's main() takes a couple of training steps on tiny random data."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PORTS = sorted((ROOT / "typecheck" / "pass" / "migration").glob("*.py"))
DRAFTS = ROOT / "typecheck" / "migration_drafts"


def test_the_set_has_its_six_ports_each_with_its_first_draft() -> None:
    names = [p.stem for p in PORTS]
    assert names == ["dcgan", "makemore", "mnist_cnn", "nanogpt", "style", "word_lm"]
    assert all((DRAFTS / p.name).is_file() for p in PORTS)


@pytest.mark.parametrize("path", PORTS, ids=lambda p: p.stem)
def test_port_trains(path: Path) -> None:
    namespace = runpy.run_path(str(path), run_name=f"migration_{path.stem}")
    namespace["main"]()
