"""Shared fixtures: every op, layer and optimizer test runs once per available backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import shapegrad as sg

BACKENDS = ["numpy", "strict", "cupy"]


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
    try:
        sg.get_backend(name)
    except sg.BackendError as exc:
        pytest.skip(str(exc))
    with sg.use_backend(name):
        yield name


@pytest.fixture
def numpy_backend() -> Iterator[str]:
    with sg.use_backend("numpy"):
        yield "numpy"
