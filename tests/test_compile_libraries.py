"""sg.compile and the settings of installed packages the step calls: a library function that
reads a global of its own module (not one the step's code names), an attribute of its classes
or of its settings objects, its closure's variables or its defaults, is code a replay does not
run, so what it read is compared before each replay, and a changed one records again instead
of replaying the value it had. Packages shapegrad itself drives (NumPy, numba, the
run-time checkers) are left out: their globals are their own caches."""

from __future__ import annotations

import gc
import importlib
import logging
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


def test_a_class_attribute_the_library_reads_records_again_when_rebound(installed: Path) -> None:
    """``Config.SCALE`` read by the library's function, or ``self.FACTOR`` by a method of an
    object of the library's class that the step holds."""
    _write(
        installed,
        "sglib_classes.py",
        """
        class Config:
            SCALE = 2.0

        def scale(x):
            return x * Config.SCALE

        class Scaler:
            FACTOR = 2.0

            def __call__(self, x):
                return x * self.FACTOR
        """,
    )
    sglib: Any = importlib.import_module("sglib_classes")
    scaler = sglib.Scaler()

    def change(i: int) -> None:
        sglib.Config.SCALE = float(i // 2)
        sglib.Scaler.FACTOR = float(i % 3)

    _same_as_eager(lambda x: scaler(sglib.scale(x)), change, _x())


def test_an_attribute_of_the_librarys_config_object_records_again_when_changed(installed: Path) -> None:
    """A global settings object of the library's (a dataclass nested in another, a
    ``SimpleNamespace``, an object with ``__slots__`` holding a dict of settings), changed in
    place."""
    _write(
        installed,
        "sglib_objects.py",
        """
        import dataclasses
        import types

        @dataclasses.dataclass
        class Model:
            scale: float = 2.0

        @dataclasses.dataclass
        class Config:
            model: Model = dataclasses.field(default_factory=Model)

        class Options:
            __slots__ = ("table", "offset")

            def __init__(self):
                self.table = {"shift": 0.0}
                self.offset = 0.0

        CONFIG = Config()
        FLAGS = types.SimpleNamespace(power=1.0)
        OPTIONS = Options()

        def apply(x):
            return (x * CONFIG.model.scale + OPTIONS.table["shift"] + OPTIONS.offset) ** FLAGS.power
        """,
    )
    sglib: Any = importlib.import_module("sglib_objects")

    def change(i: int) -> None:
        sglib.CONFIG.model.scale = 3.0 if i >= 1 else 2.0
        sglib.OPTIONS.table["shift"] = 1.0 if i >= 2 else 0.0
        sglib.OPTIONS.offset = 1.0 if i >= 3 else 0.0
        sglib.FLAGS.power = 2.0 if i >= 4 else 1.0

    compiled = _same_as_eager(lambda x: sglib.apply(x), change, _x())
    assert len(compiled.recordings) == 5


def test_a_librarys_closure_and_defaults_record_again_when_changed(installed: Path) -> None:
    """A variable of the function that made the library's function, and a default argument
    changed in place: however the step reached the function."""
    _write(
        installed,
        "sglib_closures.py",
        """
        def make():
            box = [2.0]

            def apply(x):
                return x * box[0]

            def set_factor(value):
                box[0] = value

            return apply, set_factor

        def shifted(x, options={"shift": 0.0}):
            return x + options["shift"]
        """,
    )
    sglib: Any = importlib.import_module("sglib_closures")
    apply, set_factor = sglib.make()

    def change(i: int) -> None:
        set_factor(float(i // 2))
        sglib.shifted.__defaults__[0]["shift"] = float(i % 2)

    _same_as_eager(lambda x: sglib.shifted(apply(x)), change, _x())


def test_a_library_context_manager_entered_through_contextlib_is_the_steps_code(installed: Path) -> None:
    """``@contextlib.contextmanager``: the library's generator runs under the standard
    library's ``__enter__``, yet the step called it, and the globals it read are compared."""
    _write(
        installed,
        "sglib_context.py",
        """
        import contextlib

        FACTOR = 2.0

        @contextlib.contextmanager
        def scaled():
            yield FACTOR
        """,
    )
    sglib: Any = importlib.import_module("sglib_context")

    def step(x: Any) -> Any:
        with sglib.scaled() as factor:
            return x * factor

    def change(i: int) -> None:
        sglib.FACTOR = float(i // 2)

    _same_as_eager(step, change, _x())


def test_a_librarys_layer_run_by_sequential_is_the_steps_code(installed: Path) -> None:
    """A layer class of an installed package (the user's own, installed without ``-e``) in an
    ``nn.Sequential``: shapegrad's code calls it, for the step; its instance and class
    attributes and its module's globals are compared."""
    _write(
        installed,
        "sglib_layers.py",
        """
        import shapegrad as sg

        GAIN = 1.0

        class Gain(sg.nn.Layer):
            BETA = 1.0

            def __init__(self):
                self.alpha = 1.0

            def __call__(self, x):
                return x * self.alpha * self.BETA * GAIN
        """,
    )
    sglib: Any = importlib.import_module("sglib_layers")
    layer = sglib.Gain()
    model = sg.nn.Sequential(layer, layer)

    def change(i: int) -> None:
        layer.alpha = 2.0 if i >= 1 else 1.0
        sglib.Gain.BETA = 2.0 if i >= 2 else 1.0
        sglib.GAIN = 2.0 if i >= 3 else 1.0

    compiled = _same_as_eager(lambda x: model(x), change, _x())
    assert len(compiled.recordings) == 4


def test_the_environment_and_a_context_variable_the_library_reads_record_again_when_changed(
    installed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``os.environ.get("SGLIB_SCALE")`` and a ``ContextVar`` (``with somelib.scaled(2)``) read
    inside the library."""
    _write(
        installed,
        "sglib_context_state.py",
        """
        import contextvars
        import os

        SHIFT = contextvars.ContextVar("shift", default=0.0)

        def apply(x):
            return x * float(os.environ.get("SGLIB_SCALE", "1")) + SHIFT.get()
        """,
    )
    sglib: Any = importlib.import_module("sglib_context_state")

    def change(i: int) -> None:
        monkeypatch.setenv("SGLIB_SCALE", str(i // 2))
        sglib.SHIFT.set(float(i % 2))

    _same_as_eager(lambda x: sglib.apply(x), change, _x())


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("import random\n\ndef apply(x):\n    return x * random.random()\n", "random"),
        ("import random\n\ndef apply(x):\n    return x * random.uniform(1, 2)\n", "random"),
        ("import time\n\ndef apply(x):\n    return x + time.time() % 1\n", "clock"),
        (
            "import numpy as np\n\nRNG = np.random.default_rng(0)\n\ndef apply(x):\n    return x * float(RNG.random())\n",
            "NumPy generator",
        ),
    ],
    ids=["random", "random-python", "clock", "numpy-generator"],
)
def test_a_draw_or_a_clock_read_in_the_librarys_code_runs_the_step_eagerly(
    installed: Path, source: str, reason: str
) -> None:
    """A replay would reuse the number the recording's call drew: the step runs eagerly, with
    the warning, as for a draw in the step's own code."""
    _write(installed, "sglib_draws.py", source)
    sglib: Any = importlib.import_module("sglib_draws")
    compiled = sg.compile(lambda x: sglib.apply(x))
    with pytest.warns(sg.CompileWarning, match=reason):
        compiled(_x())
    firsts = {float(compiled(_x()).numpy()[1]) for _ in range(3)}
    assert len(firsts) == 3  # fresh at every call, as eager
    assert not compiled.recordings


def test_a_librarys_module_under_the_run_time_checks_is_the_steps_code(installed: Path) -> None:
    """An ``nn.Module`` subclass of an installed package runs under the run-time checks'
    wrapper (jaxtyping's code): still code the step called, whose globals, class attributes
    and draws are watched."""
    _write(
        installed,
        "sglib_modules.py",
        """
        import random

        import shapegrad as sg

        GAIN = 1.0

        class Scaled(sg.nn.Module):
            SCALE = 1.0

            def __call__(self, x):
                return x * self.SCALE * GAIN

        class Noisy(sg.nn.Module):
            def __call__(self, x):
                return x * random.random()
        """,
    )
    sglib: Any = importlib.import_module("sglib_modules")
    scaled, noisy = sglib.Scaled(), sglib.Noisy()

    def change(i: int) -> None:
        sglib.Scaled.SCALE = float(i // 2)
        sglib.GAIN = 2.0 if i >= 3 else 1.0

    _same_as_eager(lambda x: scaled(x), change, _x())
    compiled = sg.compile(lambda x: noisy(x))
    with pytest.warns(sg.CompileWarning, match="random"):
        firsts = {float(compiled(_x()).numpy()[1]) for _ in range(3)}
    assert len(firsts) == 3


@pytest.mark.parametrize("function", ["counter", "cycle", "generator"])
def test_state_the_library_advances_at_every_call_runs_the_step_eagerly(installed: Path, function: str) -> None:
    """``STEP += 1`` in the library, ``next()`` of an ``itertools.cycle`` or a generator it
    keeps: the step changes what it reads at every call, which a replay would not do."""
    _write(
        installed,
        "sglib_advances.py",
        """
        import itertools

        STEP = 0

        def counter(x):
            global STEP
            STEP += 1
            return x * STEP

        SCHEDULE = itertools.cycle([1.0, 2.0, 3.0, 4.0])

        def cycle(x):
            return x * next(SCHEDULE)

        def _rates():
            k = 0
            while True:
                k += 1
                yield float(k)

        RATES = _rates()

        def generator(x):
            return x * next(RATES)
        """,
    )
    sglib: Any = importlib.import_module("sglib_advances")
    fn = getattr(sglib, function)
    compiled = sg.compile(lambda x: fn(x))
    with pytest.warns(sg.CompileWarning, match="changes what it reads at every call"):
        outs = [compiled(_x()).numpy() for _ in range(4)]
    np.testing.assert_array_equal(outs[3], _x().numpy() * 4.0)  # eager: x * 1, x * 2, x * 3, x * 4


@pytest.mark.parametrize(
    "function", ["local", "array_item", "built_name", "cached", "level", "ordered", "attribute_dict"]
)
def test_what_the_library_reads_through_holders_records_again_when_changed(
    installed: Path, monkeypatch: pytest.MonkeyPatch, function: str
) -> None:
    """A ``threading.local``, a small array read as a number, an attribute read by a name
    built at run time, an ``lru_cache``'s result made again, a logger's level, an
    ``OrderedDict`` and a dict with attribute access."""
    _write(
        installed,
        "sglib_holders.py",
        """
        import collections
        import functools
        import logging
        import os
        import threading
        import types

        import numpy as np

        _STATE = threading.local()
        _STATE.scale = 1.0

        def local(x):
            return x * _STATE.scale

        GAINS = np.ones(4, dtype=np.float32)

        def array_item(x):
            return x * float(GAINS[0])

        WEIGHTS = types.SimpleNamespace(mse_weight=1.0)

        def built_name(x, term="mse"):
            return x * getattr(WEIGHTS, term + "_weight")

        class Settings:
            def __init__(self):
                self.scale = float(os.environ.get("SGLIB_SCALE", "1"))

        @functools.lru_cache(None)
        def get_settings():
            return Settings()

        def cached(x):
            return x * get_settings().scale

        logger = logging.getLogger("sglib_holders")

        def level(x):
            return x * (0.5 if logger.getEffectiveLevel() <= logging.INFO else 1.0)

        TABLE = collections.OrderedDict(scale=1.0)

        def ordered(x):
            return x * TABLE["scale"]

        class AttributeDict(dict):
            __getattr__ = dict.__getitem__

        CONFIG = AttributeDict(scale=1.0)

        def attribute_dict(x):
            return x * CONFIG.scale
        """,
    )
    sglib: Any = importlib.import_module("sglib_holders")
    sglib.get_settings()  # made before the step is compiled

    def cached_change(i: int) -> None:
        if i == 2:
            monkeypatch.setenv("SGLIB_SCALE", "3")
            sglib.get_settings.cache_clear()

    changes: dict[str, Any] = {
        "local": lambda i: setattr(sglib._STATE, "scale", float(i // 2)),
        "array_item": lambda i: sglib.GAINS.fill(float(i // 2)),
        "built_name": lambda i: setattr(sglib.WEIGHTS, "mse_weight", float(i // 2)),
        "cached": cached_change,
        "level": lambda i: sglib.logger.setLevel(logging.DEBUG if i >= 2 else logging.WARNING),
        "ordered": lambda i: sglib.TABLE.__setitem__("scale", float(i // 2)),
        "attribute_dict": lambda i: sglib.CONFIG.__setitem__("scale", float(i // 2)),
    }
    fn = getattr(sglib, function)
    try:
        _same_as_eager(lambda x: fn(x), changes[function], _x())
    finally:
        sglib.logger.setLevel(logging.NOTSET)


def test_a_global_the_library_reads_through_globals_records_again_when_rebound(installed: Path) -> None:
    """``globals()["SCALE_" + act]``: a name built at run time, so each of its module's
    globals is compared."""
    _write(
        installed,
        "sglib_by_name.py",
        """
        SCALE_relu = 2.0

        def apply(x, act="relu"):
            return x * globals()["SCALE_" + act]
        """,
    )
    sglib: Any = importlib.import_module("sglib_by_name")
    _same_as_eager(lambda x: sglib.apply(x), lambda i: setattr(sglib, "SCALE_relu", float(i // 2)), _x())


def test_a_config_module_the_library_imports_inside_a_function_records_again_when_changed(installed: Path) -> None:
    """``from . import config`` (or ``from .config import SCALE``) inside the function: the
    module is a local there, not a global, and its settings are compared all the same."""
    _write(installed, "sglib_lazy/__init__.py", "")
    _write(installed, "sglib_lazy/config.py", "SCALE = 1.0\nSHIFT = 0.0\n")
    _write(
        installed,
        "sglib_lazy/ops.py",
        """
        def apply(x):
            from . import config
            from .config import SHIFT

            return x * config.SCALE + SHIFT
        """,
    )
    ops: Any = importlib.import_module("sglib_lazy.ops")
    config: Any = importlib.import_module("sglib_lazy.config")

    def change(i: int) -> None:
        config.SCALE = float(i // 2)
        config.SHIFT = float(i % 2)

    _same_as_eager(lambda x: ops.apply(x), change, _x())


@pytest.mark.parametrize("method", ["__call__", "forward"])
def test_a_library_classs_method_patched_between_calls_records_again(installed: Path, method: str) -> None:
    _write(
        installed,
        "sglib_patched.py",
        """
        class Plain:
            def __call__(self, x):
                return x * 2.0

            def forward(self, x):
                return x * 2.0
        """,
    )
    sglib: Any = importlib.import_module("sglib_patched")
    obj = sglib.Plain()
    original = getattr(sglib.Plain, method)

    def change(i: int) -> None:
        setattr(sglib.Plain, method, (lambda self, x: x * 3.0) if i >= 2 else original)

    step = (lambda x: obj(x)) if method == "__call__" else (lambda x: obj.forward(x))
    _same_as_eager(step, change, _x())


@pytest.mark.parametrize(
    "function", ["registry", "nested", "partial", "bound_get", "read_only", "chained", "reference", "context_default"]
)
def test_settings_held_in_a_librarys_containers_and_wrappers_record_again_when_changed(
    installed: Path, monkeypatch: pytest.MonkeyPatch, function: str
) -> None:
    """An object in a registry, a dict in a dict, ``functools.partial(os.getenv, ...)``, a
    dict's bound ``get``, a ``MappingProxyType``, a ``ChainMap``, a weak reference and a
    ``ContextVar``'s own default object: followed to the setting that changes."""
    _write(
        installed,
        "sglib_wrapped.py",
        """
        import collections
        import contextvars
        import functools
        import os
        import types
        import weakref

        class Setting:
            def __init__(self, value):
                self.value = value

        REGISTRY = {"scale": Setting(1.0)}
        DEFAULTS = {"model": {"scale": 1.0}}
        _getenv = functools.partial(os.getenv, "SGLIB_WRAPPED", "1")
        _SCALES = {"scale": 1.0}
        _lookup = _SCALES.get
        _VIEWED = {"scale": 1.0}
        VIEW = types.MappingProxyType(_VIEWED)
        _OVERRIDES = {}
        CHAIN = collections.ChainMap(_OVERRIDES, {"scale": 1.0})
        _TARGET = Setting(1.0)
        _REF = weakref.ref(_TARGET)
        _CURRENT = contextvars.ContextVar("current", default=Setting(1.0))

        def registry(x):
            return x * REGISTRY["scale"].value

        def nested(x):
            return x * DEFAULTS["model"]["scale"]

        def partial(x):
            return x * float(_getenv())

        def bound_get(x):
            return x * _lookup("scale")

        def read_only(x):
            return x * VIEW["scale"]

        def chained(x):
            return x * CHAIN["scale"]

        def reference(x):
            return x * _REF().value

        def context_default(x):
            return x * _CURRENT.get().value
        """,
    )
    sglib: Any = importlib.import_module("sglib_wrapped")
    changes: dict[str, Any] = {
        "registry": lambda i: setattr(sglib.REGISTRY["scale"], "value", float(i // 2)),
        "nested": lambda i: sglib.DEFAULTS["model"].__setitem__("scale", float(i // 2)),
        "partial": lambda i: monkeypatch.setenv("SGLIB_WRAPPED", str(i // 2)),
        "bound_get": lambda i: sglib._SCALES.__setitem__("scale", float(i // 2)),
        "read_only": lambda i: sglib._VIEWED.__setitem__("scale", float(i // 2)),
        "chained": lambda i: sglib._OVERRIDES.__setitem__("scale", float(i // 2)),
        "reference": lambda i: setattr(sglib._TARGET, "value", float(i // 2)),
        "context_default": lambda i: setattr(sglib._CURRENT.get(), "value", float(i // 2)),
    }
    fn = getattr(sglib, function)
    _same_as_eager(lambda x: fn(x), changes[function], _x())


def test_the_users_own_objects_handed_to_a_library_record_again_when_changed(installed: Path) -> None:
    """A config object of the user's class the library keeps (``configure(cfg)``), and a hook
    of the user's it calls, which reads a global of the user's."""
    _write(
        installed,
        "sglib_handed.py",
        """
        CONFIG = None
        HOOKS = []

        def configure(config):
            global CONFIG
            CONFIG = config

        def apply(x):
            y = x * CONFIG.scale
            for hook in HOOKS:
                y = hook(y)
            return y
        """,
    )
    sglib: Any = importlib.import_module("sglib_handed")
    config = _UserConfig()
    sglib.configure(config)
    sglib.HOOKS.append(_user_hook)

    def change(i: int) -> None:
        config.scale = float(i // 2)
        global _HOOK_SHIFT
        _HOOK_SHIFT = float(i % 2)

    _same_as_eager(lambda x: sglib.apply(x), change, _x())


class _UserConfig:
    scale = 1.0


_HOOK_SHIFT = 0.0


def _user_hook(y: Any) -> Any:
    return y + _HOOK_SHIFT


def test_a_counter_in_a_librarys_closure_runs_the_step_eagerly(installed: Path) -> None:
    """``nonlocal n; n += 1`` in a function the library made: the step changes what it reads
    at every call."""
    _write(
        installed,
        "sglib_ticks.py",
        """
        def _counter():
            n = 0

            def tick():
                nonlocal n
                n += 1
                return n

            return tick

        _tick = _counter()
        _other = _counter()  # another closure of the same code, never called

        def scaled(x):
            return x * float(_tick())
        """,
    )
    sglib: Any = importlib.import_module("sglib_ticks")
    compiled = sg.compile(lambda x: sglib.scaled(x))
    with pytest.warns(sg.CompileWarning, match="closure"):
        outs = [float(compiled(_x()).numpy()[1]) for _ in range(4)]
    assert outs == [1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize("source", ["method", "class_counter", "generator"])
def test_state_a_librarys_object_advances_in_its_own_method_runs_the_step_eagerly(installed: Path, source: str) -> None:
    """A warm-up schedule object the library keeps (``self.k += 1`` in its method), a class
    attribute counted up through ``type(self)``, a NumPy generator on the object: state
    reached through the method's ``self``, noted before the method first runs."""
    _write(
        installed,
        "sglib_warmup.py",
        """
        import numpy as np

        class Warmup:
            calls = 0

            def __init__(self):
                self.k = 0
                self.rng = np.random.default_rng(0)

            def method(self):
                self.k += 1
                return min(self.k, 10) / 10

            def class_counter(self):
                type(self).calls += 1
                return float(type(self).calls)

            def generator(self):
                return 1.0 + float(self.rng.random())

        _WARMUP = Warmup()

        def scaled(x, how):
            return x * getattr(_WARMUP, how)()
        """,
    )
    sglib: Any = importlib.import_module("sglib_warmup")
    compiled = sg.compile(lambda x: sglib.scaled(x, source))
    with pytest.warns(sg.CompileWarning):
        outs = [float(compiled(_x()).numpy()[1]) for _ in range(4)]
    assert len(set(outs)) == 4  # a new value at every call, as eager


def test_a_librarys_bookkeeping_made_at_the_first_call_is_replayed_after(installed: Path) -> None:
    """A memo the library fills at the first call (a table per shape, the last shape it saw
    as a new tuple of the same sizes at every call): that call changed what the library
    reads (set-up, not kept); the next records, and the step replays from then on."""
    _write(
        installed,
        "sglib_memo.py",
        """
        class Memo:
            def __init__(self):
                self.tables = {}
                self.last_shape = None

        MEMO = Memo()

        def scale(x):
            shape = tuple(x.shape)
            MEMO.last_shape = tuple(shape)
            if shape not in MEMO.tables:
                MEMO.tables[shape] = [2.0] * shape[0]
            return x * MEMO.tables[shape][0]
        """,
    )
    sglib: Any = importlib.import_module("sglib_memo")

    compiled = _same_as_eager(lambda x: sglib.scale(x), lambda i: None, _x())
    (recording,) = compiled.recordings
    assert recording.replays == 3


def test_a_registry_the_library_grows_at_every_call_runs_the_step_eagerly(installed: Path) -> None:
    """Items of a library's registry are compared by identity: one that gains an item at
    every call changes what the library reads at every call, which a replay would not do."""
    _write(
        installed,
        "sglib_registry.py",
        """
        SEEN = {}

        def scale(x):
            SEEN[len(SEEN)] = object()
            return x * float(len(SEEN))
        """,
    )
    sglib: Any = importlib.import_module("sglib_registry")
    compiled = sg.compile(lambda x: sglib.scale(x))
    with pytest.warns(sg.CompileWarning, match="changes what it reads at every call"):
        outs = [compiled(_x()).numpy() for _ in range(3)]
    np.testing.assert_array_equal(outs[2], _x().numpy() * 3.0)


def test_a_library_whose_settings_stay_is_replayed(installed: Path) -> None:
    _write(installed, "sglib_steady.py", "SCALE = 3.0\n\ndef scaled(x):\n    return x * SCALE\n")
    sglib_steady: Any = importlib.import_module("sglib_steady")

    compiled = _same_as_eager(lambda x: sglib_steady.scaled(x), lambda i: None, _x())
    (recording,) = compiled.recordings
    assert recording.replays == 4


def test_a_module_a_library_imports_lazily_in_the_step_is_not_the_steps_code(installed: Path) -> None:
    """A library importing another module inside the function, at its first call: the
    module's body runs then (noting itself in a third module's list), which is no call of the
    step's: the first call's recording is kept and replayed."""
    _write(installed, "sglib_lazy_loaded.py", "LOADED = []\n")
    _write(
        installed,
        "sglib_lazy_child.py",
        "import sglib_lazy_loaded\n\nsglib_lazy_loaded.LOADED.append('child')\nSCALE = 2.0\n",
    )
    _write(
        installed,
        "sglib_lazy_parent.py",
        """
        def scaled(x):
            import sglib_lazy_child

            return x * sglib_lazy_child.SCALE
        """,
    )
    importlib.import_module("sglib_lazy_loaded")  # imported before: the body reads and writes its list
    sglib: Any = importlib.import_module("sglib_lazy_parent")
    compiled = _same_as_eager(lambda x: sglib.scaled(x), lambda i: None, _x())
    (recording,) = compiled.recordings
    assert recording.replays == 4


def test_a_librarys_iterator_holding_functions_is_followed_as_the_steps_own_are(installed: Path) -> None:
    """A library's global object that is an iterator and holds a function of the user's:
    followed as the step's own objects are (the function's globals too), and the step
    replays."""
    _write(
        installed,
        "sglib_stream.py",
        """
        def _double(v):
            return 2.0 * v

        class Stream:
            def __init__(self):
                self.transform = _double
                self.scale = 2.0

            def __iter__(self):
                return self

            def __next__(self):
                return self.transform(self.scale)

        STREAM = Stream()

        def scaled(x):
            return x * next(STREAM)
        """,
    )
    sglib: Any = importlib.import_module("sglib_stream")
    sglib.STREAM.transform = _user_double

    def change(i: int) -> None:
        sglib.STREAM.scale = 3.0 if i >= 3 else 2.0

    compiled = _same_as_eager(lambda x: sglib.scaled(x), change, _x())
    assert [r.replays for r in compiled.recordings] == [2, 1]


def _user_double(v: float) -> float:
    return 2.0 * v


def test_a_librarys_finalizer_and_log_handler_are_not_the_steps_code(installed: Path) -> None:
    """A ``weakref.finalize`` callback run where an object of the step's dies, and a logging
    handler counting the records the step logs: neither is called by the step's logic, and
    their counters are no setting of it: the step replays."""
    _write(
        installed,
        "sglib_side.py",
        """
        import logging
        import weakref

        FREED = 0
        EMITTED = 0

        class Workspace:
            pass

        def _freed():
            global FREED
            FREED += 1

        def scratch(x):
            workspace = Workspace()
            weakref.finalize(workspace, _freed)
            return x * 2.0

        class Counting(logging.Handler):
            def emit(self, record):
                global EMITTED
                EMITTED += 1
        """,
    )
    sglib: Any = importlib.import_module("sglib_side")
    logger = logging.getLogger("sglib_side_step")
    handler = sglib.Counting()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False

    def step(x: Any) -> Any:
        logger.info("step")
        return sglib.scratch(x)

    try:
        compiled = _same_as_eager(step, lambda i: None, _x())
    finally:
        logger.removeHandler(handler)
    (recording,) = compiled.recordings
    assert recording.replays == 4
    assert sglib.FREED >= 5 and sglib.EMITTED >= 5


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
