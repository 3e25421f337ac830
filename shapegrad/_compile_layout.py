"""What a compiled step's replay assumes of the Python state the step reads, checked before
each replay (``sg.compile``; see :class:`Layout`).

A replay runs no Python: every number the step's Python read (a temperature in a config
object, a flag on a module, a global a helper function reads, an item of a list) is baked
into the recording. So the recording notes, by identity, everything the step can reach
without a call: its free values (closure, the globals it and the functions it names read,
defaults, a bound method's instance), the objects it takes as arguments, and, from those,
modules and their classes, plain objects (a dataclass, ``argparse.Namespace``,
``SimpleNamespace``), lists, dicts and sets. Before a replay all of it must be as recorded;
a change records again (or, when the step itself makes it, runs the step eagerly).
"""

from __future__ import annotations

import argparse
import collections
import contextvars
import dis
import enum
import functools
import gc
import importlib.util
import logging
import operator
import os
import sys
import threading
import types
import weakref
import zlib
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ._compile_holders import NOT_SEEN, buffer_state, cached_results, getter_names, is_buffer, is_lru_cache, torch_state
from ._compile_layout_fast import identity_check
from ._compile_watch import (
    NUMPY_GENERATORS,
    Watch,
    any_drew,
    code_names,
    exact,
    generator_state,
    is_iterator,
    iterator_state,
    same_atom,
    signed_zeros,
    third_party_file,
    user_file,
    user_module,
)
from ._tensor import CLASS_WRITES, Tensor
from .nn._module import Module

__all__ = ["Layout", "TooLarge", "argument_objects", "attribute", "free_values", "reachable"]

_MISSING = object()
_UNBUILT = object()

# Values whose identity (or value) is all there is to check: nothing inside them can change.
_ATOMS = (
    type(None),
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    range,
    slice,
    np.generic,
    np.dtype,
    enum.Enum,
    types.BuiltinFunctionType,
    types.BuiltinMethodType,
    types.ModuleType,
)
ATOMS = _ATOMS
"""The values the layout compares by value or holds as they are (numbers, strings, None, enum
members, NumPy scalars and dtypes, modules, builtin functions, ranges and slices)."""
_NOT_STATE = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)

# NumPy arrays up to this many elements are compared by value before each replay; larger ones
# are checksummed (CRC-32, about 5 GB/s) when a recording begins and ends, so that a step writing
# one in place is seen (up to DIGESTED_BYTES: then every array reached counts, a trainer's whole
# dataset or a memory-mapped file too, not only those the step's code names), and before each
# replay, so that one written between calls is.
SMALL_ARRAY = 4096
DIGESTED_BYTES = 16 * 2**20


def same_array(array: Any, copy: Any) -> bool:
    """Whether ``array`` holds what ``copy`` holds: shape, dtype and bytes (a NaN as it was,
    and -0.0 apart from 0.0, which ``==`` calls equal though 1 / x tells them apart)."""
    return array.shape == copy.shape and array.dtype == copy.dtype and array.tobytes() == copy.tobytes()


# How many objects and items one layout may note: a step reaching more (a dataset of
# dicts held in its closure) is run eagerly with a warning rather than checked partly.
BUDGET = 50_000


class TooLarge(Exception):
    """The step reaches more than ``BUDGET`` objects and items."""


# Packages whose objects are held by identity only: shapegrad's own (other than modules and
# tensors: Gradients, optimizers, generators, communicators, whose state a replay handles
# through host calls and recorded draws) and the typing machinery (type variables, aliases).
_OPAQUE_PACKAGES = frozenset({"shapegrad", "typing", "typing_extensions", "jaxtyping", "beartype"})


def _isa(value: Any, kinds: Any) -> bool:
    """``isinstance`` that leaves ``value`` typed ``Any`` (an object of any class reaches here)."""
    return isinstance(value, kinds)


def _type_of(value: Any) -> type:
    """``type(value)``, typed ``type`` (of an ``Any``, pyright's is partly unknown)."""
    kind: type = value.__class__
    return kind


def attribute(value: Any, name: str, default: Any = None) -> Any:
    """``getattr(value, name, default)`` that also gives ``default`` where a class's own
    ``__getattr__`` raises something other than ``AttributeError`` (a config object whose
    ``__getattr__`` reads a dict raises ``KeyError`` for a name it lacks)."""
    try:
        return getattr(value, name, default)
    except Exception:  # noqa: BLE001 -- the user's __getattr__, whatever it raises
        return default


# The names by which code reads the environment through the os module (os.environ["LR"],
# os.getenv("DEBUG")): a step whose code names os and one of these has the environment checked.
_ENVIRONMENT_NAMES = frozenset({"environ", "getenv"})


def _environment() -> Any:
    """The dict behind ``os.environ`` (its items as the process holds them), or None."""
    return attribute(os.environ, "_data")


def _context_value(var: Any) -> Any:
    """A ``contextvars.ContextVar``'s value in the current context (``_MISSING``: none)."""
    return var.get(_MISSING)


def _context_default(var: Any) -> Any:
    """What a ``contextvars.ContextVar`` gives where no value was set: its own default
    (``get()``: ``get(x)`` gives ``x`` instead), or None."""
    try:
        return var.get()
    except LookupError:
        return None


def _logger_state(logger: Any) -> tuple[Any, int, bool, int]:
    """What a logger's ``isEnabledFor`` decides by: its effective level, whether it is
    disabled, and ``logging.disable``'s level."""
    return logger, logger.getEffectiveLevel(), logger.disabled, logger.manager.disable


def _library_object(value: Any) -> bool:
    """Whether ``value`` is held by identity only (see ``_OPAQUE_PACKAGES``)."""
    module = type(value).__module__.partition(".")[0]
    return module in _OPAQUE_PACKAGES


# How far from a library's global the attributes its code reads are followed (CONFIG.model.scale).
_LIBRARY_DEPTH = 8
# Objects of the standard library that hold a library's settings as attributes.
_NAMESPACES = frozenset({types.SimpleNamespace, argparse.Namespace, threading.local})


class _SameItems:
    """The results an ``lru_cache`` function holds, equal to another such tuple where they
    are the same objects (and it keeps them alive, so that no new one takes an old one's id)."""

    __slots__ = ("items",)

    def __init__(self, items: tuple[Any, ...]) -> None:
        self.items = items

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _SameItems):
            return NotImplemented
        return len(self.items) == len(other.items) and all(map(operator.is_, self.items, other.items))

    __hash__ = None  # type: ignore[assignment] -- unhashable, as __eq__ is by identity of its items


def _cached_items(wrapper: Any) -> _SameItems:
    """:class:`_SameItems` of what ``wrapper`` (an ``lru_cache`` function) holds now."""
    results = cached_results(wrapper)
    return _SameItems(() if results is NOT_SEEN else tuple(cast("list[Any]", results)))


def _users(value: Any) -> bool:
    """Whether ``value`` is the user's own: a function of the user's code, a class of the
    user's modules or an object of one (a config object or a hook the user gave a library)."""
    if _isa(value, types.FunctionType):
        return user_file(cast("types.FunctionType", value).__code__.co_filename)
    cls = value if _isa(value, type) else _type_of(value)
    module = sys.modules.get(cls.__module__)
    return module is not None and module.__name__ != "builtins" and user_module(module)


def _third_party_class(cls: type) -> bool:
    """Whether ``cls`` is defined in an installed package's code (``third_party_file``)."""
    module = sys.modules.get(cls.__module__)
    filename = getattr(module, "__file__", None)
    return isinstance(filename, str) and third_party_file(filename)


def _shapegrad_class(cls: type) -> bool:
    """Whether ``cls`` is shapegrad's or derives from one of its classes (a user's Module)."""
    return any(klass.__module__.startswith("shapegrad") for klass in cls.__mro__)


def _code_names(code: types.CodeType) -> set[str]:
    """The global and attribute names a code object and those nested in it (lambdas,
    comprehensions, inner functions) use."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


# The instructions that read or bind a global (or a name at a module's top level) by name.
_GLOBAL_ACCESS = frozenset({"LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_NAME", "STORE_NAME", "DELETE_NAME"})


# id(code) -> (the code, its global_names): looked up by identity at every call of a compiled
# step (free_values), where hashing a code object hashes its bytecode and constants
_GLOBAL_NAMES: dict[int, tuple[types.CodeType, tuple[str, ...]]] = {}


def global_names(code: types.CodeType) -> tuple[str, ...]:
    """The globals a code object and those nested in it read or bind, sorted: not every name
    of ``co_names``, which holds attribute names too (``sg.losses`` names ``losses``: a training
    script's global ``losses = []`` history is not read by a step calling ``sg.losses.mse``)."""
    known = _GLOBAL_NAMES.get(id(code))
    if known is not None and known[0] is code:
        return known[1]
    names = {str(i.argval) for i in dis.get_instructions(code) if i.opname in _GLOBAL_ACCESS}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names.update(global_names(const))
    if len(_GLOBAL_NAMES) >= 4096:
        _GLOBAL_NAMES.clear()
    found = _GLOBAL_NAMES[id(code)] = (code, tuple(sorted(names)))
    return found[1]


def _numeric_keys(container: Any) -> collections.Counter[tuple[type, Any]] | None:
    """A dict's numeric keys or a set's numeric items by type and bits (``exact``), and those
    of a subclass of ``str`` (a ``StrEnum``'s members) by type, or None where it holds none:
    ``==`` calls ``{1: v}``, ``{True: v}`` and ``{1.0: v}`` equal, ``{0.0}`` and ``{-0.0}``,
    and ``{"a": v}`` and ``{Mode.A: v}``, though the step's Python may tell them apart."""
    if not _isa(container, (dict, set)):
        return None
    told = [k for k in container if isinstance(k, (bool, int, float, complex)) or _str_subclass(k)]
    return collections.Counter((k.__class__, exact(k)) for k in told) if told else None


def _str_subclass(value: Any) -> bool:
    return isinstance(value, str) and value.__class__ is not str


# The instructions that read an attribute of what the one before left on the stack.
_ATTRIBUTE_READS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})


def library_module_attributes(code: types.CodeType, scope: dict[str, Any]) -> list[tuple[dict[str, Any], str, Any]]:
    """``(namespace, name, value)`` of each attribute of another package's module (the
    standard library's, NumPy's, shapegrad's) that ``code`` and the code nested in it read by a
    chain from one of its globals (``sys.argv``, ``np.tanh``, ``sg.losses.mse``): a replay
    runs none of those reads, so a monkeypatched function or ``sys.argv`` changed between
    calls is compared before each replay, as the user's own modules' attributes are."""
    found: list[tuple[dict[str, Any], str, Any]] = []
    module: Any = None  # the other package's module the previous instruction left, if any
    for instruction in dis.get_instructions(code):
        op, name = instruction.opname, instruction.argval
        value: Any = _MISSING
        if op == "LOAD_GLOBAL" and isinstance(name, str):
            value = scope.get(name, _MISSING)
        elif op in _ATTRIBUTE_READS and module is not None and isinstance(name, str):
            namespace = cast("dict[str, Any]", vars(module))
            value = namespace.get(name, _MISSING)
            if value is not _MISSING:
                found.append((namespace, name, value))
        module = value if _isa(value, types.ModuleType) and not user_module(value) else None
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found += library_module_attributes(const, scope)
    return found


def imported_inside(code: types.CodeType, scope: dict[str, Any]) -> list[tuple[dict[str, Any], str, Any]]:
    """The module attributes ``code`` (and the code nested in it) reads through an import
    inside a function (``from . import config`` then ``config.SCALE``, ``from .config import
    SCALE``, ``import somelib.config``): ``(the module's dict, a name, its value)`` for the names
    it imports from a module and, of each module it imports, those its code names. A module
    not imported yet is left out (the code did not run that import)."""
    found: list[tuple[dict[str, Any], str, Any]] = []
    names = set(code.co_names)
    constants: list[Any] = [0, None]  # the last two: an import's level, then its names
    module: types.ModuleType | None = None
    for instruction in dis.get_instructions(code):
        op, argument = instruction.opname, instruction.argval
        if op == "LOAD_CONST":
            constants = [constants[1], argument]
        elif op == "IMPORT_NAME":
            level = constants[0]
            module = None
            target = "." * level + argument if isinstance(level, int) and level > 0 else argument
            try:
                resolved = importlib.util.resolve_name(target, scope.get("__package__"))
            except (ImportError, ValueError, TypeError):
                continue
            module = sys.modules.get(resolved)
            if module is not None:
                namespace = vars(module)
                found += [(namespace, n, namespace[n]) for n in names if n in namespace]
        elif op == "IMPORT_FROM" and module is not None:
            namespace = vars(module)
            value = namespace.get(argument, _MISSING)
            if value is _MISSING:
                submodule = sys.modules.get(f"{module.__name__}.{argument}")
                value = _MISSING if submodule is None else submodule
            if value is not _MISSING:
                found.append((namespace, argument, value))
                if _isa(value, types.ModuleType):
                    inner = vars(value)
                    found += [(inner, n, inner[n]) for n in names if n in inner]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found += imported_inside(const, scope)
    return found


def _settings_table(value: Any) -> bool:
    """Whether ``value`` is a library's table of settings, compared item by item: a dict,
    list or set (an ``OrderedDict``, a ``defaultdict``, a dict with attribute access too) of
    at most ``SMALL_ARRAY`` numbers, strings, booleans and Nones (keys too). A larger one, or
    one holding anything else (a registry of classes), by identity only."""
    if not _isa(value, (dict, list, set)) or len(value) > SMALL_ARRAY:
        return False
    table = cast("dict[Any, Any] | list[Any] | set[Any]", value)
    items: list[Any] = [*table.keys(), *table.values()] if isinstance(table, dict) else list(table)
    return all(item is None or type(item) in (bool, int, float, str) for item in items)


def cell_contents(cell: Any, missing: Any = None) -> Any:
    """What a closure cell holds, or ``missing`` where it is empty (not yet assigned, or
    deleted)."""
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return missing


def _closure_values(fn: Any) -> list[Any]:
    """What a function's closure cells hold (an empty cell, not yet assigned, left out)."""
    values = [cell_contents(cell, _MISSING) for cell in fn.__closure__ or ()]
    return [v for v in values if v is not _MISSING]


def free_values(step: Callable[..., Any]) -> list[Any]:
    """What a step reads without taking it as an argument: a bound method's instance, its
    closure, the globals it names and its defaults (modules, classes and functions left
    out: :class:`Layout` follows functions itself)."""
    values: list[Any] = []
    fn: Any = step
    if isinstance(fn, types.MethodType):
        values.append(fn.__self__)
        fn = fn.__func__
    code = attribute(fn, "__code__")
    if code is not None:
        values += _closure_values(fn)
        scope = fn.__globals__
        values += [scope[name] for name in global_names(code) if name in scope]
        values += fn.__defaults__ or ()
        values += (fn.__kwdefaults__ or {}).values()
    return values


def reachable(args: tuple[Any, ...], kwargs: dict[str, Any], free: list[Any]) -> list[Any]:
    """Objects the step can reach without a call: its arguments, its ``free`` values, and
    one level into their attributes (where its modules, gradients and optimizers are)."""
    found: list[Any] = []

    def add(value: Any, depth: int) -> None:
        if isinstance(value, (tuple, list)) and depth < 2:
            for v in cast("tuple[Any, ...]", value):
                add(v, depth + 1)
        elif isinstance(value, dict) and depth < 2:
            for v in cast("dict[Any, Any]", value).values():
                add(v, depth + 1)
        elif not isinstance(value, _NOT_STATE):
            found.append(value)

    for a in (*args, *kwargs.values(), *free):
        add(a, 0)
    for value in list(found):
        attributes = attribute(value, "__dict__")
        if isinstance(attributes, dict):
            for v in cast("dict[str, Any]", attributes).values():
                add(v, 1)
    return found


def argument_objects(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The arguments that are objects the signature holds by identity (not tensors, arrays,
    numbers or strings), found through tuples, lists and dicts as the signature is: what
    is inside them is checked like a free value's."""
    found: list[Any] = []

    def add(value: Any) -> None:
        if isinstance(value, (tuple, list)):
            for v in cast("tuple[Any, ...]", value):
                add(v)
        elif isinstance(value, dict):
            for v in cast("dict[Any, Any]", value).values():
                add(v)
        elif isinstance(value, types.ModuleType) or not isinstance(value, (Tensor, np.ndarray, *_ATOMS)):
            found.append(value)  # a module too: the user's config module passed as an argument

    for a in (*args, *kwargs.values()):
        add(a)
    return found


class Layout:
    """What a recording assumed of the Python state its step reads, checked before a replay.

    A replay reads parameters and buffers from the tensor objects the recording found, and
    what the step's Python read is baked into it. So before a replay these must be as when
    recorded: the roots (free values, object arguments, modules) by identity; each module's
    attributes (sub-modules, parameters, lists and dicts of them, numbers; private ones such
    as ``self._scale`` too), its train/eval mode, no attribute added or removed; each plain
    object's attributes (all of
    them: a config dataclass, an ``argparse.Namespace``); each list's, dict's and set's
    items; the globals and closure variables of the functions the step and its modules'
    classes name (a helper's global, a class attribute, an attribute of the user's own
    config module); each tensor's array shape and dtype. A list of numbers or strings is
    compared by value in one C-level comparison, whatever its length.

    ``model.head = Linear(...)``, ``cfg.temperature = 0.5``, ``args.scale = 2``,
    ``TEMPERATURE = 0.5`` read by a helper, ``weights[3] = 0.0`` in a long list, or
    ``model.eval()`` after a recording make the next call record again instead of replaying
    what no longer is. Raises :class:`TooLarge` past ``BUDGET`` objects and items.
    """

    __slots__ = (
        "roots",
        "modules",
        "objects",
        "classes",
        "containers",
        "values",
        "class_sizes",
        "tensors",
        "arrays",
        "large",
        "large_digests",
        "held",
        "contexts",
        "loggers",
        "late_names",
        "generators",
        "iterators",
        "references",
        "cells",
        "library",
        "third_party",
        "count",
        "names",
        "foreign",
        "_names",
        "_held_modules",
        "_same",
    )

    def __init__(
        self, roots: list[Any], names: frozenset[str] | None = None, foreign: frozenset[str] | None = None
    ) -> None:
        self.roots = list(roots)
        # The attribute names the step's code could have read (None: all of them, where the
        # code that ran is not known): other attributes of objects and modules are not checked,
        # but for their tensors and modules (reached by names built at run time too:
        # getattr(self, f"weight_ih_l{k}")). ``foreign``: the names of code other than
        # shapegrad's, which are those an object of the user's own classes can have been
        # read by (a trainer's step_count is not the optimizer's).
        self.names = names
        self.foreign = names if foreign is None else foreign
        self._walk(roots)
        # An operator.attrgetter("gain", "bias") made outside the step reads attributes by names
        # no bytecode that ran holds: walked again, those names read too.
        while self.names is not None and not self.late_names <= self.names:
            self.names = self.names | self.late_names
            self.foreign = None if self.foreign is None else self.foreign | self.late_names
            self._walk(roots)
        # the larger arrays' contents now: a NumPy result the step computed from one (float(TABLE[0, 0]),
        # sg.tensor(TABLE[:4] * 2)) is a constant of the recording, right only while they hold this
        self.large_digests = self.digests()

    def _walk(self, roots: list[Any]) -> None:
        """Note what ``roots`` reach (see the class's docstring)."""
        # (module, its __dict__'s size without "training", its mode, its other (name, value) pairs)
        self.modules: list[tuple[Any, int, bool, tuple[tuple[str, Any], ...]]] = []
        # (a plain object, whether it has a __dict__ (else slots, read with getattr), the
        # dict's size, its (name, value) pairs)
        self.objects: list[tuple[Any, bool, int, tuple[tuple[str, Any], ...]]] = []
        # (a module or plain object, its class): ``model.__class__ = Other`` between calls gives
        # it another forward under the same attributes
        self.classes: list[tuple[Any, type]] = []
        # (a list, dict, set or deque, a copy of it, its items' types where they are compared by
        # value: 1 == 1.0 == True, yet sg.tensor of each has another dtype; else None)
        # (container, copy, item types or None where held by identity, the zeros' keys and bits,
        # a dict's numeric keys or a set's numeric items by type and bits, else None: {1: v} ==
        # {True: v} == {1.0: v} and {0.0} == {-0.0}, though the step may branch on either)
        self.containers: list[
            tuple[Any, Any, list[type] | None, list[tuple[Any, bytes]], collections.Counter[tuple[type, Any]] | None]
        ] = []
        # (a namespace: globals, a class's or a module's dict; a name; the value it held)
        self.values: list[tuple[Any, str, Any]] = []
        # (shapegrad's own class's dict, how many attributes it held): a method added to it
        # between calls (nn.Linear.__call__ patched on a class that inherited it) changes it
        self.class_sizes: list[tuple[Any, int]] = []
        # a tensor, its array's shape, dtype and strides, what makes it a parameter (None: it is
        # not) and whether it trains (model.freeze(...) changes which gradients the step computes).
        # The strides: NumPy sums and iterates in memory order, and a replay's buffers keep the
        # recorded one, so a parameter given a Fortran-ordered array (p._data = np.asfortranarray(
        # ...), a transposed copy) rounded otherwise than eager (see _compile._memory_order)
        self.tensors: list[tuple[Any, tuple[int, ...], Any, Any, Any, bool]] = []
        self.arrays: list[tuple[Any, Any]] = []  # a small NumPy array and a copy of it
        self.large: list[Any] = []  # larger NumPy arrays of numbers (see digests)
        # (a holder built in C, what it holds now, how to ask it again): a buffer's bytes, a
        # PyTorch tensor's (_compile_holders)
        self.held: list[tuple[Any, Any, Callable[[Any], Any]]] = []
        self.contexts: list[tuple[Any, Any]] = []  # a contextvars.ContextVar and its value
        # (a logger, its effective level, whether it is disabled, logging.disable's level): what
        # isEnabledFor answers (a logger's own cache of it refills in the step after setLevel)
        self.loggers: list[tuple[Any, int, bool, int]] = []
        # attribute names read by an operator.attrgetter or methodcaller the step reaches
        self.late_names: set[str] = set()
        self.generators: list[Any] = []  # NumPy generators (a draw from one in Python is a value read)
        self.iterators: list[Any] = []  # iterators and generators (advancing one is a value read)
        self.references: list[tuple[Any, Any]] = []  # a weak reference and what it gave (cfg_ref().t)
        # a closure cell of a function it reaches and what it held (_MISSING: empty): a helper's
        # variable of the function that made it, rebound there (temperature = 2.0 in main())
        self.cells: list[tuple[Any, Any]] = []
        # the library's objects held by identity (Gradients, optimizers), however deep: a step may
        # reach its optimizer through a helper's closure or trainer.parts.opt, not only as a free value
        self.library: list[Any] = []
        # installed packages' classes it reaches (that of a library's object the step holds):
        # add_third_party_globals follows the class attributes their code reads
        self.third_party: list[Any] = []
        self.count = 0
        # identity_check's function, built at the first check (None: too large to generate)
        self._same: Callable[[list[Any]], bool] | None | object = _UNBUILT
        seen: set[int] = {id(Tensor)}
        # any of Tensor's attributes set or deleted between calls (x.relu() or an operator patched,
        # or put back) records again: one token, not each method's identity
        self.values.append((CLASS_WRITES, "token", CLASS_WRITES["token"]))
        self._add_users(roots, seen)

    def _add_users(self, roots: list[Any], seen: set[int]) -> None:
        """What ``roots``, the user's objects, functions and modules, reach (see ``_add``)."""
        self._names: set[str] = set()  # the names the user's functions it reaches use
        self._held_modules: list[types.ModuleType] = []  # the user's modules held as values (self.cfg = config)
        for root in roots:
            self._add(root, seen)
        # A user's module held in a closure, an attribute or an argument (def step(x, config): config.LR):
        # the names of it that the user's functions use, until following those finds no new name.
        looked_up: dict[int, set[str]] = {}
        while True:
            fresh = [(m, self._names - looked_up.setdefault(id(m), set())) for m in self._held_modules]
            fresh = [(m, wanted) for m, wanted in fresh if wanted]
            if not fresh:
                break
            for module, wanted in fresh:
                looked_up[id(module)] |= wanted
                self._add_module_names(module, wanted, seen)
        del self._names, self._held_modules

    def add_third_party_globals(self, watch: Watch) -> None:
        """The globals that installed packages' code which ran in the step read (a library's
        ``FACTOR``, ``config.DROPOUT`` through its ``config`` module), as the step left them:
        a replay runs none of that code, so a setting changed between calls records again
        instead of replaying the value it had (``third_party_file``: not the standard library,
        shapegrad, nor the packages shapegrad itself drives; only code the step's code called,
        see ``called_library``)."""
        if watch.codes is None or watch.scopes is None:
            return
        seen: set[tuple[int, str]] = set()
        followed: set[int] = set()
        # what that code, or the user's (obj.forward(x) on a library's object), may read attributes by
        library = watch.library_names()
        names = None if library is None or self.foreign is None else library | self.foreign
        ran = watch.libraries
        for code in ran:
            scope = watch.scopes.get(code)
            if scope is not None:
                self.add_library_code(code, scope, names, ran, seen, followed)
        # the functions whose code ran (their closures and defaults), however the step reached them
        referrers = gc.get_referrers(*ran) if ran else []  # one pass over the heap
        functions = [f for f in referrers if _isa(f, types.FunctionType) and f.__code__ in ran]
        for value in self.third_party + functions:
            self._add_library_state(value, names, ran, followed, 0)
        self._same = _UNBUILT  # the identity check is built again with these

    def add_library_code(
        self,
        code: types.CodeType,
        scope: dict[str, Any],
        names: frozenset[str] | None,
        ran: set[types.CodeType],
        seen: set[tuple[int, str]],
        followed: set[int],
    ) -> None:
        """What one installed package's code object reads: its globals, its modules'
        attributes (``config.DROPOUT``, through a module it imports inside too: ``from . import
        config``) and what they hold (see :meth:`_add_library_state`); ``seen`` and
        ``followed``: what was added already."""
        read = global_names(code)
        if "globals" in read and "globals" not in scope:  # globals()["SCALE_" + act]: any of them
            read = tuple(name for name in scope if not (name.startswith("__") and name.endswith("__")))
        found = [(scope, name, scope[name]) for name in read if name in scope]
        for namespace, name, value in found + library_module_attributes(code, scope) + imported_inside(code, scope):
            if (id(namespace), name) not in seen:
                seen.add((id(namespace), name))
                self.values.append((namespace, name, value))
                self._add_library_state(value, names, ran, followed, 0)

    def _add_library_state(
        self, value: Any, names: frozenset[str] | None, ran: set[types.CodeType], followed: set[int], depth: int
    ) -> None:
        """What installed packages' code that ran may have read through ``value``, one of its
        globals or a function or class of its that the step reaches: a table of settings item
        by item (``LAYERS["act"] = "relu"``); the environment (``os.environ``, ``os.getenv``)
        and a ``ContextVar``'s value; of its classes and its objects (a ``Config`` class, a
        global ``CONFIG = Config()``, a ``SimpleNamespace``, an object with ``__slots__``),
        the attributes its code names (``names``), and what those hold, a few levels deep
        (``CONFIG.model.scale``), and its methods (patched between calls: ``Layer.__call__ =
        ...``); of its functions that ran (``ran``), the variables their closures hold and their
        defaults; what a logger, a small NumPy array or an ``lru_cache`` function holds.
        ``names`` None: every attribute. A replay runs none of that code, so each is compared
        as the step left it (a container of other objects, a registry, by identity)."""
        if value is os and (names is None or names & _ENVIRONMENT_NAMES):  # os.environ.get("SOMELIB_SCALE")
            value = os.environ
        if depth > _LIBRARY_DEPTH or id(value) in followed:
            return
        owner: Any = getattr(value, "__self__", None) if _isa(value, types.BuiltinMethodType) else None
        if owner is not None and not _isa(owner, types.ModuleType):
            self._add_library_state(owner, names, ran, followed, depth + 1)  # _lookup = SCALES.get
            return
        if _isa(value, types.ModuleType) and user_module(value):  # the user's config module handed to it
            module = cast("types.ModuleType", value)
            self._add_module_names(module, set(vars(module)) if names is None else set(names), followed)
            return
        if _isa(value, _ATOMS):
            return
        if (
            value is os.environ
            or value is os.getenv
            or _isa(value, (contextvars.ContextVar, logging.Logger, *NUMPY_GENERATORS))
            or (_isa(value, np.ndarray) and value.size <= SMALL_ARRAY)
            or is_iterator(value)
        ):
            # the environment's items, a ContextVar's value (with somelib.scaled(2)), a logger's
            # level, a generator's draws, a table of gains, an iterator (itertools.cycle of
            # rates): as the step's own code reaching them would have them compared
            self._add_users([value], followed)
            if _isa(value, contextvars.ContextVar):  # its own default, which _add's value leaves out
                self._add_library_state(_context_default(value), names, ran, followed, depth + 1)
            return
        if _users(value):  # the user's own objects and functions handed to it (configure(cfg), a hook)
            self._add_users([value], followed)
            return
        followed.add(id(value))
        self._note()
        if _settings_table(value):
            self._add_container(value, followed)
            return
        inner: list[Any] = []
        if is_lru_cache(value):  # @lru_cache def get_settings(): the settings it gave, cleared and made again
            results = cached_results(value)
            if results is not NOT_SEEN:
                held = tuple(cast("list[Any]", results))
                self.held.append((value, _SameItems(held), _cached_items))
                inner += held
        elif _isa(value, type):
            for klass in cast("type", value).__mro__:
                if klass is object or not _third_party_class(klass):
                    continue
                namespace = klass.__dict__
                for name, item in namespace.items():
                    method = _isa(item, (types.FunctionType, staticmethod, classmethod, property))
                    if name.startswith("__") and name.endswith("__"):
                        if not method:
                            continue  # __module__, __doc__; a dunder method runs unnamed: always compared
                    elif names is not None and name not in names:
                        continue
                    self.values.append((namespace, name, item))
                    if not method:
                        inner.append(item)
        elif _isa(value, types.FunctionType):
            fn = cast("types.FunctionType", value)
            if fn.__code__ in ran:
                for cell in fn.__closure__ or ():
                    contents = cell_contents(cell, _MISSING)
                    self.cells.append((cell, contents))
                    inner.append(contents)
                inner += fn.__defaults__ or ()  # def f(x, opts={"scale": 2.0})
                inner += (fn.__kwdefaults__ or {}).values()
        elif _third_party_class(_type_of(value)) or _type_of(value) in _NAMESPACES:
            attributes = attribute(value, "__dict__")  # a threading.local's: this thread's
            if _isa(attributes, dict):
                entries = cast("dict[str, Any]", attributes)
                for name in entries.keys() if names is None else names & entries.keys():
                    self.values.append((entries, name, entries[name]))
                    inner.append(entries[name])
            slots = {n for cls in _type_of(value).__mro__ for n in getattr(cls, "__slots__", ()) if n != "__weakref__"}
            slots = slots if names is None else slots & names
            if slots:  # a settings class with __slots__ (or a frozen dataclass with slots=True)
                items = tuple((n, attribute(value, n, _MISSING)) for n in sorted(slots))
                self.objects.append((value, False, len(items), items))
                inner += (v for _, v in items)
            inner.append(_type_of(value))  # the class attributes it reads through the object
        else:
            inner += self._held_items(value)
        for item in inner:
            if item is not _MISSING:
                self._add_library_state(item, names, ran, followed, depth + 1)

    def _held_items(self, value: Any) -> list[Any]:
        """What a container, a read-only or chained mapping, a weak reference or a partial of
        a library's holds, to follow (a registry's items: ``REGISTRY["scale"].value``); a small
        mutable container's items compared by identity (one replaced between calls)."""
        if _isa(value, (list, tuple, dict, set, frozenset, collections.deque)):
            items: list[Any] = list(cast("dict[Any, Any]", value).values()) if _isa(value, dict) else list(value)
            if len(items) > SMALL_ARRAY:
                return []  # a long registry: by identity only
            if not _isa(value, (tuple, frozenset)):
                held: Any = value
                copy: Any = dict(held) if _isa(held, dict) else set(held) if _isa(held, set) else list(held)
                self.containers.append((value, copy, None, [], None))
            return items
        if _isa(value, types.MappingProxyType):
            return [m for m in gc.get_referents(value) if _isa(m, dict)]
        if _isa(value, collections.ChainMap):
            return [cast("collections.ChainMap[Any, Any]", value).maps]
        if _isa(value, weakref.ref):
            target = cast("weakref.ref[Any]", value)()
            self.references.append((value, target))
            return [target]
        if _isa(value, functools.partial):
            partial = cast("functools.partial[Any]", value)
            return [partial.func, partial.args, partial.keywords]
        return []

    def _read(self, name: str) -> bool:
        """Whether the step's code may have read an attribute called ``name``."""
        return self.names is None or name in self.names

    def _checked(self, owner: Any, attributes: Any) -> tuple[tuple[str, Any], ...]:
        """The ``(name, value)`` pairs of ``owner``'s ``attributes`` that are checked: a
        module's tensors and sub-modules always (a layer may reach them by names it builds);
        others where code that may have read ``owner``'s attributes names them (shapegrad's
        code reads those of its own classes' objects, the user's modules included, not of the
        user's other objects: a trainer's ``last_loss`` set after each call is not checked)."""
        module = _isa(owner, Module)
        names = self.names if _shapegrad_class(_type_of(owner)) else self.foreign
        return tuple(
            (n, v) for n, v in attributes if names is None or n in names or (module and _isa(v, (Tensor, Module)))
        )

    def _note(self, n: int = 1) -> None:
        self.count += n
        if self.count > BUDGET:
            raise TooLarge(
                f"it reaches more than {BUDGET:,} Python objects and items, too many to check before every "
                "replay (pass what changes as arguments)"
            )

    def _add(self, value: Any, seen: set[int]) -> None:
        if value is os.environ or value is os.getenv:  # from os import environ: its items by value
            data = _environment()
            if data is not None:
                self._add(data, seen)
            return
        if _isa(value, _ATOMS):
            if _isa(value, types.ModuleType) and id(value) not in seen:
                seen.add(id(value))
                self._held_modules.append(value)  # its names are looked up at the end
            return
        if _isa(value, type):  # a class it names (Config.LR): _add_class notes each class once
            self._add_class(value, seen)
            return
        if id(value) in seen:
            return
        seen.add(id(value))
        self._note()
        if _isa(value, Module):
            attributes = cast("dict[str, Any]", value.__dict__)
            # every attribute but the mode: a private one (self._scale, self._mask) is read as a
            # public one is; of those, the ones the code that ran names
            own = self._checked(value, ((n, v) for n, v in attributes.items() if n != "training"))
            self.modules.append((value, len(attributes) - ("training" in attributes), value.training, own))
            self.classes.append((value, _type_of(value)))
            for _, v in own:
                self._add(v, seen)
            self._add_class(_type_of(value), seen)
        elif _isa(value, Tensor):
            data = value._data
            param = value._param
            strides = getattr(data, "strides", None)
            self.tensors.append((value, data.shape, data.dtype, strides, param, param is not None and param.trainable))
        elif _isa(value, (list, dict, set, frozenset, tuple, collections.deque)):
            self._add_container(value, seen)
        elif _isa(value, NUMPY_GENERATORS):
            self.generators.append(value)
        elif is_iterator(value):
            self.iterators.append(value)
            if attribute(value, "__dict__") is not None:
                self._add_object(value, seen)  # a class of the user's with __next__: its counters too
        elif _isa(value, np.ndarray):
            if value.size <= SMALL_ARRAY:  # a table the step's Python may read (lr_table[epoch])
                self.arrays.append((value, value.copy()))
            elif value.dtype.kind in "biufc" and (self.names is not None or value.nbytes <= DIGESTED_BYTES):
                self.large.append(value)
        elif _library_object(value):
            self.library.append(value)
            wrapped = attribute(value, "__wrapped__")  # a compiled step called in the step: what it reads
            if wrapped is not None:
                self._add(wrapped, seen)
        elif self._add_held(value, seen):
            pass
        elif _isa(value, types.FunctionType):
            self._add_function(value, seen)
        elif _isa(value, types.MethodType):
            self._add(value.__self__, seen)
            self._add(value.__func__, seen)
        elif _isa(value, weakref.ref):  # a WeakValueDictionary's items too
            target = value()
            self.references.append((value, target))
            self._add(target, seen)
        elif _isa(value, functools.partial):
            self._add(value.func, seen)
            self._add(value.args, seen)
            self._add(value.keywords, seen)
        else:
            self._add_object(value, seen)

    def _add_held(self, value: Any, seen: set[int]) -> bool:
        """What an object built in C holds (see ``_compile_holders``), or a logger's levels;
        False where ``value`` is none of these."""
        torch = sys.modules.get("torch")
        if _isa(value, contextvars.ContextVar):
            self.contexts.append((value, _context_value(value)))
            self._add(_context_value(value), seen)
        elif is_buffer(value) or (torch is not None and _isa(value, torch.Tensor)):
            ask = buffer_state if is_buffer(value) else torch_state
            self.held.append((value, ask(value), ask))
            if _isa(value, memoryview):  # np.asarray(view) aliases what it views: written there too
                self._add(cast("memoryview", value).obj, seen)
        elif is_lru_cache(value):
            results = cached_results(value)
            if results is NOT_SEEN:
                raise TooLarge("it calls a functools.lru_cache function whose cached results cannot be read here")
            self._add(value.__wrapped__, seen)
            self._add(results, seen)
        elif _isa(value, types.MappingProxyType):  # a read-only view of a dict changed elsewhere
            for mapping in gc.get_referents(value):
                self._add(mapping, seen)
        elif _isa(value, logging.Logger):
            self.loggers.append(_logger_state(value))
        else:
            names = getter_names(value)
            if names is None:
                return False
            self.late_names |= names
        return True

    def _add_container(self, value: Any, seen: set[int]) -> None:
        items: list[Any] = list(cast("dict[Any, Any]", value).values()) if _isa(value, dict) else list(value)
        self._note(len(items) // 64)  # a long list of numbers costs a fraction per item
        if _isa(value, (tuple, frozenset)):  # cannot change; its holder holds it by identity
            for item in items:
                self._add(item, seen)
            return
        by_value = all(isinstance(v, _ATOMS) and not isinstance(v, np.generic) for v in items)
        if _isa(value, dict):
            copy: Any = dict(cast("dict[Any, Any]", value))
            by_value = by_value and all(isinstance(k, _ATOMS) for k in copy)
        elif _isa(value, set):
            copy = set(cast("set[Any]", value))
        elif _isa(value, collections.deque):
            copy = collections.deque(cast("collections.deque[Any]", value))  # a deque == a list is False
        else:
            copy = list(cast("list[Any]", value))
        # Types are compared where equal values may differ in type: numbers (1 == 1.0 == True),
        # strings of a short container ("a" == StrEnum.A, which ``is`` tells apart). Not for a
        # set (its order may change with no item changed) nor for a long list of strings alone
        # (a vocabulary: a pass over it at every call).
        numeric = any(isinstance(v, (bool, int, float, complex)) for v in items)
        typed = numeric or (len(items) <= SMALL_ARRAY and any(isinstance(v, str) for v in items))
        kinds: list[type] = list(map(type, items)) if typed and not _isa(value, set) else []
        # ``==`` calls 0.0 and -0.0 equal: the zeros' signs are compared apart
        zeros = signed_zeros(self._keyed(value)) if by_value and numeric else []
        keys = _numeric_keys(value)
        if (
            keys is None
            and _isa(value, (dict, set))
            and len(copy) <= SMALL_ARRAY
            and any(isinstance(k, str) for k in copy)
        ):
            keys = collections.Counter[tuple[type, Any]]()  # none now, but an equal StrEnum member may come in
        self.containers.append((value, copy, kinds if by_value else None, zeros, keys))
        if not by_value:
            for item in items:
                self._add(item, seen)

    @staticmethod
    def _keyed(container: Any) -> Any:
        """``(key, item)`` pairs of a container: a dict's keys, a sequence's positions, a set's
        items as their own keys."""
        if _isa(container, dict):
            return cast("dict[Any, Any]", container).items()
        if _isa(container, (set, frozenset)):
            return ((v, v) for v in cast("set[Any]", container))
        return enumerate(cast("list[Any]", container))

    def _add_object(self, value: Any, seen: set[int]) -> None:
        attributes = attribute(value, "__dict__")
        if _isa(attributes, dict):
            entries = cast("dict[str, Any]", attributes)
            items = self._checked(value, entries.items())
            self.objects.append((value, True, len(entries), items))
            self.classes.append((value, _type_of(value)))
        else:
            names = [n for cls in type(value).__mro__ for n in getattr(cls, "__slots__", ()) if n != "__weakref__"]
            if not names:  # an object of a C type (a NumPy generator, a lock): its identity only
                return
            items = self._checked(value, ((n, attribute(value, n, _MISSING)) for n in names))
            self.objects.append((value, False, len(names), items))
            self.classes.append((value, _type_of(value)))
        for _, v in items:
            self._add(v, seen)
        self._add_class(_type_of(value), seen)

    def _add_class(self, cls: type, seen: set[int]) -> None:
        """A class's own attributes and its methods' globals, for the user's classes."""
        for klass in cls.__mro__:
            if id(klass) in seen:
                continue
            seen.add(id(klass))
            namespace = klass.__dict__
            module = sys.modules.get(klass.__module__)
            if module is not None and module.__name__.partition(".")[0] == "shapegrad":
                self._add_library_methods(namespace)
                continue
            if module is None or not user_module(module):  # builtins, typing: not followed
                if _third_party_class(klass):
                    self.third_party.append(klass)
                continue
            self._note()
            for name, attribute in namespace.items():
                inner = attribute.__func__ if _isa(attribute, (staticmethod, classmethod)) else attribute
                dunder = name.startswith("__") and name.endswith("__")
                if dunder and not _isa(inner, (types.FunctionType, property)):
                    continue  # __module__, __doc__, a dataclass's fields; its methods (__getattr__) are followed
                if not dunder and not self._read(name):
                    continue  # named by no code that ran (a dunder method runs unnamed: always followed)
                self.values.append((namespace, name, attribute))  # as the class holds it: a staticmethod too
                if _isa(inner, property):
                    for accessor in (inner.fget, inner.fset):
                        if accessor is not None:
                            self._add(accessor, seen)
                else:
                    self._add(inner, seen)

    def _add_library_methods(self, namespace: Any) -> None:
        """The methods of one of shapegrad's classes a module is (``nn.Linear``), by identity,
        and how many attributes the class holds: a replay runs none of them, so one patched
        between calls (``nn.Linear.__call__ = lora_call``) records again."""
        self._note()
        self.class_sizes.append((namespace, len(namespace)))
        for name, attribute in namespace.items():
            if _isa(attribute, (types.FunctionType, staticmethod, classmethod, property)):
                self.values.append((namespace, name, attribute))

    def _add_function(self, fn: types.FunctionType, seen: set[int]) -> None:
        """A user function's closure, the globals it names (and, in the user's own modules it
        names, the attributes it names), its defaults; library functions by identity."""
        code = fn.__code__
        if not user_file(code.co_filename):
            wrapped = getattr(fn, "__wrapped__", None)  # a user's function under a library's decorator
            if wrapped is not None:
                self._add(wrapped, seen)
            return
        self._note()
        for cell in fn.__closure__ or ():
            contents = cell_contents(cell, _MISSING)
            self.cells.append((cell, contents))
            if contents is not _MISSING:
                self._add(contents, seen)
        scope = fn.__globals__
        names = _code_names(code)
        self._names |= names
        read = set(global_names(code))
        for name in names:
            value: Any = scope.get(name, _MISSING) if name in read else _MISSING
            if value is _MISSING:
                # a module of the user's imported inside a function (import cfg; cfg.SCALE):
                # bound there, not in the globals, so the module's names are checked instead
                imported = sys.modules.get(name)
                if imported is not None and user_module(imported):
                    self._add_module_names(imported, names, seen)
                    self._add(imported, seen)
                continue
            self.values.append((scope, name, value))
            if value is os and names & _ENVIRONMENT_NAMES:  # os.environ.get("DEBUG"), os.getenv("LR")
                self._add(os.environ, seen)
            if _isa(value, types.ModuleType):
                self._add_module_names(value, names, seen)
            self._add(value, seen)  # a module too: another function may read it (a helper's cfg.LR)
        for namespace, name, value in library_module_attributes(code, scope):
            self.values.append((namespace, name, value))
            if _isa(value, (list, dict, set, collections.deque)):  # sys.argv: its items by value
                self._add(value, seen)
        self._add(fn.__defaults__, seen)
        self._add(fn.__kwdefaults__, seen)

    def _add_module_names(
        self, module: types.ModuleType, names: set[str], seen: set[int], within: frozenset[int] = frozenset()
    ) -> None:
        """The attributes of the user's own module (``config.LR``) that a function names, and
        of the user's modules among them (``package.settings.LR``; ``within``: the modules
        this lookup came through)."""
        if id(module) in within or not user_module(module):
            return
        namespace = vars(module)
        for name in names:
            value = namespace.get(name, _MISSING)
            if value is not _MISSING:
                self.values.append((namespace, name, value))
                if _isa(value, types.ModuleType):
                    self._add_module_names(value, names, seen, within | {id(module)})
                else:
                    self._add(value, seen)

    def changed(self, roots: list[Any], modes: bool = True) -> str | None:
        """What differs in what the call reaches from when recorded (modules' modes too unless
        ``modes`` is false); None if nothing."""
        if modes:
            same = self._same
            if same is _UNBUILT:
                same = self._same = identity_check(self, _MISSING)
            try:
                identical = same is not None and cast("Callable[[list[Any]], bool]", same)(roots)
            except Exception:  # noqa: BLE001 -- a user's __getattr__, a missing key: the loops decide
                identical = False
            if identical:
                return self._values_changed()
        if len(roots) != len(self.roots) or not all(map(same_atom, roots, self.roots)):
            return "a value it reads by name (a closure variable, a global, a default) was rebound"
        for module, size, training, own in self.modules:
            attributes = module.__dict__
            if modes and module.training is not training:
                return f"{type(module).__name__}'s train/eval mode changed"
            if len(attributes) - ("training" in attributes) != size:
                return f"{type(module).__name__} gained or lost an attribute"
            for name, value in own:
                if not same_atom(attributes.get(name), value):
                    return f"{type(module).__name__}.{name} was replaced"
        for obj, kind in self.classes:
            if type(obj) is not kind:
                return f"{kind.__name__} object's class was changed to {type(obj).__name__} (obj.__class__ = ...)"
        for obj, has_dict, size, items in self.objects:
            if has_dict:
                attributes = obj.__dict__
                if len(attributes) != size:
                    return f"{type(obj).__name__} gained or lost an attribute"
                for name, value in items:
                    if not same_atom(attributes.get(name, _MISSING), value):
                        return f"{type(obj).__name__}.{name} was replaced"
            else:
                for name, value in items:
                    if not same_atom(attribute(obj, name, _MISSING), value):
                        return f"{type(obj).__name__}.{name} was replaced"
        for namespace, name, value in self.values:
            if not same_atom(namespace.get(name, _MISSING), value):
                return f"{name!r}, a name it reads through a function or a class, was rebound"
        for reference, target in self.references:
            if reference() is not target:
                return "a weak reference it reads now gives another object"
        for cell, contents in self.cells:
            if not same_atom(cell_contents(cell, _MISSING), contents):
                return "a variable a function it calls reads from the function that made it was rebound"
        for tensor, shape, dtype, strides, param, trainable in self.tensors:
            data = tensor._data
            if data.shape != shape or data.dtype != dtype:
                return f"a tensor it reads now holds {data.dtype}{list(data.shape)}, not {dtype}{list(shape)}"
            if getattr(data, "strides", None) != strides:
                return (
                    f"a tensor it reads now holds an array laid out otherwise in memory (strides "
                    f"{getattr(data, 'strides', None)}, not {strides}: a Fortran-ordered or transposed copy)"
                )
            now = tensor._param
            if now is not param or (now is not None and now.trainable is not trainable):
                return "a parameter it reads was frozen, unfrozen or made a parameter (model.freeze(...))"
        return self._values_changed()

    def _values_changed(self) -> str | None:
        """What differs of what is compared by value: the containers' items, small arrays."""
        for namespace, size in self.class_sizes:
            if len(namespace) != size:
                return "a method was added to or removed from a class of shapegrad's it reads (a monkeypatch)"
        for container, copy, kinds, zeros, keys in self.containers:
            kind = type(container).__name__
            if len(container) != len(copy):
                return f"a {kind} it reads changed its length"
            if keys is not None and _numeric_keys(container) != (keys or None):
                what = "a key" if _isa(container, dict) else "an item"
                return (
                    f"{what} of a {kind} it reads changed its type or sign (1 to 1.0 or True, "
                    '0.0 to -0.0, "a" to an equal StrEnum member, say)'
                )
            if kinds is not None:
                try:
                    same = bool(container == copy)
                except Exception:  # noqa: BLE001 -- an item whose == is not a truth value: changed
                    same = False
                if not same:
                    return f"an item of a {kind} it reads changed"
                if kinds and list(map(type, container.values() if _isa(container, dict) else container)) != kinds:
                    return f"an item of a {kind} it reads changed its type (1 to 1.0, say)"
                if zeros and self._zeros_changed(container, zeros):
                    return f"a zero in a {kind} it reads changed its sign (0.0 to -0.0, say)"
            elif _isa(container, dict):
                entries = cast("dict[Any, Any]", container)
                if not all(same_atom(entries.get(k, _MISSING), v) for k, v in copy.items()):
                    return "an item of a dict it reads was replaced"
            elif _isa(container, set):
                if container != copy:
                    return "a set it reads changed"
            elif not all(map(same_atom, container, copy)):
                return f"an item of a {kind} it reads was replaced"
        for array, copy in self.arrays:
            if not same_array(array, copy):
                return "a NumPy array it reads changed"
        for var, value in self.contexts:
            if not same_atom(_context_value(var), value):
                return f"context variable {var.name!r} it reads was set"
        for holder, state, ask in self.held:
            if ask(holder) != state:
                return f"what a {type(holder).__name__} it reads holds changed"
        for logger, *levels in self.loggers:
            if list(_logger_state(logger)[1:]) != levels:
                return f"the level of logger {logger.name!r} changed"
        if self.large and self.digests() != self.large_digests:
            return f"a NumPy array of more than {SMALL_ARRAY:,} elements it reads changed"
        return None

    def _zeros_changed(self, container: Any, zeros: list[tuple[Any, bytes]]) -> bool:
        """Whether an item that held a zero (``zeros``: its key and bits) holds another zero
        now (the container's ``==`` found it equal)."""
        if _isa(container, (set, frozenset)):  # -0.0 in a set finds 0.0: compare the zeros' bits
            return sorted(bits for _, bits in signed_zeros(self._keyed(container))) != sorted(b for _, b in zeros)
        return any(exact(container[key]) != bits for key, bits in zeros)

    def digests(self) -> list[int]:
        """A checksum of each larger NumPy array it reaches. Asked when a recording begins and
        ends, one the step writes in place in Python (``table[0, 0] += 1``) makes a recording
        no replay could repeat; asked before each replay, one written between calls records
        again (what NumPy computed from it in the step's Python is baked into the recording)."""
        return [zlib.crc32(np.ascontiguousarray(array).data) for array in self.large]


def _rebinds_free_variable(code: types.CodeType) -> bool:
    """Whether ``code`` assigns a variable of its closure (``nonlocal n; n += 1``)."""
    free = set(code.co_freevars)
    return bool(free) and any(
        i.opname in ("STORE_DEREF", "DELETE_DEREF") and i.argval in free for i in dis.get_instructions(code)
    )


class LibraryStart:
    """What installed packages' code the step calls reads, as that code found it when it
    first ran in the recording call (``watching``'s ``before_library``): compared with how
    the step left it, a counter the library advances itself (``STEP += 1``, ``next(SCHEDULE)``)
    tells a step that changes what it reads at every call, which a replay would not do."""

    __slots__ = ("layout", "seen", "positions", "states", "closures", "error")

    def __init__(self) -> None:
        self.layout = Layout([])
        self.seen: set[tuple[int, str]] = set()
        self.positions: list[tuple[Any, Any]] = []  # an iterator it reads and where it was
        self.states: list[tuple[Any, Any]] = []  # a NumPy generator it reaches and its state
        # a function whose code rebinds a variable of its closure (a counter: nonlocal n), and
        # what its cells held before it ran
        self.closures: list[tuple[types.FunctionType, tuple[Any, ...]]] = []
        self.error: str | None = None  # too much to follow: the step runs eagerly

    def before(self, frame: Any, ran: set[types.CodeType]) -> None:
        """Note what the code starting at ``frame`` reads through its globals and its
        arguments (a method's ``self``, a class method's ``cls``), before it runs (called from
        the profile hook: raises nothing)."""
        if self.error is not None:
            return
        layout = self.layout
        iterators, generators = len(layout.iterators), len(layout.generators)
        code: types.CodeType = frame.f_code
        names = code_names([code])
        followed: set[int] = set()  # per code: another code reads other attributes of the same objects
        try:
            layout.add_library_code(code, frame.f_globals, names, ran, self.seen, followed)
            count = code.co_argcount + code.co_kwonlyargcount
            arguments = frame.f_locals  # its closure's variables too
            for name in (*code.co_varnames[:count], *code.co_freevars):
                if name in arguments:
                    layout._add_library_state(arguments[name], names, ran, followed, 0)
            if _rebinds_free_variable(code):  # which function of this code runs is not known: each
                self.closures += [
                    (fn, tuple(cell_contents(c, _MISSING) for c in fn.__closure__ or ()))
                    for fn in gc.get_referrers(code)
                    if _isa(fn, types.FunctionType) and fn.__code__ is code
                ]
            self.positions += [(it, iterator_state(it)) for it in layout.iterators[iterators:]]
            self.states += [(g, generator_state(g)) for g in layout.generators[generators:]]
        except TooLarge as error:
            self.error = str(error)
        except Exception as error:  # noqa: BLE001 -- a library object's __getattr__ may do anything
            self.error = f"what an installed package's code reads could not be followed ({error!r})"

    def drew(self) -> bool:
        """Whether a NumPy generator it reaches (``self.rng`` of a library's object) drew."""
        return any_drew(self.states)

    def changed(self) -> str | None:
        """What of it the step changed; None if nothing."""
        if any(iterator_state(it) != where for it, where in self.positions):
            return "the next item of an iterator an installed package's code advances"
        for fn, before in self.closures:
            if not all(map(same_atom, (cell_contents(c, _MISSING) for c in fn.__closure__ or ()), before)):
                return "a variable of a closure of an installed package's, which its code rebinds (nonlocal)"
        return self.layout.changed([], modes=False)
