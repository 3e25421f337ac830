"""sg.compile and the settings of installed packages the step calls: a library function that
reads a global of its own module (not one the step's code names) is code a replay does not
run, so the globals it read are compared before each replay, and a changed one records again
instead of replaying the value it had. Packages shapegrad itself drives (NumPy, numba, the
run-time checkers) are left out: their globals are their own caches."""

from __future__ import annotations

import gc
import importlib
import os
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import _compile_watch


@pytest.fixture(autouse=True)
def _records_on_numpy(numpy_backend: str) -> None:
    """sg.compile records on the NumPy backend only (see test_compile.py)."""


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory taken as ``site-packages``: a module written there is an installed
    package's, as ``pip install somelib`` (or the user's own package, without ``-e``) puts it."""
    root = str(tmp_path) + os.sep
    monkeypatch.setattr(_compile_watch, "_library", [(*_compile_watch._library_dirs(), root)])
    monkeypatch.setattr(_compile_watch, "_third_party", [(root,)])
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("sglib_"):
            del sys.modules[name]


def _write(root: Path, relative: str, source: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))


def _same_as_eager(step: Any, change: Any, x: Any) -> sg.CompiledStep[..., Any]:
    """Every call of the compiled ``step`` returns what ``step`` returns, ``change(i)`` before
    each; no warning (it replays or records again)."""
    compiled = sg.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for i in range(5):
            change(i)
            np.testing.assert_array_equal(compiled(x).numpy(), step(x).numpy(), err_msg=f"call {i}")
    return compiled


def _x() -> Any:
    """The steps' input, made on the NumPy backend the test runs on (not at import: the
    emulated-CuPy pass makes that backend the default)."""
    return sg.tensor(np.arange(4, dtype=np.float32))


def test_a_global_the_library_reads_itself_records_again_when_rebound(installed: Path) -> None:
    _write(
        installed,
        "sglib_scale.py",
        """
        FACTOR = 2.0

        def set_factor(value):
            global FACTOR
            FACTOR = value

        def scale(x):
            return x * FACTOR
        """,
    )
    sglib_scale: Any = importlib.import_module("sglib_scale")

    compiled = _same_as_eager(lambda x: sglib_scale.scale(x), lambda i: sglib_scale.set_factor(float(i // 2)), _x())
    assert len(compiled.recordings) == 3  # factors 0, 1 and 2, each replayed once


def test_a_setting_of_the_librarys_config_module_records_again_when_changed(installed: Path) -> None:
    _write(installed, "sglib_pkg/__init__.py", "from . import config, layers\n")
    _write(installed, "sglib_pkg/config.py", "DROPOUT_SCALE = 1.0\nACTIVATION = 'tanh'\n")
    _write(
        installed,
        "sglib_pkg/layers.py",
        """
        from . import config

        def block(x):
            y = x.tanh() if config.ACTIVATION == "tanh" else x.relu()
            return y * config.DROPOUT_SCALE
        """,
    )
    sglib_pkg: Any = importlib.import_module("sglib_pkg")

    def change(i: int) -> None:
        sglib_pkg.config.DROPOUT_SCALE = 0.5 if i >= 2 else 1.0
        sglib_pkg.config.ACTIVATION = "relu" if i >= 4 else "tanh"

    _same_as_eager(lambda x: sglib_pkg.layers.block(x - 1.5), change, _x())


def test_a_table_of_settings_the_library_changes_in_place_records_again(installed: Path) -> None:
    _write(
        installed,
        "sglib_table.py",
        """
        SETTINGS = {"scale": 1.0, "shift": 0}
        ORDER = [1, 2]

        def apply(x):
            return (x * SETTINGS["scale"] + SETTINGS["shift"]) * ORDER[0]
        """,
    )
    sglib_table: Any = importlib.import_module("sglib_table")

    def change(i: int) -> None:
        sglib_table.SETTINGS["scale"] = 2.0 if i >= 1 else 1.0
        sglib_table.SETTINGS["shift"] = 1 if i >= 3 else 0
        sglib_table.ORDER[0] = 3 if i >= 4 else 1

    _same_as_eager(lambda x: sglib_table.apply(x), change, _x())


def test_a_library_whose_settings_stay_is_replayed(installed: Path) -> None:
    _write(installed, "sglib_steady.py", "SCALE = 3.0\n\ndef scaled(x):\n    return x * SCALE\n")
    sglib_steady: Any = importlib.import_module("sglib_steady")

    compiled = _same_as_eager(lambda x: sglib_steady.scaled(x), lambda i: None, _x())
    (recording,) = compiled.recordings
    assert recording.replays == 4


def test_a_librarys_garbage_collection_callback_is_not_the_steps_code(installed: Path) -> None:
    """A callback in ``gc.callbacks`` (hypothesis times collections so) runs inside whatever
    code triggers a collection and changes its globals at each: not a setting of the step's,
    so the step is still replayed."""
    _write(
        installed,
        "sglib_gc.py",
        """
        COLLECTIONS = 0

        def on_gc(phase, info):
            global COLLECTIONS
            COLLECTIONS += 1
        """,
    )
    sglib_gc: Any = importlib.import_module("sglib_gc")
    gc.callbacks.append(sglib_gc.on_gc)
    try:

        def step(x: Any) -> Any:
            gc.collect()  # a collection inside the step's own code, the callback's caller
            return x * 2.0

        compiled = _same_as_eager(step, lambda i: None, _x())
    finally:
        gc.callbacks.remove(sglib_gc.on_gc)
    assert sglib_gc.COLLECTIONS >= 10
    (recording,) = compiled.recordings
    assert recording.replays == 4


def test_packages_shapegrad_drives_are_not_watched() -> None:
    """Their globals are their own caches and counters; the step's settings are not there."""
    assert not _compile_watch.third_party_file(np.__file__)
    assert not _compile_watch.third_party_file(sg.__file__)
    assert not _compile_watch.third_party_file(os.__file__)  # the standard library
    assert not _compile_watch.third_party_file("<stdin>")
    pytest_file = pytest.__file__
    assert _compile_watch.third_party_file(pytest_file) == ("site-packages" in pytest_file)
