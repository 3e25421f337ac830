"""sg.compile and the Python state a step reads: a change records again, a value from hidden
state (a random draw, a clock, an iterator) runs the step eagerly; never a stale replay.

Each test changes something the step's Python reads between calls, the way a training script
does (a config object, a helper's global, an argparse namespace, a list, a generator), and
checks that every call of the compiled step returns what the step itself returns."""

from __future__ import annotations

import argparse
import collections
import copy
import dataclasses
import enum
import json
import math
import os
import queue
import random
import sys
import time
import types
import warnings
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import _compile_layout


@pytest.fixture(autouse=True)
def _records_on_numpy(numpy_backend: str) -> None:
    """sg.compile records on the NumPy backend only (see test_compile.py)."""


X = np.arange(4, dtype=np.float32)


def _calls(step: Callable[..., Any], change: Callable[[int], None], *args: Any, n: int = 5) -> list[float]:
    """``n`` calls of ``step``, ``change(i)`` before each."""
    out: list[float] = []
    for i in range(n):
        change(i)
        out.append(step(*args).item())
    return out


def _same_as_eager(step: Callable[..., Any], change: Callable[[int], None], *args: Any) -> sg.CompiledStep[..., Any]:
    """The compiled ``step`` returns what ``step`` returns at every call, ``change`` applied
    before each pair of calls; no warning (it replays or records again)."""
    compiled = sg.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for i in range(5):
            change(i)
            assert compiled(*args).item() == step(*args).item(), f"call {i}"
    return compiled


def _runs_eagerly(step: Callable[[], Any], expected: list[float], because: str) -> None:
    """The compiled ``step`` gives ``expected`` over five calls (each a new value) and runs
    eagerly from its first call, with a warning that says ``because``."""
    compiled = sg.compile(step)
    with pytest.warns(sg.CompileWarning, match=because):
        got = [compiled().item() for _ in range(5)]
    assert got == expected
    assert compiled.eager_reason is not None


# --------------------------------------------------------------------------- changed state records again
@dataclass
class Config:
    scale: float = 1.0


CONFIG = Config()


def test_an_attribute_of_a_config_object_it_reads() -> None:
    x = sg.tensor(X)

    def step(x: Any) -> Any:
        return (x * CONFIG.scale).sum()

    compiled = _same_as_eager(step, lambda i: setattr(CONFIG, "scale", float(i)), x)
    assert compiled.recordings  # it replays where nothing changed
    before = compiled.recordings[-1].replays
    compiled(x)
    assert compiled.recordings[-1].replays == before + 1


def test_an_attribute_of_an_object_it_takes_as_an_argument() -> None:
    x = sg.tensor(X)
    args = argparse.Namespace(temperature=1.0)

    def step(x: Any, args: argparse.Namespace) -> Any:
        return (x / args.temperature).sum()

    _same_as_eager(step, lambda i: setattr(args, "temperature", float(i + 1)), x, args)


def test_attributes_read_by_names_built_at_run_time() -> None:
    # A multi-task config read by getattr with a name built from the task (or given as an
    # argument), argparse's namespace spread into a helper by **vars(args), a dataclass by
    # asdict: the names read are in no bytecode or constant of the step's code.
    x = sg.tensor(X)
    weights = types.SimpleNamespace(cls_weight=1.0, box_weight=0.5)
    args = argparse.Namespace(temperature=1.0)
    config = Config()

    def loss(x: Any, temperature: float) -> Any:
        return (x / temperature).sum()

    def by_task(x: Any, task: str) -> Any:
        return (x * getattr(weights, f"{task}_weight")).sum()

    def by_key(x: Any, key: str) -> Any:
        return (x * getattr(weights, key)).sum()

    def spread(x: Any) -> Any:
        return loss(x, **vars(args))

    def as_dict(x: Any) -> Any:
        return loss(x, *dataclasses.asdict(config).values())

    def change(i: int) -> None:
        weights.cls_weight = float(i + 2)
        args.temperature = float(i + 1)
        config.scale = float(i + 3)

    _same_as_eager(by_task, change, x, "cls")
    _same_as_eager(by_key, change, x, "cls_weight")
    _same_as_eager(spread, change, x)
    _same_as_eager(as_dict, change, x)


@dataclasses.dataclass
class Loss:
    kind: str = "sum"
    weight: float = 1.0


def test_a_class_pattern_with_positional_sub_patterns() -> None:
    """``case Loss(kind, weight)`` reads the attributes ``Loss.__match_args__`` names, in C:
    the names are in no bytecode or constant of the step. Replayed the first weight before."""
    x = sg.tensor(X)
    config = Loss()

    def step(x: Any) -> Any:
        match config:
            case Loss(kind, weight):
                return (x * weight).sum() if kind == "sum" else (x * weight).mean()
        raise AssertionError

    def weight_of(config: Loss) -> float:
        match config:
            case Loss(_, weight):
                return weight
        raise AssertionError

    def through_a_helper(x: Any) -> Any:
        return (x * weight_of(config)).sum()

    for fn in (step, through_a_helper):
        compiled = _same_as_eager(fn, lambda i: setattr(config, "weight", float(i + 1)), x)
        assert len(compiled.recordings) == 5


def test_every_attribute_handed_over_by_getstate_or_reduce() -> None:
    """``cfg.__getstate__()`` and ``cfg.__reduce_ex__(2)[2]`` hand over the instance's dict,
    read by keys no code names (``sum(....values())``). Replayed the first sum before."""
    x = sg.tensor(X)
    config = Loss()

    def by_getstate(x: Any) -> Any:
        held: Any = config  # object.__getstate__: Python 3.11+
        state: dict[str, Any] = held.__getstate__()
        return (x * sum(v for v in state.values() if isinstance(v, float))).sum()

    def by_reduce(x: Any) -> Any:
        reduced: Any = config.__reduce_ex__(2)
        state: dict[str, Any] = reduced[2]  # copyreg's state: the instance's dict
        return (x * sum(v for v in state.values() if isinstance(v, float))).sum()

    for fn in (by_getstate, by_reduce):
        compiled = _same_as_eager(fn, lambda i: setattr(config, "weight", float(i + 1)), x)
        assert len(compiled.recordings) == 5


def test_an_attribute_of_an_object_two_levels_down() -> None:
    x = sg.tensor(X)
    trainer = types.SimpleNamespace(schedule=types.SimpleNamespace(factor=1.0))

    def step(x: Any) -> Any:
        return (x * trainer.schedule.factor).sum()

    _same_as_eager(step, lambda i: setattr(trainer.schedule, "factor", float(i)), x)


def test_an_object_it_reaches_through_a_weak_reference() -> None:
    x, config = sg.tensor(X), Config()
    reference, registry = weakref.ref(config), weakref.WeakValueDictionary({"config": config})

    def step(x: Any) -> Any:
        return (x * reference().scale + registry["config"].scale).sum()  # pyright: ignore[reportOptionalMemberAccess]

    _same_as_eager(step, lambda i: setattr(config, "scale", float(i)), x)


SHIFT = 0.0


def _shifted(x: Any) -> Any:
    return x + SHIFT


def test_a_global_read_by_a_helper_function() -> None:
    x = sg.tensor(X)

    def step(x: Any) -> Any:
        return _shifted(x).sum()

    def change(i: int) -> None:
        global SHIFT
        SHIFT = float(i)

    _same_as_eager(step, change, x)


def test_a_variable_a_helper_reads_from_the_function_that_made_it() -> None:
    # A training script's main(): the loss helper reads main's local `temperature`, which
    # main rebinds each epoch; the step names only the helper (and a lambda kept in a dict).
    x = sg.tensor(X)
    temperature, shift = 1.0, 0.0

    def loss_fn(x: Any) -> Any:
        return (x / temperature).sum()

    helpers = {"shifted": lambda x: x + shift}

    def step(x: Any) -> Any:
        return loss_fn(helpers["shifted"](x))

    def change(i: int) -> None:
        nonlocal temperature, shift
        temperature, shift = float(i + 1), float(i % 2)

    compiled = _same_as_eager(step, change, x)
    assert compiled.recordings and compiled.eager_reason is None


def test_a_helper_advancing_a_variable_of_the_function_that_made_it_runs_eagerly() -> None:
    calls = 0

    def counted(x: Any) -> Any:
        nonlocal calls
        calls += 1
        return x * float(calls)

    def step() -> Any:
        return counted(sg.tensor(X)).sum()

    _runs_eagerly(step, [6.0 * k for k in range(1, 6)], "was rebound")


class Scaled(sg.nn.Module):
    factor = 1.0  # a class attribute

    def __call__(self, x: Any) -> Any:
        return x * self.factor


def test_a_class_attribute_a_module_reads() -> None:
    x, model = sg.tensor(X), Scaled()

    def step(x: Any) -> Any:
        return model(x).sum()

    _same_as_eager(step, lambda i: setattr(Scaled, "factor", float(i)), x)


class Private(sg.nn.Module):
    def __init__(self) -> None:
        self._scale = 1.0  # private attributes: a number and a tensor buffer
        self._offset = sg.zeros(4)

    def __call__(self, x: Any) -> Any:
        return x * self._scale + self._offset


def test_a_private_attribute_of_a_module() -> None:
    x, model = sg.tensor(X), Private()

    def step(x: Any) -> Any:
        return model(x).sum()

    def change(i: int) -> None:
        model._scale = float(i)
        if i == 3:
            model._offset = sg.ones(4)

    _same_as_eager(step, change, x)
    compiled = _same_as_eager(step, lambda i: None, x)  # a private tensor buffer is read like a public one
    assert compiled.recordings[-1].replays == 4


class Hyper:
    scale = 1.0  # a class the step names, not an instance of it


def test_a_class_attribute_of_a_class_it_names() -> None:
    x = sg.tensor(X)

    def step(x: Any) -> Any:
        return (x * Hyper.scale).sum()

    _same_as_eager(step, lambda i: setattr(Hyper, "scale", float(i)), x)


class Activated(sg.nn.Module):
    def __init__(self) -> None:
        self.scale = 2.0

    @staticmethod
    def activation(x: Any) -> Any:
        return x.relu()

    @classmethod
    def build(cls) -> Activated:
        return cls()

    def __call__(self, x: Any) -> Any:
        return self.activation(x * self.scale)


def test_a_module_with_a_staticmethod_and_a_classmethod_replays() -> None:
    x, model = sg.tensor(X), Activated.build()

    def step(x: Any) -> Any:
        return model(x).sum()

    compiled = _same_as_eager(step, lambda i: None, x)
    assert compiled.recordings[-1].replays == 4


SETTINGS: dict[str, float] = {"scale": 1.0}


class Settings:
    """A config object whose attributes are a global dict's items (read by ``__getattr__``)."""

    def __getattr__(self, name: str) -> float:
        try:
            return SETTINGS[name]
        except KeyError:
            raise AttributeError(name) from None


def test_a_global_read_by_a_dunder_method_of_a_config_class() -> None:
    x, settings = sg.tensor(X), Settings()

    def step(x: Any) -> Any:
        return (x * settings.scale).sum()

    _same_as_eager(step, lambda i: SETTINGS.__setitem__("scale", float(i)), x)


class Lookup:
    """A config whose ``__getattr__`` raises ``KeyError`` (not ``AttributeError``) for a name it
    lacks: ``__dict__``, ``__name__``, ``gi_frame`` looked up on it must not crash sg.compile."""

    __slots__ = ("table",)

    def __init__(self) -> None:
        self.table = {"scale": 1.0}

    def __getattr__(self, name: str) -> float:
        return self.table[name]


class LookupStep:
    def __init__(self) -> None:
        self.config = {"offset": 0.0}

    def __getattr__(self, name: str) -> float:
        return self.config[name]

    def __call__(self, x: Any, lookup: Lookup) -> Any:
        return (x * lookup.scale + self.offset).sum()


def test_objects_whose_getattr_raises_key_error() -> None:
    x, lookup, step = sg.tensor(X), Lookup(), LookupStep()

    def change(i: int) -> None:
        lookup.table["scale"] = float(i)
        step.config["offset"] = float(i // 2)

    _same_as_eager(step, change, x, lookup)


def test_an_attribute_of_the_users_own_config_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "train_settings.py").write_text("LR_SCALE = 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import train_settings  # pyright: ignore[reportMissingImports]

    x = sg.tensor(X)
    namespace: dict[str, Any] = {"settings": train_settings}
    exec("def step(x):\n    return (x * settings.LR_SCALE).sum()\n", namespace)  # a step in another module
    try:
        _same_as_eager(namespace["step"], lambda i: setattr(train_settings, "LR_SCALE", float(i)), x)
    finally:
        sys.modules.pop("train_settings", None)


def test_the_users_config_module_held_passed_or_in_a_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "run_config").mkdir()
    (tmp_path / "run_config" / "__init__.py").write_text("from . import optim\n")
    (tmp_path / "run_config" / "optim.py").write_text("LR_SCALE = 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import run_config  # pyright: ignore[reportMissingImports]

    x = sg.tensor(X)
    namespace: dict[str, Any] = {"run_config": run_config}
    exec("def step(x):\n    return (x * run_config.optim.LR_SCALE).sum()\n", namespace)  # package.module.NAME
    trainer = types.SimpleNamespace(config=run_config.optim)  # a module held by an object

    def held(x: Any) -> Any:
        return (x * trainer.config.LR_SCALE).sum()

    def passed(x: Any, config: types.ModuleType) -> Any:
        return (x * config.LR_SCALE).sum()

    def change(i: int) -> None:
        run_config.optim.LR_SCALE = float(i)

    try:
        _same_as_eager(namespace["step"], change, x)
        _same_as_eager(held, change, x)
        _same_as_eager(passed, change, x, run_config.optim)
    finally:
        sys.modules.pop("run_config", None)
        sys.modules.pop("run_config.optim", None)


def test_an_attribute_of_another_packages_module_it_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """``sys.argv`` changed, a library function monkeypatched (``sg.losses.mse``,
    ``np.tanh``) between calls: read through a module that is not the user's, they were not
    compared, and the replay ran the first recording's branch or function, silently. What the
    step's code reads by a chain from a global module is compared before each replay."""
    x = sg.tensor(X + 1.0)
    target = sg.zeros(4)
    mse = sg.losses.mse

    def flag(x: Any) -> Any:
        return (x * (2.0 if "--double" in sys.argv else 1.0)).sum()

    def loss(x: Any) -> Any:
        return sg.losses.mse(x, target)

    def numpy_function(x: Any) -> Any:
        return sg.tensor(np.tanh(x.data)).sum()

    def change(i: int) -> None:
        if i == 2:
            sys.argv.append("--double")
            monkeypatch.setattr(sg.losses, "mse", lambda a, b: mse(a, b) * 3.0)
            monkeypatch.setattr(np, "tanh", np.sin)

    monkeypatch.setattr(sys, "argv", ["train.py"])
    for step in (flag, loss, numpy_function):
        _same_as_eager(step, change, x)
        monkeypatch.undo()
        monkeypatch.setattr(sys, "argv", ["train.py"])


def test_a_method_of_shapegrads_classes_patched_between_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """``nn.Linear.__call__`` patched (a LoRA-style wrapper), a ``__call__`` added to the
    ``Linear[4, 2]`` class a layer is, ``Tensor.relu`` patched: a replay runs none of them and
    gave the first recording's result, silently. Each records again."""
    layer = sg.nn.Linear[Literal[4], Literal[2]](generator=sg.Generator(0))
    x = sg.tensor(X[None])
    call, relu = sg.nn.Linear.__call__, sg.Tensor.relu

    def step(x: Any) -> Any:
        return layer(x).relu().sum()

    patches: list[Callable[[], None]] = [
        lambda: monkeypatch.setattr(sg.nn.Linear, "__call__", lambda self, x: call(self, x) * 2.0),
        lambda: monkeypatch.setattr(type(layer), "__call__", lambda self, x: call(self, x) * 3.0, raising=False),
        lambda: monkeypatch.setattr(sg.Tensor, "relu", lambda self: relu(self) + 1.0),
    ]
    for patch in patches:
        _same_as_eager(step, lambda i, patch=patch: patch() if i == 2 else None, x)
        monkeypatch.undo()


def test_an_operator_of_tensor_patched_and_put_back_between_calls() -> None:
    """``Tensor.__add__`` patched, then put back: the put-back class has the patched one's
    attributes, so a check of their number took the recording made while patched, and the
    replay subtracted where eager added, silently. Each change records again (or replays the
    recording made for the class as it is)."""
    x, y = sg.tensor(X), sg.tensor(X * 2.0)
    add = sg.Tensor.__add__

    def step(x: Any, y: Any) -> Any:
        return ((x + y) * 2.0).sum()

    def change(i: int) -> None:
        if i == 2:
            sg.Tensor.__add__ = lambda a, b: sg.sub(a, b)  # type: ignore[method-assign,assignment]
        if i == 3:
            sg.Tensor.__add__ = add  # type: ignore[method-assign]
        if i == 4:
            del sg.Tensor.__add__  # TensorOps's again

    try:
        _same_as_eager(step, change, x, y)
    finally:
        if "__add__" in sg.Tensor.__dict__:
            del sg.Tensor.__add__


def test_the_environment_it_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    # A debug flag or a scale read from the environment, by os.environ, os.getenv or names
    # imported from os: set between calls, the next call records again.
    from os import getenv

    x = sg.tensor(X)
    monkeypatch.setenv("SG_TEST_SCALE", "1")

    def by_module(x: Any) -> Any:
        return (x * float(os.environ.get("SG_TEST_SCALE", "1"))).sum()

    def by_function(x: Any) -> Any:
        return (x * float(os.getenv("SG_TEST_SCALE", "1"))).sum()

    def by_name(x: Any) -> Any:
        return (x + float(getenv("SG_TEST_SCALE", "0"))).sum()

    def change(i: int) -> None:
        monkeypatch.setenv("SG_TEST_SCALE", str(i // 2 + 2))

    for step in (by_module, by_function, by_name):
        compiled = _same_as_eager(step, change, x)
        assert compiled.recordings and max(r.replays for r in compiled.recordings) >= 1


def test_a_step_writing_the_environment_at_every_call_runs_eagerly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SG_TEST_CALLS", "0")

    def step() -> Any:
        os.environ["SG_TEST_CALLS"] = str(int(os.environ["SG_TEST_CALLS"]) + 1)
        return sg.tensor(X).sum() * float(os.environ["SG_TEST_CALLS"])

    _runs_eagerly(step, [6.0 * k for k in range(1, 6)], "changes what it reads at every call")


def test_a_long_list_of_numbers_changed_in_place() -> None:
    x = sg.tensor(np.ones(100, dtype=np.float32))
    weights = [1.0] * 100  # longer than the lists whose items are held one by one

    def step(x: Any) -> Any:
        return (x * sg.tensor(weights)).sum()

    def change(i: int) -> None:
        weights[i] = 5.0

    _same_as_eager(step, change, x)


def test_an_item_changed_to_an_equal_number_of_another_type() -> None:
    weights = [1, 2, 3]  # ints: an int64 tensor; 1.0 == 1, but a float list makes a float32 one
    flags = {"causal": 1}

    def step() -> Any:
        scale = 2.0 if flags["causal"] is True else 3.0
        return sg.tensor(weights) * scale

    def change(i: int) -> None:
        if i == 2:
            weights[:] = [1.0, 2.0, 3.0]
        if i == 3:
            flags["causal"] = True

    compiled = sg.compile(step)
    for i in range(5):
        change(i)
        got, expected = compiled(), step()
        assert (got.dtype, got.tolist()) == (expected.dtype, expected.tolist()), f"call {i}"
    assert compiled.eager_reason is None


def test_a_deque_of_numbers_replays() -> None:
    window = collections.deque(range(8), maxlen=8)  # a deque is no list: compared as a deque

    def step() -> Any:
        return sg.tensor(list(window)).sum()

    compiled = _same_as_eager(step, lambda i: window.append(100) if i == 2 else None)
    assert compiled.recordings[-1].replays == 2


def test_a_sliding_window_of_token_ids() -> None:
    window = list(range(80))

    def step() -> Any:
        return sg.tensor(window).sum()

    def change(i: int) -> None:
        window.pop(0)
        window.append(100 + i)

    _same_as_eager(step, change)


def test_a_small_numpy_table_read_by_python() -> None:
    x = sg.tensor(X)
    table = np.ones(10)  # a schedule its Python indexes

    def step(x: Any) -> Any:
        return (x * float(table[2])).sum()

    def change(i: int) -> None:
        table[2] = float(i)

    _same_as_eager(step, change, x)


class Trainer:
    """A training loop's object: the step is its method; it also keeps the loop's records."""

    def __init__(self) -> None:
        self.model = sg.nn.Linear(4, 1, generator=sg.Generator(0))
        self.opt, self.grads = sg.optim.SGD(self.model, lr=0.1), self.model.alloc_grads()
        self.losses: list[float] = []  # appended after every step: the step never reads it
        self.global_step = 0
        self.warmup = 3

    def step(self, x: Any) -> Any:
        self.grads.zero()
        loss = (self.model(x.trace(self.grads)) ** 2).mean()
        loss.backward()
        self.opt.update(self.model, self.grads)
        return loss


def _replays_while_keeping_records(make: Callable[[], Trainer], count: str) -> None:
    """12 calls of a trainer's compiled step, its loss history and the count named ``count``
    updated after each: the same losses as an eager twin, one recording replayed since."""
    trainer, twin = make(), make()
    compiled = sg.compile(trainer.step)
    x = sg.ones(2, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for _ in range(12):
            loss = compiled(x).item()
            assert loss == twin.step(x).item()
            trainer.losses.append(loss)
            setattr(trainer, count, getattr(trainer, count) + 1)
    assert compiled.recordings[0].replays == 11


def test_a_trainers_records_the_step_never_reads_do_not_stop_replays() -> None:
    _replays_while_keeping_records(Trainer, "global_step")


class LibraryNamedTrainer(Trainer):
    """Records named as the library's own names: ``self.losses`` beside ``sg.losses.mse`` in
    the step, ``self.step_count`` beside the optimizer's ``step_count``."""

    def __init__(self) -> None:
        super().__init__()
        self.step_count = 0

    def step(self, x: Any) -> Any:
        self.grads.zero()
        loss = sg.losses.mse(self.model(x.trace(self.grads)), sg.zeros(2, 1))
        loss.backward()
        self.opt.update(self.model, self.grads)
        return loss


def test_a_trainers_records_named_as_the_librarys_names_do_not_stop_replays() -> None:
    """The attributes of the user's own objects are checked by the names the user's code (and
    code other than shapegrad's) reads attributes by, module attributes (``sg.losses``) apart:
    this trainer recorded at every call, then ran eagerly."""
    _replays_while_keeping_records(LibraryNamedTrainer, "step_count")


class ScaledTrainer(Trainer):
    def step(self, x: Any) -> Any:
        return (self.model(x) * min(1.0, (self.global_step + 1) / self.warmup)).sum()  # reads the count


def test_a_trainers_count_the_step_reads_records_again() -> None:
    trainer = ScaledTrainer()

    def change(i: int) -> None:
        trainer.global_step = i

    _same_as_eager(trainer.step, change, sg.ones(2, 4))


class Stack(sg.nn.Module):
    """Layers reached by names built at run time, as PyTorch code does (``getattr(self, f"fc{i}")``)."""

    def __init__(self) -> None:
        for i in range(2):
            setattr(self, f"fc{i}", sg.nn.Linear(4, 4, generator=sg.Generator(i)))

    def __call__(self, x: Any) -> Any:
        for i in range(2):
            x = getattr(self, f"fc{i}")(x).tanh()
        return x


def test_a_layer_reached_by_a_name_built_at_run_time_replaced_between_calls() -> None:
    """A module's tensors and sub-modules are checked whatever names the code that ran uses:
    a layer or a parameter replaced by one of a name no code spells (fc1, an LSTM's
    weight_ih_l0) was replayed with the old weights."""
    stack = Stack()
    lstm = sg.nn.LSTM(4, 3, generator=sg.Generator(5))
    x = sg.tensor(np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 2, 4))

    def step(x: Any) -> Any:
        return lstm(stack(x))[0].sum()

    def change(i: int) -> None:
        if i == 2:
            stack.fc1 = sg.nn.Linear(4, 4, generator=sg.Generator(9))
        if i == 3:
            lstm.weight_ih_l0 = sg.nn.parameter(sg.zeros(*lstm.weight_ih_l0.shape))

    compiled = _same_as_eager(step, change, x)
    assert len(compiled.recordings) == 3


class DoubledStack(Stack):
    """:class:`Stack` with another forward under the same attributes."""

    def __call__(self, x: Any) -> Any:
        return super().__call__(x) * 2.0


@dataclass
class Plain:
    scale: float = 1.0

    def factor(self) -> float:
        return self.scale


class Halved(Plain):
    def factor(self) -> float:
        return self.scale / 2


def test_an_object_given_another_class_between_calls_records_again() -> None:
    """``model.__class__ = Other`` (a debugging or patching idiom) keeps every attribute and
    changes the forward: the recording of the old class was replayed (losses of the old model)."""
    stack, plain = Stack(), Plain()
    x = sg.tensor(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4))

    def step(x: Any) -> Any:
        return stack(x).sum() * plain.factor()

    def change(i: int) -> None:
        if i == 2:
            stack.__class__ = DoubledStack
        if i == 3:
            plain.__class__ = Halved

    compiled = _same_as_eager(step, change, x)
    assert len(compiled.recordings) == 3


def test_under_a_profiler_every_attribute_is_checked() -> None:
    """cProfile holds the profile hook: the code that ran is not known, so every attribute of
    what the step reaches is checked (a replay is never stale, at the price of more records)."""
    import cProfile

    x = sg.tensor(X)

    def step(x: Any) -> Any:
        return (x * CONFIG.scale).sum()

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        _same_as_eager(step, lambda i: setattr(CONFIG, "scale", float(i)), x)
    finally:
        profiler.disable()


def test_a_numpy_array_argument_its_python_reads() -> None:
    x = sg.tensor(X)
    scales = [np.array([float(i), 1.0]) for i in range(5)]

    def step(x: Any, scale: Any) -> Any:
        return (x * float(scale[0])).sum()  # a value of an argument read by Python

    compiled = sg.compile(step)
    with pytest.warns(sg.CompileWarning, match="__float__ of an array"):
        got = [compiled(x, s).item() for s in scales]
    assert got == [step(x, s).item() for s in scales] == [0.0, 6.0, 12.0, 18.0, 24.0]


def test_a_numpy_array_in_a_batch_dict_its_python_reads() -> None:
    x = sg.tensor(X)
    batches = [{"x": X + 1.0, "length": np.array([i])} for i in range(5)]

    def step(x: Any, batch: dict[str, Any]) -> Any:
        return (x[: int(batch["length"][0])] * sg.tensor(batch["x"][:1])).sum()

    compiled = sg.compile(step)
    with pytest.warns(sg.CompileWarning, match="__int__ of an array"):
        got = [compiled(x, b).item() for b in batches]
    assert got == [step(x, b).item() for b in batches] == [0.0, 0.0, 1.0, 3.0, 6.0]
    assert all(type(b["length"]) is np.ndarray for b in batches)  # the caller's dicts as they were


def test_numpy_math_on_an_array_argument_replays() -> None:
    x = sg.tensor(X)
    offsets = [X + float(i) for i in range(5)]

    def step(x: Any, offset: Any) -> Any:
        return (x * sg.tensor(offset[::-1] * 2.0)).sum(), offset

    compiled = sg.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for offset in offsets:
            (loss, given), (expected, _) = compiled(x, offset), step(x, offset)
            assert loss.item() == expected.item()
            assert type(given) is np.ndarray and np.array_equal(given, offset)
    assert compiled.recordings[-1].replays == 4


def test_a_small_numpy_table_holding_a_nan_replays() -> None:
    x = sg.tensor(X)
    table = np.array([1.0, np.nan, 3.0])  # a NaN the step never reads

    def step(x: Any) -> Any:
        return (x * float(table[0])).sum()

    compiled = _same_as_eager(step, lambda i: None, x)
    assert compiled.recordings[0].replays == 4


class TwoLayers(sg.nn.Module):
    def __init__(self) -> None:
        self.a = sg.nn.Linear(3, 3, generator=sg.Generator(0))
        self.b = sg.nn.Linear(3, 1, generator=sg.Generator(1))

    def __call__(self, x: Any) -> Any:
        return self.b(self.a(x).relu())


def test_freezing_a_layer_between_calls_is_seen() -> None:
    """model.freeze("a") after a recording: the eager step refuses the old optimizer and
    gradients, and so does the compiled one (its replay would have trained "a" still); with
    new ones, both train "b" alone."""
    nets = [TwoLayers(), TwoLayers()]
    state: list[Any] = []

    def setup() -> None:
        state[:] = [(sg.optim.SGD(n, lr=0.1), n.alloc_grads()) for n in nets]

    def stepper(i: int) -> Callable[[Any], Any]:
        def step(x: Any) -> Any:
            opt, grads = state[i]
            grads.zero()
            loss = (nets[i](x.trace(grads)) ** 2).mean()
            loss.backward()
            opt.update(nets[i], grads)
            return loss

        return step

    setup()
    compiled, eager, x = sg.compile(stepper(0)), stepper(1), sg.ones(4, 3)
    for _ in range(3):
        assert compiled(x).item() == eager(x).item()
    for n in nets:
        n.freeze("a")
    with pytest.raises(sg.GradientsMismatchError):
        eager(x)
    with pytest.raises(sg.GradientsMismatchError):
        compiled(x)
    setup()
    for _ in range(3):
        assert compiled(x).item() == eager(x).item()
    assert np.array_equal(nets[0].a.weight.numpy(), nets[1].a.weight.numpy())
    assert np.array_equal(nets[0].b.weight.numpy(), nets[1].b.weight.numpy())


def test_a_numpy_scalar_argument_is_part_of_the_signature_by_value() -> None:
    x = sg.tensor(X)

    def step(x: Any, scale: Any) -> Any:
        return (x * scale).sum()

    compiled = sg.compile(step)
    for scale in (1.0, 2.0, 1.0, 2.0, 1.0):
        assert compiled(x, np.float32(scale)).item() == step(x, np.float32(scale)).item()
    assert len(compiled.recordings) == 2  # one per value, replayed (a new scalar object each call)
    assert sum(r.replays for r in compiled.recordings) == 3


def _twin_trainers(read: Callable[[Any, Any], Any]) -> tuple[Callable[[Any], Any], Callable[[Any], Any], list[Any]]:
    """Two twin models, optimizers and steps (the first compiled) whose loss is scaled by
    ``read(opt, loss)``, the step's own Python reading its optimizer."""
    nets = [TwoLayers(), TwoLayers()]
    opts = [sg.optim.SGD(n, lr=0.1) for n in nets]

    def stepper(i: int) -> Callable[[Any], Any]:
        net, opt, grads = nets[i], opts[i], nets[i].alloc_grads()

        def step(x: Any) -> Any:
            grads.zero()
            loss = read(opt, (net(x.trace(grads)) ** 2).mean())
            loss.backward()
            opt.update(net, grads)
            return loss

        return step

    return sg.compile(stepper(0)), stepper(1), opts


def test_an_optimizer_setting_the_step_reads() -> None:
    """opt.lr read by the step's Python (a loss scaled by it) is baked in: a new opt.lr
    records again."""
    compiled, eager, opts = _twin_trainers(lambda opt, loss: loss * (0.1 / opt.lr))
    x = sg.ones(4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for i in range(6):
            if i == 3:
                for opt in opts:
                    opt.lr = 0.05
            assert compiled(x).item() == eager(x).item(), f"call {i}"


def test_an_optimizer_only_a_helper_reaches() -> None:
    """opt.lr read by a helper that closes over the optimizer, the step naming neither the
    optimizer nor anything holding it: a new opt.lr records again (it was a replay of the
    first call's rate, the optimizer being looked for among the step's own free values)."""
    nets = [TwoLayers(), TwoLayers()]
    opts = [sg.optim.SGD(n, lr=0.1) for n in nets]

    def stepper(i: int) -> Callable[[Any], Any]:
        net, grads, opt = nets[i], nets[i].alloc_grads(), opts[i]

        def scale() -> float:
            return 0.1 / opt.lr

        def step(x: Any) -> Any:
            grads.zero()
            loss = (net(x.trace(grads)) ** 2).mean() * scale()
            loss.backward()
            return loss

        return step

    compiled, eager = sg.compile(stepper(0)), stepper(1)
    x = sg.ones(4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for i in range(6):
            for opt in opts:
                opt.lr = 0.1 * (1 + i // 2)
            assert compiled(x).item() == eager(x).item(), f"call {i}"
    assert len(compiled.recordings) == 3


class _Plateau:
    """A learning-rate schedule object whose factor the training script lowers (as PyTorch's
    ReduceLROnPlateau does) and the step's loss scaling reads through ``opt.lr``."""

    def __init__(self) -> None:
        self.factor = 1.0

    def __call__(self, step: int) -> float:
        return 0.1 * self.factor


@pytest.mark.parametrize(
    ("make_lr", "read", "change"),
    [
        (_Plateau, lambda opt, loss: loss / opt.lr.factor, lambda lr: setattr(lr, "factor", 0.5)),
        (lambda: np.array(0.1), lambda opt, loss: loss * float(opt.lr), lambda lr: lr.fill(0.05)),
        (
            lambda: lambda step, rate=[0.1]: rate[0],  # noqa: B006 -- the list the script changes
            lambda opt, loss: loss * (opt.lr(0) / 0.1),
            lambda lr: lr.__defaults__[0].__setitem__(0, 0.05),
        ),
    ],
    ids=["schedule_object", "numpy_rate", "function"],
)
def test_what_an_optimizer_attribute_holds_changed_in_place(
    make_lr: Callable[[], Any], read: Callable[[Any, Any], Any], change: Callable[[Any], None]
) -> None:
    """The step's own code reads inside what ``opt.lr`` holds (a schedule object's factor, a
    0-d NumPy rate, a schedule function's list), changed in place between calls: it records again. (The object was
    compared by identity, so a replay kept the first calls' scale: a wrong loss, silently.)"""
    compiled, eager, opts = _twin_trainers(read)
    rates = [make_lr(), make_lr()]
    for opt, lr in zip(opts, rates, strict=True):
        opt.lr = lr
    x = sg.ones(4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for i in range(6):
            if i == 3:
                for lr in rates:
                    change(lr)
            assert compiled(x).item() == eager(x).item(), f"call {i}"


def test_a_step_lowering_its_schedule_objects_factor_runs_eagerly() -> None:
    """The step itself lowers ``opt.lr.factor`` after its update (a decay written into the
    schedule object): a replay would not, so it runs eagerly, with the warning (it replayed,
    every call after the first training at the second call's rate)."""

    def lower(opt: Any, loss: Any) -> Any:
        opt.lr.factor *= 0.5
        return loss

    compiled, eager, opts = _twin_trainers(lower)
    for opt in opts:
        opt.lr = _Plateau()
    x = sg.ones(4, 3)
    with pytest.warns(sg.CompileWarning, match="Plateau.factor"):
        for i in range(5):
            assert compiled(x).item() == eager(x).item(), f"call {i}"
    assert [opt.lr.factor for opt in opts] == [0.5**5, 0.5**5]


def test_gradients_and_an_optimizer_two_levels_down_replay() -> None:
    """A trainer keeping its Gradients and optimizer in a namespace (self.parts.grads): the
    gradient buffers are the recording's inputs and the step replays (it ran eagerly: the
    buffers were taken for arrays no recorded operation produced)."""

    class Trainer:
        def __init__(self) -> None:
            self.net = TwoLayers()
            self.parts = types.SimpleNamespace(opt=sg.optim.SGD(self.net, lr=0.1), grads=self.net.alloc_grads())

        def step(self, x: Any) -> Any:
            grads, opt = self.parts.grads, self.parts.opt
            grads.zero()
            loss = (self.net(x.trace(grads)) ** 2).mean()
            loss.backward()
            opt.update(self.net, grads)
            return loss

    ours, theirs = Trainer(), Trainer()
    compiled = sg.compile(ours.step)
    x = sg.tensor(np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for i in range(5):
            assert compiled(x).item() == theirs.step(x).item(), f"call {i}"
    assert compiled.recordings[0].replays == 4
    for (_, mine), (_, eager) in zip(ours.net.named_parameters(), theirs.net.named_parameters(), strict=True):
        np.testing.assert_array_equal(mine.numpy(), eager.numpy())


@pytest.mark.parametrize(
    "read",
    [
        lambda opt, loss: loss * 0.1 if opt.step_count < 2 else loss,  # a warm-up
        lambda opt, loss: loss * opt.current_lr(),
    ],
    ids=["step_count", "current_lr"],
)
def test_an_optimizer_count_the_step_reads_runs_eagerly(read: Callable[[Any, Any], Any]) -> None:
    """opt.step_count (or opt.current_lr() of a schedule) read by the step's Python changes
    at every call, in the step's own update: it runs eagerly, with the warning."""
    compiled, eager, opts = _twin_trainers(read)
    for opt in opts:
        opt.lr = lambda step: 0.1 / (1 + step)
    x = sg.ones(4, 3)
    with pytest.warns(sg.CompileWarning, match="what it reads of its S[gG][dD]"):
        for i in range(5):
            assert compiled(x).item() == eager(x).item(), f"call {i}"


class _HeadOnly(sg.nn.Module):
    """A model one of whose layers takes no part in its output."""

    def __init__(self) -> None:
        self.a = sg.nn.Linear(3, 3, generator=sg.Generator(0))
        self.b = sg.nn.Linear(3, 1, generator=sg.Generator(1))

    def __call__(self, x: Any) -> Any:
        return self.b(x)


@pytest.mark.parametrize(("first", "then"), [("warn", "error"), ("ignore", "warn"), ("warn", "ignore")])
def test_an_optimizers_unused_policy_changed_between_calls(first: str, then: str) -> None:
    """``opt.unused`` changed between calls, a layer taking no part in the loss: eager refuses
    (``"error"``) or warns (``"warn"``) at the next update as the policy now says, and so does
    the compiled step (a replay kept the recording's policy, training on past the refusal)."""
    x = sg.tensor(np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3))

    def run(compiled: bool) -> tuple[list[Any], list[str]]:
        net = _HeadOnly()
        opt, grads = sg.optim.SGD(net, lr=0.1, unused=first), net.alloc_grads()  # pyright: ignore[reportArgumentType]

        def step(x: Any) -> Any:
            grads.zero()
            loss = (net(x.trace(grads)) ** 2).mean()
            loss.backward()
            opt.update(net, grads)
            return loss

        train = sg.compile(step) if compiled else step
        out: list[Any] = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for i in range(6):
                if i == 3:
                    opt.unused = then  # pyright: ignore[reportAttributeAccessIssue]
                try:
                    out.append(train(x).item())
                except sg.UnusedParameterError as error:
                    out.append(type(error).__name__)
        out.append(net.b.weight.numpy().tolist())
        return out, [f"{w.category.__name__}: {w.message}" for w in caught]

    assert run(True) == run(False)


def test_a_range_check_failing_in_a_replay_leaves_the_state_eager_leaves() -> None:
    """A label out of range raises in a replay as in eager, and leaves what eager leaves at
    that point: its gradients zeroed (reading one raises), the mode the step set (train), so
    an evaluation after it and the next call are eager's."""
    nets = [TwoLayers(), TwoLayers()]
    all_grads = [n.alloc_grads() for n in nets]

    def stepper(i: int) -> Callable[[Any, Any], Any]:
        net, grads = nets[i], all_grads[i]
        opt = sg.optim.SGD(net, lr=0.1)

        def step(x: Any, y: Any) -> Any:
            net.train()
            grads.zero()
            loss = sg.losses.cross_entropy(sg.concat([net(x.trace(grads)), sg.zeros(4, 1)], axis=1), y)
            loss.backward()
            opt.update(net, grads)
            net.eval()
            return loss

        return step

    compiled, eager = sg.compile(stepper(0)), stepper(1)
    x = sg.tensor(np.arange(12, dtype=np.float32).reshape(4, 3))
    good, bad = sg.tensor([0, 1, 1, 0]), sg.tensor([0, 1, 2, 0])
    for labels in (good, good, good, bad, good):
        outcomes: list[Any] = []
        for step, net, grads in zip((compiled, eager), nets, all_grads, strict=True):
            try:
                outcomes.append(step(x, labels).item())
            except sg.ShapeError:
                with pytest.raises(sg.TapeError, match="no gradient reached"):
                    grads[net.b.weight]
                outcomes.append(("raised", net.training))
        assert outcomes[0] == outcomes[1]
    # A recording of each mode the step is entered in: train (a new model; the call after the
    # one that raised, which left it in train mode) and eval (the mode the step leaves), whose
    # second replay raised
    assert [r.replays for r in compiled.recordings] == [2, 1]


def _side_by_side(
    make_net: Callable[[], Any],
    make_opt: Callable[[Any], Any],
    make_step: Callable[[Any, Any, Any], Callable[..., Any]],
    calls: list[tuple[Any, ...]],
    before_call: Callable[[int, Any], None] = lambda i, opt: None,
) -> list[int]:
    """Runs ``make_step(net, grads, opt)``'s step compiled and eagerly on equal models, call
    by call (``calls``: each call's arguments; ``before_call(i, opt)`` before each), and checks
    that after each, returned or raised, the two leave the same: what it returned or raised
    (class and message), the gradients' bookkeeping (which parameters' buffers hold a gradient,
    which update used them), the modules' modes, the weights, the optimizer's state, a backward pass
    through a tensor traced before the call (the step's grads.zero() ended its tape) and one
    after the call (refused where an update used the gradients). Returns the compiled step's
    recordings' replay counts."""
    from shapegrad._gradients import bookkeeping

    runs: list[tuple[Any, Any, Any, Any]] = []
    for compiled in (True, False):
        net = make_net()
        grads = net.alloc_grads()
        opt = make_opt(net)
        step = make_step(net, grads, opt)
        runs.append((sg.compile(step) if compiled else step, net, grads, opt))
    x = sg.tensor(np.arange(12, dtype=np.float32).reshape(4, 3))

    def attempt(fn: Callable[[], Any]) -> Any:
        try:
            out = fn()
        except Exception as error:  # noqa: BLE001 -- what it raised is compared
            return type(error).__name__, str(error)
        return out.item() if isinstance(out, sg.Tensor) else None

    for i, arguments in enumerate(calls):
        seen: list[Any] = []
        for step, net, grads, opt in runs:
            before_call(i, opt)
            earlier = net(x.trace(grads)).sum()
            outcome = attempt(lambda: step(*arguments)[0])  # noqa: B023 -- called at once
            touched, used_by = bookkeeping(grads)
            received = [path for path, key, _ in grads._layout if key in touched]  # pyright: ignore[reportPrivateUsage]
            state = (received, used_by, [m.training for m in net.modules()], opt.step_count)
            weights = {k: v.tolist() for k, v in net.state_dict().items()}
            moments = {k: np.asarray(v).tolist() for k, v in opt.state_arrays().items()}
            through_earlier = attempt(earlier.backward)
            later = sg.losses.mse(net(x.trace(grads)), sg.zeros(4, 1))
            seen.append((outcome, state, weights, moments, through_earlier, attempt(later.backward)))
        assert seen[0] == seen[1], f"call {i}"
    return [r.replays for r in runs[0][0].recordings]


def _training_step(draw: bool = False) -> Callable[[Any, Any, Any], Callable[..., Any]]:
    """A training step that sets train mode, zeroes its gradients, goes backward, draws from
    ``sg.multinomial`` (``draw``), updates and sets eval mode."""

    def make(net: Any, grads: Any, opt: Any) -> Callable[..., Any]:
        generator = sg.Generator(5)

        def step(x: Any, y: Any, p: Any = None) -> Any:
            net.train()
            grads.zero()
            loss = sg.losses.mse(net(x.trace(grads)), y)
            loss.backward()
            drawn = sg.multinomial(p, 1, generator=generator) if draw else None
            opt.update(net, grads)
            net.eval()
            return loss, drawn

        return step

    return make


class _Table:
    """A learning-rate schedule read from a list (``table[step]`` raises past its end)."""

    def __init__(self, rates: list[float]) -> None:
        self.rates = rates

    def __call__(self, step: int) -> float:
        return self.rates[step]


def test_a_schedule_raising_in_a_replay_s_update_leaves_the_state_eager_leaves() -> None:
    """A learning-rate schedule that raises in a replay's update (``rates[step]`` past the
    list's end, raised by the update's host call, not by a check) raises eager's error and
    leaves what eager leaves there: the gradients zeroed (not marked as used by the previous
    call's update), the train mode the step set before the update (not the eval mode it sets
    after), the tape its grads.zero() ended ended, the weights and moments as before the
    update; a backward pass after it is allowed as after eager's, and with the list extended
    the next call is replayed."""

    def extend(i: int, opt: Any) -> None:
        if i == 5:
            opt.lr.rates += [0.01, 0.01]

    x, y = sg.tensor(np.arange(12, dtype=np.float32).reshape(4, 3)), sg.ones(4, 1)
    replays = _side_by_side(
        TwoLayers, lambda net: sg.optim.Adam(net, lr=_Table([0.1, 0.05, 0.02])), _training_step(), [(x, y)] * 7, extend
    )
    # recorded entered in train mode (call 0) and in eval mode, which the step leaves (call 1);
    # calls 3 and 4 raised (leaving train mode, so call 4 and 5 replayed the first recording)
    assert replays == [2, 3]


def test_a_multinomial_raising_in_a_replay_leaves_the_state_eager_leaves() -> None:
    """``sg.multinomial`` given weights it refuses (a negative one) in a replay raises eager's
    HyperparameterError and leaves what eager leaves at that point (after the backward pass,
    before the update): the gradients zeroed, train mode, the ended tape, the weights; the
    next good call is replayed."""
    x, y = sg.tensor(np.arange(12, dtype=np.float32).reshape(4, 3)), sg.ones(4, 1)
    good, bad = sg.tensor([[0.2, 0.8]]), sg.tensor([[0.2, -0.8]])
    calls = [(x, y, good), (x, y, good), (x, y, bad), (x, y, good), (x, y, bad)]
    replays = _side_by_side(TwoLayers, lambda net: sg.optim.SGD(net, lr=0.1), _training_step(draw=True), calls)
    # recorded entered in train mode and in eval mode (calls 0, 1); call 2 raised, leaving train
    # mode (call 3 replayed the first), call 4 raised again
    assert replays == [1, 2]


class _WithUnused(sg.nn.Module):
    def __init__(self) -> None:
        self.a = TwoLayers()
        self.unused = sg.nn.Linear(3, 1, generator=sg.Generator(2))

    def __call__(self, x: Any) -> Any:
        return self.a(x)


def test_a_warning_made_an_error_in_a_replay_leaves_the_state_eager_leaves() -> None:
    """``unused="warn"``'s warning made an error (``warnings.simplefilter("error")``, as
    ``pytest -W error`` does), raised by a replay's host call, leaves what eager's refused
    update leaves: the gradients zeroed, nothing updated, train mode, the ended tape."""

    def errors(i: int, opt: Any) -> None:
        warnings.simplefilter("error" if i >= 2 else "ignore")

    x, y = sg.tensor(np.arange(12, dtype=np.float32).reshape(4, 3)), sg.ones(4, 1)
    with warnings.catch_warnings():
        replays = _side_by_side(
            _WithUnused, lambda net: sg.optim.SGD(net, lr=0.1, unused="warn"), _training_step(), [(x, y)] * 4, errors
        )
    # recorded entered in train and eval mode (calls 0, 1); call 2 raised, leaving train mode
    assert replays == [1, 1]


# --------------------------------------------------------------------------- hidden state: eager
def test_a_python_random_draw_runs_eagerly() -> None:
    x = sg.tensor(X)
    draws = random.Random(0)
    expected_draws = random.Random(0)

    def step() -> Any:
        return (x * draws.random()).sum()

    expected = [float((X * np.float32(expected_draws.random())).sum()) for _ in range(5)]
    _runs_eagerly(step, expected, r"random number drawn in Python \(Random.random\)")


def test_the_random_modules_functions_run_eagerly() -> None:
    x = sg.tensor(X)

    def step() -> Any:
        return (x * random.uniform(0.0, 1.0)).sum()  # Python's random.uniform over Random.random

    compiled = sg.compile(step)
    with pytest.warns(sg.CompileWarning, match="random number drawn in Python"):
        values = {compiled().item() for _ in range(5)}
    assert len(values) == 5


def test_a_numpy_generator_draw_runs_eagerly() -> None:
    x = sg.tensor(X)
    rng, twin = np.random.default_rng(0), np.random.default_rng(0)

    def step() -> Any:
        return (x * float(rng.uniform())).sum()

    expected = [float((X * np.float32(twin.uniform())).sum()) for _ in range(5)]
    _runs_eagerly(step, expected, "NumPy generator")


def test_numpys_global_generator_runs_eagerly() -> None:
    x = sg.tensor(X)

    def step() -> Any:
        return (x * float(np.random.rand())).sum()

    compiled = sg.compile(step)
    with pytest.warns(sg.CompileWarning, match="NumPy generator"):
        values = {compiled().item() for _ in range(5)}
    assert len(values) == 5


def test_the_clock_runs_eagerly() -> None:
    x = sg.tensor(X)

    def step() -> Any:
        return (x * (time.perf_counter() % 1.0)).sum()

    compiled = sg.compile(step)
    with pytest.warns(sg.CompileWarning, match=r"the clock .*perf_counter"):
        values = {compiled().item() for _ in range(5)}
    assert len(values) > 1


def _batches() -> list[Any]:
    return [sg.full((4,), float(i)) for i in range(6)]


def test_a_tensor_from_an_iterator_runs_eagerly() -> None:
    batches = iter(_batches())

    def step() -> Any:
        return (next(batches) * 2.0).sum()

    _runs_eagerly(step, [0.0, 8.0, 16.0, 24.0, 32.0], "next item of an iterator")


def test_a_tensor_from_a_generator_runs_eagerly() -> None:
    def stream() -> Iterator[Any]:
        yield from _batches()

    batches = stream()

    def step() -> Any:
        return (next(batches) * 2.0).sum()

    _runs_eagerly(step, [0.0, 8.0, 16.0, 24.0, 32.0], "next item of an iterator")


def test_a_number_from_a_loop_generator_already_started_runs_eagerly() -> None:
    """``while True: k += 1; yield k`` stands at the same instruction after every item: where
    it is is told by its variables too."""

    def rates() -> Iterator[float]:
        k = 0
        while True:
            k += 1
            yield float(k)

    schedule = rates()
    next(schedule)  # started before the step is compiled

    def step() -> Any:
        return (sg.ones(4) * next(schedule)).sum()

    _runs_eagerly(step, [8.0, 12.0, 16.0, 20.0, 24.0], "next item of an iterator")


def test_a_module_noting_the_shape_it_saw_replays() -> None:
    """``self.last_shape = tuple(x.shape)`` at every call is a new tuple of the same sizes:
    no change of what the step reads."""

    class Block(sg.nn.Module):
        def __init__(self) -> None:
            self.scale = 3.0
            self.last_shape: tuple[int, ...] | None = None

        def __call__(self, x: Any) -> Any:
            self.last_shape = tuple(x.shape)
            return x * self.scale

    block = Block()
    compiled = sg.compile(lambda x: block(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for _ in range(5):
            compiled(sg.ones(2, 3))
    (recording,) = compiled.recordings
    assert recording.replays >= 3


@pytest.mark.parametrize("source", ["localtime", "clock_gettime", "thread_time", "secrets", "uuid"])
def test_a_clock_or_the_systems_random_source_read_in_the_step_runs_eagerly(source: str) -> None:
    """Clocks beside ``time.time`` and draws through ``secrets`` or ``uuid``, which reach
    ``os.urandom`` through the standard library's Python."""
    import secrets
    import time
    import uuid

    read = {
        "localtime": lambda: float(time.localtime().tm_sec),
        "clock_gettime": lambda: time.clock_gettime(time.CLOCK_MONOTONIC),
        "thread_time": lambda: time.thread_time(),
        "secrets": lambda: float(secrets.randbelow(2**30)),
        "uuid": lambda: float(uuid.uuid4().int % 2**30),
    }[source]
    compiled = sg.compile(lambda: (sg.ones(2) * read()).sum())
    with pytest.warns(sg.CompileWarning, match="clock or the system's random source"):
        compiled()
    assert compiled.eager_reason is not None


def test_a_tensor_from_a_queue_runs_eagerly() -> None:
    batches: queue.SimpleQueue[Any] = queue.SimpleQueue()  # a C object: nothing of it is checked
    for batch in _batches():
        batches.put(batch)

    def step() -> Any:
        return (batches.get() * 2.0).sum()

    _runs_eagerly(step, [0.0, 8.0, 16.0, 24.0, 32.0], "neither takes as an argument nor reaches")


@pytest.mark.parametrize("how", ["sg.load", "from_torch"])
def test_a_checkpoint_read_inside_the_step_runs_eagerly(how: str, tmp_path: Path) -> None:
    """An actor step loading the weights a learner last wrote (``sg.load(policy, path)``, or a
    PyTorch file through ``sg.nn.from_torch``) before acting: the file is state the recording
    cannot see, rewritten between calls. It runs eagerly, with the warning (a replay copied the
    recorded file's values into the model at every call)."""
    path = tmp_path / "latest.safetensors"
    nets = [TwoLayers(), TwoLayers()]
    learner = TwoLayers()

    def publish(scale: float) -> None:
        for _, p in learner.named_parameters():
            p[...] = p * scale
        if how == "sg.load":
            sg.save(learner, path)
        else:
            import safetensors.numpy

            state = {k: v.T.copy() if k.endswith("weight") else v for k, v in learner.state_dict().items()}
            safetensors.numpy.save_file(state, str(path))

    def stepper(net: Any) -> Callable[[Any], Any]:
        def step(x: Any) -> Any:
            if how == "sg.load":
                sg.load(net, path)
            else:
                sg.nn.from_torch(net, path)
            return (net(x) ** 2).sum()

        return step

    publish(1.0)
    compiled, eager, x = sg.compile(stepper(nets[0])), stepper(nets[1]), sg.ones(4, 3)
    with pytest.warns(sg.CompileWarning, match="checkpoint"):
        for i in range(4):
            publish(0.5)
            assert compiled(x).item() == eager(x).item(), f"call {i}"
    assert compiled.eager_reason is not None


@pytest.mark.parametrize("how", ["open", "np.load", "Path.read_text", "json.load"])
def test_a_file_read_inside_the_step_runs_eagerly(how: str, tmp_path: Path) -> None:
    """A number or weights read from a file inside the step (a scale another process writes,
    an .npz of weights loaded into the model): the file is state the recording cannot see. It
    runs eagerly, with the warning (a replay kept the recorded file's values)."""
    text, arrays = tmp_path / "scale.txt", tmp_path / "weights.npz"
    net = TwoLayers()

    def write(scale: float) -> None:
        text.write_text(repr(scale))
        np.savez(arrays, **{k: v * scale for k, v in TwoLayers().state_dict().items()})

    def step(x: Any) -> Any:
        if how == "open":
            with open(text) as handle:
                return (x * float(handle.read())).sum()
        if how == "Path.read_text":
            return (x * float(text.read_text())).sum()
        if how == "json.load":
            with open(text) as handle:
                return (x * json.load(handle)).sum()
        with np.load(arrays) as found:
            net.load_state_dict(dict(found))
        return (net(x) ** 2).sum()

    compiled, x = sg.compile(step), sg.ones(4, 3)
    with pytest.warns(sg.CompileWarning, match="a file"):
        for i in range(4):
            write(float(i + 1))
            assert compiled(x).item() == step(x).item(), f"call {i}"
    assert compiled.eager_reason is not None


def test_a_warning_or_a_traceback_shown_inside_the_step_replays(capsys: pytest.CaptureFixture[str]) -> None:
    """Showing a warning or printing a traceback reads the source line from its file
    (linecache): the program, not state. A step that did was run eagerly for good, as one
    that read a file."""
    import linecache
    import traceback

    net = TwoLayers()

    def step(x: Any) -> Any:
        print(warnings.formatwarning("shown as the default filter shows it", UserWarning, __file__, 1))
        try:
            raise ValueError("caught and printed")
        except ValueError:
            traceback.print_exc()
        return (net(x) ** 2).sum()

    compiled, x = sg.compile(step), sg.ones(4, 3)
    linecache.clearcache()  # so that the recording reads the lines from the file
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        losses = [compiled(x).item() for _ in range(3)]
    assert losses == [step(x).item()] * 3
    assert compiled.eager_reason is None
    assert "caught and printed" in capsys.readouterr().err


# A NumPy array built from a recorded array's values, where NumPy reads them without the
# recording seeing it (indexing a plain array with it, copying it), is no constant of the
# recording: converted into a tensor, a replay would give every call the first call's values.
TABLE = np.arange(32, dtype=np.float32).reshape(8, 4)
CLASS_WEIGHTS = np.array([0.5, 1.0, 2.0, 4.0], dtype=np.float32)


def _eager_with_warning(step: Callable[..., Any], calls: list[tuple[Any, ...]], because: str) -> None:
    """The compiled ``step`` gives ``step``'s values at every call of ``calls``, and warns that
    it runs eagerly ``because``."""
    expected = [step(*args).item() for args in calls]
    compiled = sg.compile(step)
    with pytest.warns(sg.CompileWarning, match=because):
        got = [compiled(*args).item() for args in calls]
    assert got == expected
    assert compiled.eager_reason is not None


def test_rows_picked_by_a_permutation_drawn_in_the_step_run_it_eagerly() -> None:
    def make() -> Callable[[], Any]:
        g = sg.Generator(3)

        def step() -> Any:
            batch = sg.tensor(TABLE[g.permutation(8)[:2]])  # torch.randperm(n)[:b], then x[idx]
            return (batch * batch).sum()

        return step

    eager, compiled = make(), sg.compile(make())
    with pytest.warns(sg.CompileWarning, match=r"built and converted into a tensor.*permutation"):
        assert [compiled().item() for _ in range(6)] == [eager().item() for _ in range(6)]
    assert compiled.eager_reason is not None


def test_an_epoch_over_shuffled_batches_in_the_step_runs_it_eagerly() -> None:
    def make() -> tuple[Callable[[], Any], Any]:
        model = sg.nn.Linear(4, 1, generator=sg.Generator(0))
        opt, grads = sg.optim.Sgd(model, lr=0.01), model.alloc_grads()
        loader = sg.data.batches(
            TABLE / 32.0, TABLE[:, :1] / 32.0, batch_size=2, shuffle=True, generator=sg.Generator(5)
        )

        def epoch() -> Any:
            total = sg.zeros(())
            for x, y in loader:
                grads.zero()
                loss = ((model(x.trace(grads)) - y) ** 2).mean()
                loss.backward()
                opt.update(model, grads)
                total = total + loss.detach()
            return total

        return epoch, model

    (eager, eager_model), (step, model) = make(), make()
    compiled = sg.compile(step)
    with pytest.warns(sg.CompileWarning, match=r"built and converted into a tensor.*permutation"):
        assert [compiled().item() for _ in range(4)] == [eager().item() for _ in range(4)]
    assert model.weight.tolist() == eager_model.weight.tolist()


def test_class_weights_looked_up_by_the_labels_array_run_it_eagerly() -> None:
    def step(logits: Any, labels: Any) -> Any:
        weights = sg.tensor(CLASS_WEIGHTS[labels.data])  # torch: class_weights[labels]
        return (logits * weights).sum()

    calls = [(sg.full((4,), 1.0), sg.tensor(np.array([i % 4, 1, (i + 2) % 4, 3]))) for i in range(5)]
    _eager_with_warning(step, calls, r"built and converted into a tensor.*t\.data")


def test_a_copy_of_a_tensors_array_runs_it_eagerly() -> None:
    def step(x: Any) -> Any:
        return sg.tensor(np.array(x.data) * 2.0).sum()

    _eager_with_warning(step, [(sg.full((3,), float(i)),) for i in range(5)], r"converted into a tensor.*t\.data")


def test_rows_picked_by_a_numpy_argument_run_it_eagerly() -> None:
    def step(x: Any, rows: Any) -> Any:
        return (x * sg.tensor(TABLE[rows])).sum()

    calls = [(sg.ones(2, 4), np.array([i % 8, (i + 3) % 8])) for i in range(5)]
    _eager_with_warning(step, calls, r"converted into a tensor.*NumPy array as an argument")


def test_a_mask_built_from_numbers_still_replays_after_the_step_reads_t_data() -> None:
    """What the step builds from numbers alone (not from a recorded array) is still a constant
    held by no one else: the step replays where it converts it before reading ``t.data``."""

    def step(x: Any) -> Any:
        mask = sg.tensor(np.arange(3) > 0)
        return (sg.tensor(x.data * 2.0) * mask).sum()

    compiled = _same_as_eager(step, lambda i: None, sg.full((3,), 2.0))
    assert compiled.eager_reason is None


# round(), math.floor/ceil/trunc, hash and is_integer of what is eagerly a NumPy scalar (a
# reduction of t.data): a Python value baked into the recording, so a value read, with eager's
# result (round(s) an int, round(s, 1) a NumPy scalar), not an AttributeError from ndarray.
@pytest.mark.parametrize(
    "read",
    [
        lambda x: round(x.data.sum()),
        lambda x: float(round(x.data.mean(), 1)),
        lambda x: math.floor(x.data.mean()),
        lambda x: math.ceil(x.data.mean()),
        lambda x: math.trunc(x.data.astype(np.float64).mean()),  # float64's __trunc__
        lambda x: float(x.data.sum().is_integer()),
        lambda x: {6.0: 1.0, 12.0: 2.0}.get(x.data.sum(), 3.0),  # hash() of the scalar
    ],
    ids=["round", "round-ndigits", "floor", "ceil", "trunc", "is_integer", "hash"],
)
def test_round_and_other_scalar_reads_of_a_reduction_run_it_eagerly(read: Callable[[Any], Any]) -> None:
    """``x * round(x.data.sum())`` (and ``math.floor``, ``hash``, ``.is_integer()`` of a NumPy
    scalar the step computes) gives eager's values, running eagerly with the warning."""

    def step(x: Any) -> Any:
        return (x * read(x)).sum()

    _eager_with_warning(step, [(sg.tensor(X * (i + 0.5)),) for i in range(4)], "of an array")


def test_round_of_a_recorded_scalar_gives_eagers_types() -> None:
    """``round(s)`` of a NumPy scalar is a Python int and ``round(s, 1)`` a NumPy scalar of its
    dtype, inside the recording call as eagerly; ``round`` of a 1-d array raises as eagerly."""
    seen: list[Any] = []

    def step(x: Any) -> Any:
        s = x.data.sum()
        seen.append((round(s), round(s, 1)))
        try:
            round(x.data)
        except TypeError as error:
            seen.append(str(error))
        return x.sum()

    step(sg.tensor(X))
    with pytest.warns(sg.CompileWarning, match="round"):
        sg.compile(step)(sg.tensor(X))
    assert [type(v) for v in seen[0]] == [type(v) for v in seen[2]] == [int, np.float32]
    assert seen[0] == seen[2] and seen[1] == seen[3]


# A NumPy scalar type called on a recorded 0-d array (np.float32(x.data.std())) reads its value
# in C, where the recording cannot see it: the number would be a constant of the recording.
@pytest.mark.parametrize(
    "read",
    [
        lambda x: np.float32(x.data.std()),
        lambda x: np.float32(x.data[1]),
        lambda x: float(np.int64(x.data.astype(np.int64).sum())),
        lambda x: np.float32((x * x).mean().data),  # a 0-d tensor's array, made by the library
    ],
    ids=["std", "element", "int64", "tensor-data"],
)
def test_a_numpy_scalar_made_from_a_recorded_array_runs_it_eagerly(read: Callable[[Any], Any]) -> None:
    """``std = np.float32(x.data.std()); (x - x.mean()) / std`` gives eager's values at every
    call (running eagerly with the warning), not the first call's ``std`` replayed."""

    def step(x: Any) -> Any:
        return ((x - x.mean()) / (read(x) + 1.0)).sum() + x.sum()

    _eager_with_warning(step, [(sg.tensor(X * (i + 1.0)),) for i in range(4)], r"np\.float32\(x\.data\.std\(\)\)")


def test_a_numpy_scalar_made_from_a_0d_array_argument_runs_it_eagerly() -> None:
    """``x * np.float32(a)``, ``a`` a 0-d NumPy array argument (in a list too), gives eager's
    values (running eagerly with the warning); ``x * a``, which the recording follows, replays."""

    def read(x: Any, a: Any) -> Any:
        return (x * np.float32(a)).sum()

    def read_listed(x: Any, batch: list[Any]) -> Any:
        return (x * np.float32(batch[0])).sum()

    def use(x: Any, a: Any) -> Any:
        return (x * a).sum()

    calls = [(sg.tensor(X), np.array(k, dtype=np.float32)) for k in (1.0, 2.0, 3.0)]
    _eager_with_warning(read, calls, "0-d NumPy array argument")
    _eager_with_warning(read_listed, [(x, [a]) for x, a in calls], "0-d NumPy array argument")
    compiled = sg.compile(use)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        assert [compiled(*args).item() for args in calls] == [use(*args).item() for args in calls]
    assert len(compiled.recordings) == 1


# The same 0-d array read through a NumPy scalar type and used as an array too: the recorded
# operation taking it hid the read, and a replay gave the first call's number, silently.
@pytest.mark.parametrize(
    "read",
    [
        lambda x, s: x * np.float32(s) + x * (s * 2),
        lambda x, s: x * float(np.float32(s)) + x / s,
        lambda x, s: x * np.float16(s) + sg.tensor(s),
        lambda x, s: (lambda k: x[: int(np.int64(k))] * k)(s.astype(np.int64) - 1),
    ],
    ids=["float32", "float", "float16", "int64-slice"],
)
def test_a_0d_array_read_by_a_numpy_scalar_type_and_used_as_an_array_runs_it_eagerly(
    read: Callable[[Any, Any], Any],
) -> None:
    """``np.float32(s)`` beside ``s * 2`` (``s = x.data.max()``) gives eager's values at every
    call (running eagerly with the warning), not the first call's ``np.float32(s)``."""

    def step(x: Any) -> Any:
        return read(x, x.data.max() / 2).sum()

    _eager_with_warning(step, [(sg.tensor(X * (i + 1.0)),) for i in range(4)], r"np\.float32\(x\.data\.std\(\)\)")


@pytest.mark.parametrize(
    "use",
    [
        lambda x: x.data.sum(),  # a 0-d array computed from t.data, given back
        lambda x: sg.tensor(x.data * 2.0).sum() / x.data.std(),  # divided by, as an array
        lambda x: (x * x.data[1]).sum(),
        lambda x: (x * x.data.max()).sum() if x.data.sum() > 0 else x.sum(),  # a guard
        lambda x: (x * x).sum().data,  # a 0-d tensor's array given back
        lambda x: sg.tensor(np.where(x.data > 1.0, x.data, 0.0)).sum(),
    ],
    ids=["returned", "divided", "element", "guard", "tensor-data", "where"],
)
def test_a_0d_array_the_step_uses_as_an_array_still_replays(use: Callable[[Any], Any]) -> None:
    """A 0-d array computed from ``t.data`` that a recorded operation takes, a guard asks or
    the step gives back is no unseen read: the step replays, with eager's values."""

    def step(x: Any) -> Any:
        return use(x)

    compiled = sg.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for i in range(4):
            x = sg.tensor(X * (i + 1.0))
            assert compiled(x).item() == step(x).item(), f"call {i}"
    assert compiled.eager_reason is None
    assert len(compiled.recordings) == 1


@pytest.fixture
def _default_generators(monkeypatch: pytest.MonkeyPatch) -> None:
    """sg.seed's state, put back after the test."""
    from shapegrad.ops import creation

    monkeypatch.setattr(creation, "_default_generators", dict(creation._default_generators))
    monkeypatch.setattr(creation, "_seed_value", list(creation._seed_value))


@pytest.mark.usefixtures("_default_generators")
def test_the_default_generator_reseeded_between_calls() -> None:
    """sg.seed(...) between calls: the step's draws without a generator (dropout, noise) come
    from the new default generator, as eager's do, not from the one the recording drew from."""

    def step(x: Any) -> Any:
        return (x + sg.randn(*x.shape)).sum()

    compiled, x = sg.compile(step), sg.zeros(2, 3)
    for seeded in (compiled, step):
        sg.seed(0)
        got = [seeded(x).item() for _ in range(3)]
        sg.seed(0)
        got += [seeded(x).item() for _ in range(3)]
        assert got[3:] == got[:3], seeded
    assert len(compiled.recordings) == 2  # recorded again after sg.seed, then replayed


@pytest.mark.parametrize("restart", ["init", "state"])
def test_a_generator_restarted_between_calls_draws_anew(restart: str) -> None:
    """A generator restarted in place between calls (g.__init__(7), a checkpointed state put
    back): eager draws the same numbers after each restart; a replay drew on from the source
    the recording found, silently."""
    g = sg.Generator(5)
    saved = copy.deepcopy(g)
    dropout = sg.nn.Dropout(0.5, generator=g)
    x = sg.ones(4, 6)

    def step(x: Any) -> Any:
        return dropout(g.normal((4, 6)) + x)

    def restarted(run: Any) -> list[Any]:
        got: list[Any] = []
        for _ in range(3):
            if restart == "init":
                g.__init__(7)
            else:
                g.__dict__.update(copy.deepcopy(saved).__dict__)
            got.append(run(x).numpy().copy())
        return got

    compiled = sg.compile(step)
    for eager, replayed in zip(restarted(step), restarted(compiled), strict=True):
        np.testing.assert_array_equal(replayed, eager)
    assert compiled.eager_reason is None


@pytest.mark.usefixtures("_default_generators")
@pytest.mark.parametrize("how", ["generator", "dropout", "seed"])
def test_a_generator_made_or_seeded_inside_the_step_runs_eagerly(how: str) -> None:
    """A generator made (or the default one reseeded) at every call draws the same numbers
    at every call; a replay would draw on from the recording's."""
    x = sg.ones(2, 3)

    def step() -> Any:
        if how == "generator":
            return (x + sg.rand(2, 3, generator=sg.Generator(0))).sum()
        if how == "dropout":
            return sg.nn.Dropout(0.5, generator=sg.Generator(1))(x).sum()
        sg.seed(3)
        return (x + sg.rand(2, 3)).sum()

    expected = step().item()
    _runs_eagerly(step, [expected] * 5, "inside the step")


def test_a_deque_the_step_rotates_runs_eagerly() -> None:
    queue = collections.deque(_batches())

    def step() -> Any:
        queue.rotate(1)
        return (queue[0] * 2.0).sum()

    compiled = sg.compile(step)
    with pytest.warns(sg.CompileWarning, match="deque"):
        got = [compiled().item() for _ in range(5)]
    assert got == [40.0, 32.0, 24.0, 16.0, 8.0]


def test_a_step_reaching_too_many_objects_runs_eagerly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_compile_layout, "BUDGET", 50)
    rows = [{"value": float(i)} for i in range(100)]  # dicts: each one is checked
    x = sg.tensor(X)

    def step() -> Any:
        return (x * rows[3]["value"]).sum()

    compiled = sg.compile(step)
    with pytest.warns(sg.CompileWarning, match="more than 50 Python objects"):
        assert compiled().item() == 18.0
    rows[3]["value"] = 1.0
    assert compiled().item() == 6.0


class _Slotted:
    __slots__ = ("factor",)

    def __init__(self) -> None:
        self.factor = 2.0


def test_the_generated_layout_check_never_calls_a_changed_layout_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Layout.changed`` first runs one generated function of ``is`` tests; each kind of
    change (a module attribute replaced or added, the mode, a plain object's or a slotted
    object's attribute, a global, a tensor's shape or dtype, a parameter frozen) must make it answer "not the same", and the loops then name the change.
    Past ``MAX_CHECKS`` no function is built and the loops alone decide."""
    from shapegrad import _compile_layout_fast
    from shapegrad.nn import Linear

    @dataclass
    class Config:
        scale: float

    class Net(sg.nn.Module):
        def __init__(self) -> None:
            self.fc = Linear[Any, Any](3, 2, generator=sg.Generator(0))
            self.offset = 1.0

    def layout_of() -> tuple[Any, Any, list[Any]]:
        net, cfg, slotted = Net(), Config(1.0), _Slotted()
        holder = Config(0.5)
        ref = weakref.ref(holder)
        extra = sg.zeros(2)
        roots: list[Any] = [net, cfg, slotted, ref, extra]
        return _compile_layout.Layout(roots), (net, cfg, slotted, holder, extra), roots

    def rebind_global() -> None:
        globals()["X"] = X.copy()

    changes: dict[str, Callable[[Any], None]] = {
        "a module attribute replaced": lambda o: setattr(o[0], "offset", 2.0),
        "a module attribute added": lambda o: setattr(o[0], "new", 1),
        "the mode": lambda o: o[0].eval(),
        "a sub-module replaced": lambda o: setattr(o[0], "fc", Linear[Any, Any](3, 2, generator=sg.Generator(1))),
        "an object's attribute": lambda o: setattr(o[1], "scale", 3.0),
        "a slotted object's attribute": lambda o: setattr(o[2], "factor", 4.0),
        "a tensor's shape": lambda o: setattr(o[4], "_data", np.zeros(3, np.float32)),
        "a tensor's dtype": lambda o: setattr(o[4], "_data", np.zeros(2, np.float64)),
        "a parameter frozen": lambda o: o[0].freeze("fc"),
    }
    for name, change in changes.items():
        layout, objects, roots = layout_of()
        assert layout.changed(roots) is None, name
        assert layout._same is not None and layout._same(roots), name  # noqa: SLF001 -- the generated check
        change(objects)
        assert not layout._same(roots), name  # noqa: SLF001
        assert layout.changed(roots) is not None, name
    # a rebound root and a global the step's function reads
    layout, objects, roots = layout_of()
    assert layout.changed([*roots[:-1], sg.zeros(2)]) is not None

    def reads_x() -> Any:
        return X

    saved = X
    layout = _compile_layout.Layout([reads_x])
    assert layout.changed([reads_x]) is None
    try:
        rebind_global()
        assert layout.changed([reads_x]) is not None
    finally:
        globals()["X"] = saved
    # an attribute dict with a key that is not a string (vars(obj)[key] = ...)
    odd, key = Config(1.0), object()
    vars(odd)[key] = "one"
    layout = _compile_layout.Layout([odd])
    assert layout.changed([odd]) is None and layout._same is not None  # noqa: SLF001
    vars(odd)[key] = "two"
    assert layout.changed([odd]) is not None
    # a mode that is not a bool (model.train(1), a flag read as an int): compared by identity
    # as the loops do, with no SyntaxWarning from an `is` test on a literal
    net = Net().train(1)  # pyright: ignore[reportArgumentType] -- an int flag, the case under test
    layout = _compile_layout.Layout([net])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert layout.changed([net]) is None and callable(layout._same) and layout._same([net])  # noqa: SLF001
    net.train(True)
    assert callable(layout._same) and not layout._same([net])  # noqa: SLF001
    assert layout.changed([net]) is not None
    # too large to generate: the loops alone, with the same answers
    monkeypatch.setattr(_compile_layout_fast, "MAX_CHECKS", 3)
    layout, objects, roots = layout_of()
    assert layout.changed(roots) is None and layout._same is None  # noqa: SLF001
    objects[1].scale = 5.0
    assert layout.changed(roots) == "Config.scale was replaced"


_big_table = np.zeros((80, 80), np.float32)  # 6,400 elements: more than the layout compares by value


@pytest.mark.parametrize("convert", ["numpy", "tensor", "from_torch"])
def test_a_pytorch_tensors_values_converted_in_the_step(convert: str) -> None:
    """A PyTorch tensor the step converts (``sg.tensor(t.numpy())``, ``sg.tensor(t)``), written
    in place between calls by PyTorch: it records again where its values changed and replays
    where they did not (the recording crashed with AttributeError: the converted array's
    ``base`` is the PyTorch tensor, or a DLPack capsule, not an array). A PyTorch model's
    ``state_dict()`` loaded through ``sg.nn.from_torch`` (an actor pulling a learner's weights)
    runs eagerly, with the warning: Linear's transpose copied PyTorch's memory, and a replay
    gave the recorded weights, silently."""
    torch = pytest.importorskip("torch")
    source = torch.nn.Linear(3, 3)
    nets = [sg.nn.Linear(3, 3), sg.nn.Linear(3, 3)]

    def stepper(net: Any) -> Callable[[Any], Any]:
        def step(x: Any) -> Any:
            if convert == "from_torch":
                sg.nn.from_torch(net, source.state_dict())
                return (net(x) ** 2).sum()
            weight = sg.tensor(source.weight.detach().numpy() if convert == "numpy" else source.weight.detach())
            return (x @ weight).sum()

        return step

    compiled, eager, x = sg.compile(stepper(nets[0])), stepper(nets[1]), sg.ones(4, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", sg.CompileWarning)
        for i in range(6):
            if i % 2:
                with torch.no_grad():
                    source.weight.mul_(0.5)
            assert compiled(x).item() == eager(x).item(), f"call {i}"
    if convert == "from_torch":  # its transposes copy PyTorch's memory unseen: a value read
        assert compiled.eager_reason is not None and "PyTorch tensor" in compiled.eager_reason
        assert len(caught) == 1
    else:
        assert not caught
        assert sum(r.replays for r in compiled.recordings) == 2  # calls 2 and 4, the weight unchanged


BIG_TABLE = np.ones((100, 50), dtype=np.float32)  # 5,000 elements: held by identity


LARGE_GLOBAL_READS: dict[str, Callable[[Any], Any]] = {
    "a temporary from NumPy math on a slice": lambda x: (x * sg.tensor(BIG_TABLE[:4, :4] * 2.0)).sum(),
    "a copy of a slice": lambda x: (x * sg.tensor(BIG_TABLE[:4, :4].copy())).sum(),
    "a Python number read": lambda x: (x * float(BIG_TABLE[0, 0])).sum(),
    "a NumPy scalar read": lambda x: (x * BIG_TABLE[0, 0]).sum(),
    "a NumPy reduction": lambda x: (x * BIG_TABLE.sum()).sum(),
    "the array converted": lambda x: (x * sg.tensor(BIG_TABLE).sum()).sum(),
}


@pytest.mark.parametrize("above_the_recording_checksums", [False, True])
@pytest.mark.parametrize("read", LARGE_GLOBAL_READS)
def test_what_the_step_computes_from_a_large_global_written_between_calls(
    read: str, above_the_recording_checksums: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A NumPy array of more than 4,096 elements the step reads by name, written between calls:
    what NumPy computed from it in the step's Python (a temporary it converts, a number) is a
    constant of the recording, so its checksum is compared before each replay and a changed one
    records again (a replay gave the recorded values); an unchanged one replays. So also for
    one larger than the arrays checksummed as a recording begins and ends (every array the
    step reaches, named by its code or not)."""
    from shapegrad import _compile_layout

    if above_the_recording_checksums:
        monkeypatch.setattr(_compile_layout, "DIGESTED_BYTES", BIG_TABLE.nbytes - 1)
    step = LARGE_GLOBAL_READS[read]
    x = sg.tensor(np.eye(4, dtype=np.float32))
    compiled = sg.compile(step)
    try:
        for i in range(6):
            if i % 2 == 0:
                BIG_TABLE[0, 0] = float(i)
            assert compiled(x).item() == step(x).item(), f"call {i}"
    finally:
        BIG_TABLE[0, 0] = 1.0
    assert compiled.eager_reason is None
    assert sum(r.replays for r in compiled.recordings) == 3  # calls 1, 3 and 5: the table unchanged


def test_a_step_writing_a_large_numpy_array_in_place_runs_eagerly() -> None:
    """A step whose Python writes a NumPy array it reads (``table[0, 0] += 1``) changes at
    every call what a replay would bake in; for arrays above the 4,096 elements compared by
    value before each replay, a checksum taken as the recording begins and ends sees it, and
    the step runs eagerly (it replayed the first call's values, converted or read in Python)."""

    def converted(x: Any) -> Any:
        _big_table[0, 0] += 1
        return (x * sg.tensor(_big_table)).sum()

    def read(x: Any) -> Any:
        _big_table[0, 0] += 1
        return x.sum() * float(_big_table[0, 0])

    for step in (converted, read):
        _big_table[:] = 0
        compiled = sg.compile(step)
        x = sg.ones(80, 80)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.CompileWarning)
            ours = [compiled(x).item() for _ in range(4)]
        _big_table[:] = 0
        assert ours == [step(x).item() for _ in range(4)], step.__name__
        assert compiled.eager_reason is not None and "writes in place" in compiled.eager_reason


def test_a_table_changing_zero_to_minus_zero_records_again() -> None:
    """Arrays compared by value are compared by their bytes: 0.0 and -0.0 are equal to ``==``
    but 1 / x tells them apart, so a table changing one for the other records again."""
    table = np.zeros(3, np.float32)

    def step(x: Any) -> Any:
        return (x / sg.tensor(table)).sum()

    compiled = sg.compile(step)
    x = sg.ones(3)
    with np.errstate(divide="ignore"):
        assert compiled(x).item() == compiled(x).item() == float("inf")
        table[:] = -0.0
        assert compiled(x).item() == step(x).item() == float("-inf")


def test_the_attribute_names_of_the_users_code_leave_out_modules_and_globals() -> None:
    """What ``object_attribute_names`` keeps: attribute reads and writes of objects (also by a
    name a module is read by elsewhere), not a module's attributes nor a global's name."""
    from shapegrad._compile_watch import object_attribute_names

    def code(obj: Any, other: Any) -> Any:
        other.written = sg.losses.mse(obj.pred, obj.target)  # sg.losses, .mse: a module's
        return np.linalg.norm(obj.ravel()) + other.losses  # other.losses: an object's

    names = object_attribute_names(code.__code__, code.__globals__)
    assert {"pred", "target", "written", "ravel", "losses"} <= names
    assert not {"sg", "np", "mse", "linalg", "norm"} & names


def test_a_tensor_a_trainer_keeps_after_each_call_does_not_stop_replays() -> None:
    """Only a module's tensors are checked whatever the names: a trainer's ``last_loss``,
    which no code that ran names, may change at every call."""
    trainer = Trainer()
    trainer.last_loss = sg.zeros(())  # pyright: ignore[reportAttributeAccessIssue] -- the loop's own record
    compiled = sg.compile(trainer.step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for _ in range(6):
            trainer.last_loss = compiled(sg.ones(2, 4))  # pyright: ignore[reportAttributeAccessIssue] -- the loop's own record
    assert compiled.recordings[0].replays == 5


# --------------------------------------------------------------------------- numbers compared by value
scale = 1.0


def test_a_global_number_cycling_among_values_replays_its_recordings() -> None:
    """A number rebuilt at every call (``float(i % 3)``) is another object of a value a recording
    baked in: compared by value, its three values keep three recordings, replayed in turn (by
    identity, each call recorded again and the step ran eagerly after nine)."""
    global scale
    x = sg.tensor(X)

    def step(x: Any) -> Any:
        return (x * scale).sum()

    compiled = sg.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for i in range(15):
            scale = float(str(i % 3))  # a new float object at every call
            assert compiled(x).item() == step(x).item(), f"call {i}"
    assert compiled.eager_reason is None
    assert len(compiled.recordings) == 3
    assert sum(r.replays for r in compiled.recordings) == 12


def test_a_number_on_a_module_or_in_a_closure_rebuilt_each_call_replays() -> None:
    x = sg.tensor(X)
    drop = sg.nn.Dropout(0.0)
    factor = 1.0

    def step(x: Any) -> Any:
        return (drop(x) * factor).sum()

    compiled = sg.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for i in range(12):
            drop.p = float(str(0.0))
            factor = float(str(i % 2))  # the closure cell rebound to an equal or another value
            assert compiled(x).item() == step(x).item(), f"call {i}"
    assert len(compiled.recordings) == 2


@pytest.mark.parametrize("make", [float, np.float32, np.float64], ids=["float", "float32", "float64"])
def test_an_argument_of_minus_zero_is_another_signature(make: Callable[[float], Any]) -> None:
    """0.0 == -0.0 and they hash alike, but 1 / s tells them apart: the signature holds a
    number's bits (and a NaN argument is the same signature at every call)."""
    x = sg.ones(3)

    def step(x: Any, s: Any) -> Any:
        return (x / s).sum()

    compiled = sg.compile(step)
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for value in (0.0, -0.0, 0.0, -0.0):
            assert np.array_equal(compiled(x, make(value)).numpy(), step(x, make(value)).numpy()), value
        assert len(compiled.recordings) == 2
        for _ in range(3):
            got = compiled(x, make(float("nan"))).numpy()
            assert np.isnan(got).all()
    assert len(compiled.recordings) == 3


def test_a_dict_arguments_number_keys_are_part_of_the_signature_by_type_and_bits() -> None:
    """``{1: w}``, ``{True: w}`` and ``{1.0: w}`` are equal dicts (and ``{0.0: w}`` and
    ``{-0.0: w}``): a dict argument keyed by them was one signature, and a step branching on
    the key's type, or dividing by it, replayed the first recording silently."""
    x = sg.ones(2)

    def step(x: Any, table: dict[Any, float]) -> Any:
        (key,) = table
        return x * (3.0 if key is True else 5.0 if isinstance(key, float) else 7.0) + x / sg.tensor([key])

    compiled = sg.compile(step)
    keys: list[Any] = [1, True, 1.0, 1, 0.0, -0.0, 0.0, True]
    with np.errstate(divide="ignore"):
        for i, key in enumerate(keys):
            assert compiled(x, {key: 2.0}).tolist() == step(x, {key: 2.0}).tolist(), f"call {i}"
    assert compiled.eager_reason is None


class _Scaled(NamedTuple):
    scale: float


class _Doubled(NamedTuple):
    scale: float


def test_an_argument_of_another_tuple_list_or_dict_class_is_another_signature() -> None:
    """Two named tuples of equal items are equal tuples, as are a list and a list subclass's,
    a dict and an ``OrderedDict``: the signature held the items alone, and a step telling the
    classes apart replayed the first one's recording, silently. The class is part of it."""
    x = sg.ones(2)

    class Batch(list[Any]):
        pass

    def step(x: Any, hp: Any) -> Any:
        return x * (2.0 if isinstance(hp, (_Doubled, Batch, collections.OrderedDict)) else 1.0)

    compiled = sg.compile(step)
    pairs: list[tuple[Any, Any]] = [(_Scaled(1.0), _Doubled(1.0)), ((1.0,), _Doubled(1.0)), ([1.0], Batch([1.0]))]
    pairs.append(({"a": 1.0}, collections.OrderedDict(a=1.0)))
    for plain, other in pairs:
        for hp in (plain, other, plain, other):
            assert compiled(x, hp).tolist() == step(x, hp).tolist(), (plain, other)
    assert compiled.eager_reason is None


def test_a_string_changed_to_an_equal_str_enum_records_again() -> None:
    """``"a" == Mode.A`` for a ``str`` enum: a short list or dict of strings was compared by
    ``==`` alone, and a step asking ``is Mode.A`` replayed the first recording, silently."""

    class Mode(enum.StrEnum):
        A = "a"

    x = sg.ones(2)
    config: dict[str, Any] = {"mode": "a"}

    def step(x: Any) -> Any:
        return (x * (2.0 if config["mode"] is Mode.A else 1.0)).sum()

    _same_as_eager(step, lambda i: config.__setitem__("mode", Mode.A if i % 2 else "a"), x)


def test_a_dict_key_changed_to_an_equal_str_enum_records_again() -> None:
    """The same as a key: ``{"a": 2.0}`` and ``{Mode.A: 2.0}`` are equal dicts (equal keys,
    equal hashes), and a step asking the key's type replayed the first recording, silently."""

    class Mode(enum.StrEnum):
        A = "a"

    x = sg.ones(2)
    scales: dict[str, float] = {"a": 2.0}

    def step(x: Any) -> Any:
        return (x * sum(v for k, v in scales.items() if isinstance(k, Mode))).sum()

    def change(i: int) -> None:
        scales.clear()
        scales[Mode.A if i % 2 else "a"] = 2.0

    _same_as_eager(step, change, x)


def test_a_zero_in_a_list_or_dict_changing_sign_records_again() -> None:
    """A list of numbers is compared in one ``==``, which calls 0.0 and -0.0 equal: the zeros'
    signs are compared apart."""
    x = sg.ones(2)
    weights, table = [0.0, 1.0], {"w": 0.0}

    def step(x: Any) -> Any:
        return x / sg.tensor(weights), x / sg.tensor([table["w"]])

    compiled = sg.compile(step)
    with np.errstate(divide="ignore"):
        for i in range(6):
            weights[0] = -0.0 if i % 2 else 0.0
            table["w"] = -0.0 if i % 3 == 1 else 0.0
            got, expected = compiled(x), step(x)
            assert [t.tolist() for t in got] == [t.tolist() for t in expected], f"call {i}"
    assert compiled.eager_reason is None


def test_a_dict_key_or_set_item_changing_type_or_zero_sign_records_again() -> None:
    """``==`` calls ``{1: w}``, ``{True: w}`` and ``{1.0: w}`` equal, and ``{0.0}`` and ``{-0.0}``:
    a step reading a dict's keys or a set's items (a mapping from a layer's index, a set of
    scales) replayed the first recording's branch when they changed type or a zero its sign,
    silently. Their types and bits are compared apart."""
    x = sg.ones(2)
    table: dict[Any, float] = {1: 2.0}
    scales: set[Any] = {1}

    def read(key: Any) -> float:
        return 3.0 if key is True else 5.0 if isinstance(key, float) else 7.0

    def step(x: Any) -> Any:
        (key,), (item,) = table, scales
        return x * read(key) + x * read(item) + x / sg.tensor([item])

    compiled = sg.compile(step)
    with np.errstate(divide="ignore"):
        for i, number in enumerate([1, True, 1.0, 1, 0.0, -0.0, 0.0, True]):
            table.clear()
            table[number] = 2.0
            scales.clear()
            scales.add(number)
            assert compiled(x).tolist() == step(x).tolist(), f"call {i}"
    assert compiled.eager_reason is None


def test_an_argument_in_another_memory_order_records_again() -> None:
    """A C-ordered argument, then a transposed view of the same shape: the replay of the
    C-ordered recording summed in its buffers' order and gave other roundings than eager's
    (``exp(x).sum(axis=1)``: 4 in 10 million apart, silently). The memory order is part of the
    signature: each order records once and replays bit for bit."""
    rng = np.random.default_rng(0)
    ordered = [
        sg.tensor(rng.standard_normal((6, 1000)).astype(np.float32)),
        sg.tensor(rng.standard_normal((1000, 6)).astype(np.float32)).T,
        sg.tensor(np.asfortranarray(rng.standard_normal((6, 1000)).astype(np.float32))),
    ]

    def step(x: Any) -> Any:
        return sg.exp(x).sum(axis=1)

    compiled = sg.compile(step)
    for x in [*ordered, *ordered]:
        assert np.array_equal(compiled(x).numpy(), step(x).numpy())
    assert len(compiled.recordings) == 2 and sum(r.replays for r in compiled.recordings) == 4  # .T is F-ordered


losses: list[float] = []  # a training script's history: a global named as sg.losses is


def test_a_global_named_as_an_attribute_the_step_reads_does_not_stop_replays() -> None:
    """A training script keeping ``losses = []`` at module level while its step calls
    ``sg.losses.cross_entropy``: ``losses`` is in the step's ``co_names`` (an attribute name),
    and the history, which grows at every call, was taken for a global the step reads: every
    call recorded again, then the step ran eagerly. Globals are the names the code loads as
    globals."""
    model = sg.nn.Linear(4, 3, generator=sg.Generator(0))
    opt, grads = sg.optim.SGD(model, lr=0.1), model.alloc_grads()
    x = sg.tensor(np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32))
    y = sg.tensor(np.array([0, 1, 2, 1, 0]))

    def step(x: Any, y: Any) -> Any:
        grads.zero()
        loss = sg.losses.cross_entropy(model(x.trace(grads)), y)
        loss.backward()
        opt.update(model, grads)
        return loss.detach()

    train = sg.compile(step)
    losses.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for _ in range(12):
            losses.append(train(x, y).item())
    assert train.eager_reason is None and sum(r.replays for r in train.recordings) == 11


def test_a_compiled_step_calling_another_replays() -> None:
    """A compiled step calling another (a compiled feature extractor): the inner one runs
    inside the outer's recording, and what it reads is checked through its ``__wrapped__``
    step (it ran eagerly: a tensor read through an object the layout held by identity only)."""
    inner = sg.nn.Linear(8, 8, generator=sg.Generator(4))
    features = sg.compile(lambda x: inner(x).relu())

    def step(x: Any) -> Any:
        return (features(x) * 2.0).sum()

    compiled, x = sg.compile(step), sg.ones(5, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        assert [compiled(x).item() for _ in range(4)] == [step(x).item()] * 4
        inner.weight[0, 0] = 3.0  # read through the inner step: the replay reads it too
        assert compiled(x).item() == step(x).item()
    assert compiled.eager_reason is None and sum(r.replays for r in compiled.recordings) == 4


def test_a_parameter_given_an_array_in_another_memory_order_records_again() -> None:
    """A parameter whose array the caller replaces between calls by one of the same values in
    another memory order (``p._data = np.asfortranarray(...)``, as a state-dict load or a user's
    assignment may): the replay of the C-ordered recording summed in its buffers' order and gave
    other roundings than eager's (``exp(w).sum(axis=1)``, silently). The layout compares the
    array's strides: each order records once and replays bit for bit."""
    values = np.random.default_rng(0).standard_normal((6, 1000)).astype(np.float32)
    wide = np.zeros((6, 2000), dtype=np.float32)
    wide[:, ::2] = values
    ordered = [values, np.asfortranarray(values), wide[:, ::2]]

    class Model(sg.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = sg.nn.parameter(sg.tensor(values.copy()))

        def __call__(self) -> Any:
            return sg.exp(self.w).sum(axis=1)

    model = Model()

    def step() -> Any:
        return model()

    compiled = sg.compile(step)
    for data in [*ordered, *ordered]:
        model.w._data = data
        assert np.array_equal(compiled().numpy(), step().numpy())
    assert len(compiled.recordings) == 3 and sum(r.replays for r in compiled.recordings) == 3


def _rebinding_step(raising: str) -> tuple[Any, Callable[..., Any]]:
    """A step keeping a running state by giving a tensor it reaches another array, then
    raising for some calls' arguments: a range check (``table[idx]``) or ``sg.multinomial``
    refusing a negative weight, a host call."""
    state = sg.tensor(np.zeros(3, dtype=np.float32))
    table = sg.tensor(np.arange(12, dtype=np.float32).reshape(4, 3))
    generator = sg.Generator(0)

    def step(x: Any, arg: Any) -> Any:
        state._data = (state * 0.5 + x)._data
        if raising == "range":
            return (table[arg] * (state * 3.0 + 1.0)).sum()
        return (state * 2.0).sum() + sg.multinomial(arg, 1, generator=generator).sum() * 0

    return state, step


@pytest.mark.parametrize("raising", ["range", "multinomial"])
def test_a_replay_raising_after_the_step_rebound_a_tensor_rebinds_it(raising: str) -> None:
    """``state._data = (state * 0.5 + x)._data``, then an error: eager had given ``state`` its
    new array before raising, and a replay raising there left the old one (rebinding only at
    its end), so each later call gave other values than eager, silently. A replay that raises
    rebinds what the step had rebound by then, from its generated function's frame."""
    if raising == "range":
        good: Any = np.array([1, 2])
        bad: Any = np.array([0, 9])
    else:
        good, bad = sg.tensor([[0.2, 0.8]]), sg.tensor([[0.2, -0.8]])
    calls = [(np.full(3, i + 1.0, dtype=np.float32), bad if i == 3 else good) for i in range(6)]

    def run(compiled: bool) -> tuple[list[Any], list[float], Any]:
        state, step = _rebinding_step(raising)
        run_step = sg.compile(step) if compiled else step
        seen: list[Any] = []
        for x, arg in calls:
            try:
                seen.append(run_step(sg.tensor(x), arg).item())
            except sg.ShapegradError as error:
                seen.append(type(error).__name__)
        return seen, state.numpy().tolist(), run_step

    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        got, state_got, compiled = run(True)
    expected, state_expected, _ = run(False)
    assert got == expected and state_got == state_expected
    assert isinstance(got[3], str)
    assert compiled.eager_reason is None and sum(r.replays for r in compiled.recordings) == 5
