"""``sg.compile``: state a step reads through objects built in C (an ``lru_cache``'s results,
a context variable, a buffer's bytes, a PyTorch tensor, an ``attrgetter`` made outside the
step, a format string's fields, a logger's level, a module made at run time). Each was baked
into the recording unseen, and a replay after the caller changed it gave the recorded value,
silently; each now records again where it changed and replays where it did not."""

from __future__ import annotations

import array
import contextvars
import ctypes
import functools
import logging
import multiprocessing
import operator
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import shapegrad as sg


@pytest.fixture(autouse=True)
def _records_on_numpy(numpy_backend: str) -> None:
    """sg.compile records on the NumPy backend only (see test_compile.py)."""


class Settings:
    """A settings object of the kind a program makes once and changes in place."""

    def __init__(self) -> None:
        self.scale = 1.0
        self.gain = 1.0
        self.act = "relu"


# A case: (the step, what the caller changes between calls given the call's number).
Case = tuple[Callable[[Any], Any], Callable[[int], None]]


def _lru_cached(maxsize: int | None) -> Case:
    @functools.lru_cache(maxsize=maxsize)
    def settings() -> Settings:
        return Settings()

    return (lambda x: x * settings().scale), lambda i: setattr(settings(), "scale", float(i))


def _context_variable_set() -> Case:
    scale = contextvars.ContextVar("scale", default=1.0)
    return (lambda x: x * scale.get()), lambda i: scale.set(float(i)) and None


def _context_variable_mutated() -> Case:
    current = contextvars.ContextVar[Settings]("settings")
    current.set(Settings())
    return (lambda x: x * current.get().scale), lambda i: setattr(current.get(), "scale", float(i))


def _attrgetter() -> Case:
    settings, read = Settings(), operator.attrgetter("gain", "scale")

    def step(x: Any) -> Any:
        gain, scale = read(settings)
        return x * gain * scale

    return step, lambda i: setattr(settings, "gain", float(i))


def _methodcaller() -> Case:
    schedule, ask = types.SimpleNamespace(), operator.methodcaller("current", warm=True)

    def replace(i: int) -> None:  # the schedule's function replaced: its name is read in C
        schedule.current = lambda *, warm=False: float(i) * (0.5 if warm else 1.0)

    return (lambda x: x * ask(schedule)), replace


def _format_field() -> Case:
    settings = Settings()

    def step(x: Any) -> Any:
        return x.relu() if "{0.act}".format(settings) == "relu" else x.tanh()  # noqa: UP030, UP032 -- str.format's lookup

    return step, lambda i: setattr(settings, "act", "relu" if i == 1 else f"tanh ({i})")


def _mapping_proxy() -> Case:
    values = {"scale": 1.0}
    view = types.MappingProxyType(values)
    return (lambda x: x * view["scale"]), lambda i: values.__setitem__("scale", float(i))


def _buffer(make: Callable[[], Any]) -> Callable[[], Case]:
    def case() -> Case:
        held = make()
        return (lambda x: x * float(held[0])), lambda i: held.__setitem__(0, i % 200)

    return case


def _ctypes_value() -> Case:
    value = ctypes.c_double(1.0)
    return (lambda x: x * value.value), lambda i: setattr(value, "value", float(i))


def _shared_value() -> Case:
    value = multiprocessing.Value("d", 1.0)  # a rate a controller process sets
    return (lambda x: x * value.value), lambda i: setattr(value, "value", float(i))


def _memoryview_of_an_array() -> Case:
    table = np.ones(4)
    view = memoryview(table)
    return (lambda x: x * view[0]), lambda i: table.__setitem__(0, float(i))


def _dynamic_module() -> Case:
    module = types.ModuleType("shapegrad_test_dynamic_settings")
    module.SCALE = 1.0  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module

    def step(x: Any) -> Any:
        import shapegrad_test_dynamic_settings  # type: ignore[import-not-found]  # noqa: PLC0415

        return x * shapegrad_test_dynamic_settings.SCALE  # type: ignore[reportUnknownMemberType]

    return step, lambda i: setattr(module, "SCALE", float(i))


CASES: dict[str, Callable[[], Case]] = {
    "functools.cache": lambda: _lru_cached(None),
    "functools.lru_cache(): bounded": lambda: _lru_cached(128),
    "a context variable set": _context_variable_set,
    "an object in a context variable": _context_variable_mutated,
    "operator.attrgetter": _attrgetter,
    "operator.methodcaller": _methodcaller,
    "a format string's field": _format_field,
    "types.MappingProxyType": _mapping_proxy,
    "array.array": _buffer(lambda: array.array("d", [1.0])),
    "bytearray": _buffer(lambda: bytearray(b"\x01\x02")),
    "ctypes.c_double": _ctypes_value,
    "multiprocessing.Value": _shared_value,
    "a memoryview of an array": _memoryview_of_an_array,
    "a module made at run time": _dynamic_module,
}


@pytest.mark.parametrize("name", CASES)
def test_state_read_through_an_object_built_in_c_records_again_when_changed(name: str) -> None:
    """Changed before every second call: records again there, replays the call after it."""
    results: list[list[float]] = []
    compiled: Any = None
    for compile_it in (False, True):
        step, change = CASES[name]()
        run = sg.compile(step) if compile_it else step
        compiled = run
        with warnings.catch_warnings():
            warnings.simplefilter("error", sg.CompileWarning)  # no eager fallback either
            ours: list[float] = []
            for i in range(8):
                if i % 2 == 0:
                    change(i + 1)
                ours.append(float(run(sg.full((2,), 0.5)).sum().item()))
        results.append(ours)
    assert results[1] == results[0]
    assert compiled.eager_reason is None
    assert sum(r.replays for r in compiled.recordings) == 4  # calls 1, 3, 5, 7: nothing changed


def test_a_pytorch_scalar_read_with_item_in_the_step_records_again_when_written() -> None:
    """A ported model's ``logit_scale`` kept in a PyTorch module and read with ``.item()``
    inside the step, written in place between calls (``add_`` under ``torch.no_grad()``)."""
    torch = pytest.importorskip("torch")
    holder = torch.nn.Module()
    holder.logit_scale = torch.nn.Parameter(torch.tensor(1.0))

    def step(similarity: Any) -> Any:
        return (similarity * holder.logit_scale.exp().item()).softmax(axis=-1)

    compiled, x = sg.compile(step), sg.tensor(np.array([[1.0, 2.0, 3.0]], np.float32))
    for i in range(6):
        if i % 2 == 0:
            with torch.no_grad():
                holder.logit_scale.add_(0.5)
        assert compiled(x).tolist() == step(x).tolist(), f"call {i}"
    assert compiled.eager_reason is None
    assert sum(r.replays for r in compiled.recordings) == 3


def test_a_loggers_level_set_between_calls_records_again() -> None:
    """``isEnabledFor`` inside the step, the level set by the caller between calls: the
    logger's own cache of the answer, emptied by ``setLevel`` and filled again in the step,
    made the step look as if it changed what it reads, and it ran eagerly."""
    log = logging.getLogger("shapegrad.tests.compile_holders")

    def step(x: Any) -> Any:
        return x * (3.0 if log.isEnabledFor(logging.DEBUG) else 2.0)

    compiled = sg.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for i in range(8):
            log.setLevel(logging.DEBUG if i % 4 < 2 else logging.INFO)
            assert compiled(sg.ones(2)).tolist() == step(sg.ones(2)).tolist(), f"call {i}"
    assert compiled.eager_reason is None
    assert sum(r.replays for r in compiled.recordings) >= 4


def test_a_file_module_imported_only_inside_the_step(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``import settings`` inside the step, the module no global of the step's file: its
    ``SCALE`` set between calls records again."""
    (tmp_path / "shapegrad_test_inner_settings.py").write_text("SCALE = 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def step(x: Any) -> Any:
        import shapegrad_test_inner_settings  # type: ignore[import-not-found]  # noqa: PLC0415

        return x * shapegrad_test_inner_settings.SCALE  # type: ignore[reportUnknownMemberType]

    step(sg.ones(2))
    module = sys.modules["shapegrad_test_inner_settings"]
    compiled = sg.compile(step)
    for i in range(6):
        if i % 2 == 0:
            module.SCALE = float(i + 2)
        assert compiled(sg.ones(2)).tolist() == step(sg.ones(2)).tolist(), f"call {i}"
    assert sum(r.replays for r in compiled.recordings) == 3
