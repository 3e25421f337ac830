"""Shared fixtures: every op, layer and optimizer test runs once per available backend."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import emulated_cupy

import shapegrad as sg
from shapegrad import _backend as _backend_module
from shapegrad_backends.cupy_backend import CupyBackend

# "emulated-cupy" runs the CuPy backend's own code over a NumPy stand-in for CuPy, so that
# CPU-only CI exercises it too; "cupy" is the real one and skips where no GPU answers.
BACKENDS = ["numpy", "strict", "cupy", "emulated-cupy"]


@functools.cache
def emulated_cupy_backend() -> CupyBackend:
    """The CuPy backend driving :mod:`emulated_cupy` instead of CuPy (one per session)."""
    return CupyBackend(module=emulated_cupy.make_module())


def default_backend_for_tests() -> str | None:
    """``SHAPEGRAD_TEST_DEFAULT_BACKEND=emulated-cupy`` makes the emulated CuPy the backend
    every test without a ``backend`` fixture runs on, as ``SHAPEGRAD_BACKEND=cupy`` does on a
    GPU machine: a CPU run of the whole suite then shows what would break there."""
    return os.environ.get("SHAPEGRAD_TEST_DEFAULT_BACKEND") or None


def pytest_configure(config: pytest.Config) -> None:
    if default_backend_for_tests() == "emulated-cupy":
        backend = emulated_cupy_backend()
        sg.set_backend(backend)
        # As SHAPEGRAD_BACKEND=cupy does: a thread the tests start begins on it too.
        _backend_module._default_backend = lambda: backend


# What the emulated-CuPy run (the README's test command's second step) leaves out: files whose
# tests do not depend on the default backend (pyright, ruff, the example scripts and the
# benchmark smoke runs start processes of their own). The command names tests/ alone, so the
# docstrings' examples under shapegrad/ run once, in the first step.
BACKEND_INDEPENDENT = (
    "test_typecheck.py",
    "test_typing_speed.py",
    "test_lint.py",
    "test_examples.py",
    "test_benchmarks.py",
    "test_docs.py",
)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if default_backend_for_tests() is None:
        return None
    return True if collection_path.name in BACKEND_INDEPENDENT else None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true", default=False, help="run the long sweeps too")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="long sweep: run with --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The name of a usable backend, active for the whole test; unusable ones are skipped
    with the reason the registry gives (no GPU, library missing)."""
    name: str = request.param
    if name == "emulated-cupy":
        with sg.use_backend(emulated_cupy_backend()):
            yield "cupy"
        return
    try:
        sg.get_backend(name)
    except sg.BackendError as exc:
        pytest.skip(str(exc))
    with sg.use_backend(name):
        yield name


@pytest.fixture
def direct_products(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``a @ bᵀ`` through BLAS's direct call, whatever this machine's BLAS measures
    faster (``shapegrad._products``): for tests of what a recording does with the direct one."""
    import shapegrad._products

    monkeypatch.setattr(shapegrad._products, "_swaps", lambda *layout: False)


@pytest.fixture
def numpy_backend() -> Iterator[str]:
    with sg.use_backend("numpy"):
        yield "numpy"
