"""Calls of the step's Python that a replay cannot repeat: values from hidden state.

A replay runs none of the step's Python, so a number its Python drew from ``random``, from a
NumPy generator (``rng.uniform()``, ``np.random.rand()``) or read from a clock is baked in:
every replay would reuse the first one. While ``sg.compile`` records, :func:`watching`
installs a profile function (``sys.setprofile``, this thread only) that sees each call of a
C function and reports those draws and reads, made from the user's code, through
``report``; the recording then runs the step eagerly from then on, as for ``.item()``.
shapegrad's own draws (``sg.Generator``, dropout) are recorded calls, not reported.

Where a profiler already holds the profile hook (``cProfile``), it is left alone and these
calls are not watched.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import datetime
import dis
import gc
import linecache
import logging
import operator
import os
import random
import secrets
import string
import struct
import sys
import sysconfig
import time
import tokenize
import types
import uuid
import weakref
from collections.abc import Callable, Generator, Iterable
from typing import Any, cast

import numpy as np

__all__ = [
    "NUMPY_GENERATORS",
    "exact",
    "generator_states",
    "is_iterator",
    "iterator_state",
    "same_atom",
    "same_value",
    "signed_zeros",
    "user_file",
    "user_module",
    "watching",
]

_STATEFUL = (random.Random, np.random.Generator, np.random.RandomState, np.random.BitGenerator)
# The clocks, by the module that owns them (a C function's __self__) and name.
_CLOCKS = {
    id(time): {
        "time",
        "time_ns",
        "perf_counter",
        "perf_counter_ns",
        "monotonic",
        "monotonic_ns",
        "process_time",
        "process_time_ns",
        "thread_time",
        "thread_time_ns",
        "clock_gettime",
        "clock_gettime_ns",
        "localtime",  # given no seconds, these read the clock
        "gmtime",
        "ctime",
        "asctime",
        "strftime",
    },
    id(getattr(os.urandom, "__self__", None)): {"urandom"},  # posix (nt on Windows)
}
# The C functions that read a file (what they give is state a replay would not read again:
# a checkpoint a learner rewrites, a number in a text file), by their owner and name.
_FILES = {
    id(getattr(builtins.open, "__self__", None)): {"open"},
    id(getattr(np.fromfile, "__self__", None)): {"fromfile"},
}
_OPEN = builtins.open
# Python's own readers of source code (a warning's or a traceback's line, inspect.getsource):
# what they read is the program, not state a replay would miss
_SOURCE_READERS = frozenset(os.path.abspath(m.__file__) for m in (linecache, tokenize) if m.__file__)
# The standard library's Python that hands out its C callers' draws and clocks (random.uniform,
# secrets.token_bytes, uuid.uuid4): a draw made there is its caller's
_DRAWING_FILES = frozenset(os.path.abspath(m.__file__) for m in (random, secrets, uuid) if m.__file__)
_NOW = {"now", "utcnow", "today"}


_library: list[tuple[str, ...]] = []


def _library_dirs() -> tuple[str, ...]:
    """The standard library, installed packages, shapegrad and its backends' package (which
    an editable install leaves outside site-packages)."""
    if not _library:
        paths = _python_dirs("stdlib", "platstdlib", "purelib", "platlib")
        _library.append(tuple(set(paths).union(_shapegrad_dirs())))
    return _library[0]


def _python_dirs(*kinds: str) -> tuple[str, ...]:
    """The directories ``sysconfig`` names by ``kinds`` (``"stdlib"``, ``"purelib"``), each
    ending with a separator."""
    paths = sysconfig.get_paths()
    return tuple({os.path.abspath(paths[k]) + os.sep for k in kinds})


def _shapegrad_dirs() -> tuple[str, ...]:
    """shapegrad's package and its backends' (the code whose names are its own)."""
    dirs = [os.path.dirname(os.path.abspath(__file__))]
    backends = sys.modules.get("shapegrad_backends")
    if backends is not None and getattr(backends, "__file__", None):
        dirs.append(os.path.dirname(os.path.abspath(backends.__file__ or "")))
    return tuple(d + os.sep for d in dirs)


def user_module(module: types.ModuleType) -> bool:
    """Whether ``module`` is the user's: its file is (:func:`user_file`), or it has none and
    is ``__main__`` (an interactive session, a notebook) or was made at run time
    (``types.ModuleType("cfg")`` put in ``sys.modules``); a module built into the
    interpreter, frozen, or a namespace package is not."""
    filename = getattr(module, "__file__", None)
    if filename:
        return user_file(filename)
    if module.__name__ == "__main__":
        return True
    spec = getattr(module, "__spec__", None)
    return spec is None and module.__name__ not in sys.builtin_module_names


def user_file(filename: str) -> bool:
    """Whether code from ``filename`` is the user's: not the standard library, an installed
    package, shapegrad or its backends (whose clocks and draws are not the step's values;
    the globals an installed package's code reads are compared all the same, see
    :func:`third_party_file`)."""
    if filename.startswith("<"):  # <stdin>, <string>, an interactive cell: the user's
        return True
    return not os.path.abspath(filename).startswith(_library_dirs())


# Installed packages whose code shapegrad itself runs in a step (its array library, compilers,
# run-time checkers, backends): what their globals hold is theirs (caches, counters), not the
# step's settings. Every other installed package's code that runs in a step has the globals
# it reads compared before each replay (see third_party_file).
_OWN_DEPENDENCIES = frozenset(
    {"numpy", "numba", "llvmlite", "beartype", "jaxtyping", "typing_extensions", "wadler_lindig", "cupy", "mpi4py"}
)
_third_party: list[tuple[str, ...]] = []


def third_party_file(filename: str) -> bool:
    """Whether code from ``filename`` is an installed package's other than shapegrad, its
    backends and the packages shapegrad drives (``_OWN_DEPENDENCIES``): a library the step
    calls (``einops``, the user's own package installed without ``-e``), whose own module
    settings a replay would otherwise read as recorded. Not the standard library's (its
    ``site-packages`` directory aside: a virtual environment's lies inside ``platstdlib``)."""
    if not _third_party:
        _third_party.append(_python_dirs("purelib", "platlib"))
    if filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    for root in _third_party[0]:
        if path.startswith(root) and not path.startswith(_shapegrad_dirs()):
            top = path[len(root) :].split(os.sep, 1)[0].removesuffix(".py")
            return top.partition(".")[0] not in _OWN_DEPENDENCIES
    return False


def _asked_once_per_code(of_file: Callable[[str], bool]) -> Callable[[types.CodeType], bool]:
    """``of_file`` of a code object's file, asked once per code object (the profile hook asks
    at every call; a bounded cache)."""
    known: dict[types.CodeType, bool] = {}

    def ask(code: types.CodeType) -> bool:
        answer = known.get(code)
        if answer is None:
            if len(known) >= 16384:
                known.clear()
            answer = known[code] = of_file(code.co_filename)
        return answer

    return ask


_third_party_code = _asked_once_per_code(lambda filename: third_party_file(filename))
_user_code = _asked_once_per_code(lambda filename: user_file(filename))


def called_library(frame: Any, interrupting: frozenset[types.CodeType] = frozenset()) -> bool:
    """Whether ``frame`` runs an installed package's code (:func:`third_party_file`) that the
    user's code called, directly or through any other library's code (a library's context
    manager entered through ``contextlib``, a library's layer in an ``nn.Sequential``, a
    library's ``Module`` under the run-time checks' wrapper): not code that ran in the step
    without being called by it, such as an imported module's body (a library importing
    another lazily), a garbage-collection callback (``gc.callbacks``: hypothesis times
    collections in its globals), a ``__del__`` or a weak reference's callback run where
    shapegrad or NumPy happened to be (``interrupting``: the callbacks' own code)."""
    code = frame.f_code
    if code in interrupting or code.co_name in _NOT_CALLED or not _third_party_code(code):
        return False
    caller = frame.f_back
    while caller is not None and not _user_code(caller.f_code):
        if caller.f_code in interrupting or caller.f_code.co_name in _NOT_CALLED:
            return False
        caller = caller.f_back
    # a module's body run by an import (a library importing another lazily) is no call of the step's
    return caller is not None and not caller.f_code.co_filename.startswith("<frozen importlib")


# The code objects a library runs that the step's code did not call: a finalizer, a module's
# body as it is imported.
_NOT_CALLED = frozenset({"__del__", "<module>"})


_FINALIZE_CALL: types.CodeType = vars(weakref.finalize)["__call__"].__code__


def _interrupting_codes() -> frozenset[types.CodeType]:
    """The code of the garbage collector's callbacks (``gc.callbacks``), which run inside
    whatever code triggers a collection; and the standard library's that calls a
    ``weakref.finalize`` callback (where an object happens to die) or a logging handler (a
    handler counting records: output, not the step's settings)."""
    found: set[types.CodeType] = {_FINALIZE_CALL, logging.Logger.callHandlers.__code__}
    for callback in gc.callbacks:
        function = getattr(callback, "__func__", callback)
        code = getattr(function, "__code__", None)
        if isinstance(code, types.CodeType):
            found.add(code)
    return frozenset(found)


def _asked_by_user(frame: Any) -> bool:
    """Whether the code at ``frame`` (a library's, opening a file) runs for the user's code:
    the nearest frame of the user's or of shapegrad's is the user's (np.load, Path.read_text,
    json.load in the step; not the fused loops' disk cache, nor a source line read for a
    warning or a traceback (linecache: the user's own warnings.warn too), nor an import's: a module a library imports lazily, reading its package's
    metadata, is read once, as eagerly)."""
    library = _shapegrad_dirs()
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith("<frozen importlib") or os.path.abspath(filename) in _SOURCE_READERS:
            return False
        if not filename.startswith("<") and os.path.abspath(filename).startswith(library):
            return False
        if user_file(filename):
            return True
        frame = frame.f_back
    return False


def _hidden_state(fn: Any) -> str | None:
    """What ``fn`` (a C function about to be called) reads that a replay would not read
    again, or None."""
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__name__", "?")
    if isinstance(owner, _STATEFUL):
        return f"a random number drawn in Python ({type(owner).__name__}.{name})"
    if (owner is datetime.datetime or owner is datetime.date) and name in _NOW:
        return f"the clock (datetime.{name})"
    if name in _CLOCKS.get(id(owner), ()):  # identity: an owner's == may be an array's
        return f"the clock or the system's random source ({getattr(owner, '__name__', '?')}.{name})"
    if name in _FILES.get(id(owner), ()):
        return f"a file ({name}), which a replay would not read again"
    return None


# NumPy's generators are Cython: their draws make no profile events. Instead the states of
# those the step reaches (and NumPy's global one, behind np.random.rand) are compared before
# and after the recording run.
NUMPY_GENERATORS = (np.random.Generator, np.random.RandomState, np.random.BitGenerator)


def generator_states(generators: list[Any]) -> list[Any]:
    """The state of each NumPy generator in ``generators`` and of NumPy's global one."""
    global_state: Any = np.random.mtrand._rand  # behind np.random.rand
    return [generator_state(g) for g in [*generators, global_state]]


def any_drew(noted: Iterable[tuple[Any, Any]]) -> bool:
    """Whether any NumPy generator of ``noted`` (``(generator, its state then)`` pairs) drew
    since its state was noted."""
    return any(not same_value(generator_state(g), state) for g, state in noted)


def generator_state(generator: Any) -> Any:
    """A NumPy generator's state (one of ``NUMPY_GENERATORS``)."""
    if isinstance(generator, np.random.Generator):
        return generator.bit_generator.state
    if isinstance(generator, np.random.RandomState):
        return generator.get_state(legacy=False)
    return generator.state


def _is_dict(value: Any) -> bool:
    return isinstance(value, dict)


def _is_tuple(value: Any) -> bool:
    return isinstance(value, tuple)


def _is_ndarray(value: Any) -> bool:
    return isinstance(value, np.ndarray)


# The types whose objects are compared by value, bit for bit, where the same object is not
# found: a number or a string rebuilt at every call (``SCALE = float(i % 3)``) is the value a
# recording baked in, not another object (the exact types only: a subclass may carry more).
_BY_VALUE = frozenset({int, float, complex, str, bytes})


def exact(value: Any) -> Any:
    """What tells a value apart from every other of its type: a float's or complex number's
    bits (0.0 apart from -0.0, which ``==`` calls equal though ``1 / x`` tells them apart, and
    a NaN equal to itself, bit for bit); any other value itself."""
    kind: type = value.__class__
    if kind is float:
        return struct.pack("<d", value)
    if kind is complex:
        return struct.pack("<dd", value.real, value.imag)
    return value


def same_atom(a: Any, b: Any) -> bool:
    """The same object, or equal numbers or strings of one exact type, bit for bit, or tuples
    of such (``self.last_shape = tuple(x.shape)`` at every call is no change)."""
    if a is b:
        return True
    kind: type = a.__class__
    if kind is not b.__class__:
        return False
    if kind is tuple:
        return len(a) == len(b) and all(map(same_atom, a, b))
    return kind in _BY_VALUE and exact(a) == exact(b)


_drawing_code = _asked_once_per_code(lambda filename: os.path.abspath(filename) in _DRAWING_FILES)


def signed_zeros(items: Any) -> list[tuple[Any, bytes]]:
    """``(key, bits)`` of each float or complex item of ``items`` (``(key, value)`` pairs) that
    holds a zero: the items a container's ``==`` would call equal to one holding -0.0 there."""
    found: list[tuple[Any, bytes]] = []
    for key, value in items:
        kind: type = value.__class__
        if (kind is float and value == 0.0) or (kind is complex and (value.real == 0.0 or value.imag == 0.0)):
            found.append((key, exact(value)))
    return found


def same_value(a: Any, b: Any) -> bool:
    """The same object, or equal values of one type: numbers and strings, and tuples, lists,
    dicts and NumPy arrays of them (a generator's state; what a step read of its optimizer).
    Objects of any other kind are the same only where they are the same object."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if _is_ndarray(a):  # bit for bit, as a number is
        return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if _is_dict(a):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        left, right = cast("tuple[Any, ...]", a), cast("tuple[Any, ...]", b)
        return len(left) == len(right) and all(same_value(x, y) for x, y in zip(left, right, strict=True))
    if isinstance(a, (float, complex)):
        return exact(a) == exact(b)  # bit for bit: -0.0 is not 0.0, a NaN is itself
    if isinstance(a, (bool, int, str)):
        return bool(a == b)
    return False


def is_iterator(value: Any) -> bool:
    """An iterator or a generator (something ``next`` advances), not a container."""
    kind: type = value.__class__  # the class's attributes: an instance's __getattr__ may raise anything
    return hasattr(kind, "__next__") or hasattr(kind, "gi_frame") or hasattr(kind, "ag_frame")


def iterator_state(value: Any, depth: int = 0) -> Any:
    """Where an iterator is: a generator's frame position, else how many items it has left
    (``length_hint``) or, for iterators without one (``itertools.count``, ``zip`` of
    iterators), what its pickling reduces to, their inner iterators' states included."""
    for name in ("gi_frame", "cr_frame", "ag_frame"):
        if hasattr(value, name):
            frame = getattr(value, name)
            if frame is None:
                return ("frame", None)
            # where it is and what its variables hold: a `while True: k += 1; yield k` is at the
            # same instruction after each item
            return ("frame", frame.f_lasti, tuple(map(id, frame.f_locals.values())))
    hint = operator.length_hint(value, -1)
    if hint >= 0 or depth > 2:
        return ("left", hint)
    try:
        reduced = value.__reduce__()
    except Exception:  # noqa: BLE001 -- an iterator that cannot say where it is
        return ("left", hint)
    parts: list[Any] = []
    arguments: tuple[Any, ...] = tuple(reduced[1:]) if _is_tuple(reduced) else ()
    for part in arguments:
        inner: tuple[Any, ...] = tuple(part) if _is_tuple(part) else (part,)
        for item in inner:
            if is_iterator(item):
                parts.append(iterator_state(item, depth + 1))
            elif isinstance(item, (int, float, str, bytes, bool, type(None))):
                parts.append(item)
    return ("reduced", tuple(parts))


# What reads an object's attributes by names no bytecode or constant holds: getattr and
# hasattr with a name the code builds or is given (getattr(cfg, f"{task}_weight"),
# getattr(cfg, key)), vars(args) (**vars(args) into a function), dataclasses.asdict.
_DYNAMIC_BUILTINS = frozenset({id(builtins.getattr), id(builtins.hasattr), id(builtins.vars)})
_DYNAMIC_CODES = frozenset({dataclasses.asdict.__code__, dataclasses.astuple.__code__})


# Names by which code reads every attribute of an object at once: ``cfg.__dict__``,
# ``cfg.__getstate__()`` (``object.__getstate__`` hands over the instance's dict),
# ``__reduce__``/``__reduce_ex__`` (their third item), ``__match_args__``.
_EVERY_ATTRIBUTE = frozenset({"__dict__", "__getstate__", "__reduce__", "__reduce_ex__", "__match_args__"})

# id(code) -> (the code, whether it reads every attribute): asked once per code object.
_EVERY_ATTRIBUTE_CODES: dict[int, tuple[types.CodeType, bool]] = {}


def _reads_every_attribute(code: types.CodeType) -> bool:
    """Whether ``code`` (not the code objects nested in it: they run as their own) may read
    an object's attributes by names its bytecode and constants do not hold: it names one of
    :data:`_EVERY_ATTRIBUTE`, or matches a class pattern with positional sub-patterns
    (``MATCH_CLASS`` with a count: ``case Cfg(mode, scale)`` reads ``Cfg.__match_args__``'s
    attributes in C)."""
    known = _EVERY_ATTRIBUTE_CODES.get(id(code))
    if known is not None and known[0] is code:
        return known[1]
    found = not _EVERY_ATTRIBUTE.isdisjoint(code.co_names) or any(
        i.opname == "MATCH_CLASS" and i.arg for i in dis.get_instructions(code)
    )
    if len(_EVERY_ATTRIBUTE_CODES) >= 4096:
        _EVERY_ATTRIBUTE_CODES.clear()
    _EVERY_ATTRIBUTE_CODES[id(code)] = (code, found)
    return found


class Watch:
    """What :func:`watching` saw: the code objects that ran (None where a profiler held the
    hook and nothing was watched), and whether the user's code read attributes by names it
    built at run time (``dynamic``: then which it read is not known)."""

    __slots__ = ("codes", "scopes", "dynamic", "libraries", "generators", "library_dynamic")

    def __init__(self, codes: set[types.CodeType] | None, scopes: dict[types.CodeType, Any] | None = None) -> None:
        self.codes = codes
        self.scopes = scopes  # each code object's globals, as it ran
        self.dynamic = False
        # installed packages' code the step's code called (through others' too): see called_library
        self.libraries: set[types.CodeType] = set()
        # id -> (a NumPy generator such code names among its globals, its state before it ran)
        self.generators: dict[int, tuple[Any, Any]] = {}
        self.library_dynamic = False  # such code called getattr, hasattr or vars

    def library_drew(self) -> bool:
        """Whether installed packages' code that the step called drew from a NumPy generator
        among its globals (``RNG.random()`` in a library's jitter)."""
        return any_drew(self.generators.values())

    def _names_unknown(self) -> bool:
        """Whether the names attributes were read by are not known: nothing was watched, or
        the user's code called getattr, hasattr or vars (a name built at run time:
        getattr(cfg, f"{task}_weight")), dataclasses.asdict, named ``__dict__`` or another
        name that hands over every attribute (``cfg.__getstate__()``, ``__reduce_ex__``), or
        matched a class pattern with positional sub-patterns (``case Cfg(mode, scale)`` reads
        the attributes ``Cfg.__match_args__`` names, in C)."""
        if self.codes is None or self.dynamic:
            return True
        return any(user_file(code.co_filename) and _reads_every_attribute(code) for code in self.codes)

    def read_names(self) -> frozenset[str] | None:
        """Every name the code that ran could have read an attribute by: the names its
        bytecode uses and its string constants (``getattr(cfg, "lr")``), or None if unknown."""
        if self.codes is None or self._names_unknown():
            return None
        names: set[str] = set()
        for code in self.codes:
            names.update(code.co_names)
            _strings(code.co_consts, names)
        return frozenset(names)

    def foreign_names(self) -> frozenset[str] | None:
        """The attribute names code other than shapegrad's own (the user's, the standard
        library's, other packages') could have read an object's attribute by: the names its
        attribute reads and writes use, but for a module's (``sg.losses.mse`` reads no
        object's ``losses``), and its string constants (``getattr(cfg, "lr")``); None if
        unknown."""
        if self.codes is None or self.scopes is None or self._names_unknown():
            return None
        own = _shapegrad_dirs()
        names: set[str] = set()
        for code in self.codes:
            if not os.path.abspath(code.co_filename).startswith(own):
                names |= object_attribute_names(code, self.scopes.get(code, {}))
                _strings(code.co_consts, names)
        return frozenset(names)

    def library_names(self) -> frozenset[str] | None:
        """The names installed packages' code that the step called (``libraries``) uses, and
        its string constants: the attributes of its classes and objects it may have read;
        None where it may have read others, by names built at run time (``getattr(cfg,
        term + "_weight")``, ``vars(cfg)``, ``cfg.__dict__``)."""
        if self.library_dynamic or any(_reads_every_attribute(code) for code in self.libraries):
            return None
        return code_names(self.libraries)

    def user_names(self) -> frozenset[str] | None:
        """The names of :meth:`read_names` that the user's own code (not the library's) could
        have read an attribute by, or None if unknown."""
        if self.codes is None:
            return None
        names: set[str] = set()
        for code in self.codes:
            if user_file(code.co_filename):
                names.update(code.co_names)
                _strings(code.co_consts, names)
        return frozenset(names)


# The instructions that name a global or a module being imported, never an attribute.
_GLOBAL_OPS = frozenset(
    {"LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_NAME", "STORE_NAME", "DELETE_NAME", "IMPORT_NAME"}
)


def object_attribute_names(code: types.CodeType, scope: dict[str, Any]) -> set[str]:
    """The names of ``code`` (``co_names``) it may read an object's attribute by: not those
    it uses only for globals and imports, nor those it uses only for attributes of a module
    reached from a global (``sg.losses.cross_entropy`` reads a module's ``losses``, no
    trainer's); ``scope``: the globals it ran with."""
    kept: set[str] = set()
    dropped: set[str] = set()
    module: Any = None  # the module the previous instruction left on the stack, if any
    for instruction in dis.get_instructions(code):
        op, name = instruction.opname, instruction.argval
        if not isinstance(name, str) or name not in code.co_names:
            module = None
            continue
        if op in _GLOBAL_OPS:
            dropped.add(name)
            module = _module_or_none(scope.get(name)) if op == "LOAD_GLOBAL" else None
        elif module is not None and op in ("LOAD_ATTR", "LOAD_METHOD"):
            dropped.add(name)
            try:
                module = _module_or_none(getattr(module, name, None))
            except Exception:  # noqa: BLE001 -- a module's __getattr__ may do anything
                module = None
        else:
            kept.add(name)
            module = None
    return kept | (set(code.co_names) - dropped)


def code_names(codes: Any) -> frozenset[str]:
    """The names ``codes`` (and the code objects nested in them) use, and their string
    constants: what they may read an attribute by."""
    names: set[str] = set()
    stack = list(codes)
    while stack:
        code = stack.pop()
        names.update(code.co_names)
        _strings(code.co_consts, names)
        stack += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return frozenset(names)


def _module_or_none(value: Any) -> types.ModuleType | None:
    return value if isinstance(value, types.ModuleType) else None


def _strings(constants: Any, into: set[str]) -> None:
    for const in constants:
        if isinstance(const, str):
            into.add(const)
            if "{" in const:
                into |= format_attribute_names(const)
        elif isinstance(const, (tuple, frozenset)):
            _strings(const, into)


_FORMATTER = string.Formatter()


def format_attribute_names(text: str) -> set[str]:
    """The attribute names a format string's fields read (``"{0.act}"``, ``"{cfg.opt.lr:.3f}"``:
    ``act``; ``opt`` and ``lr``): ``str.format`` reads them in C, by names no bytecode holds."""
    names: set[str] = set()
    try:
        fields = [field for _, field, _, _ in _FORMATTER.parse(text) if field]
    except ValueError:  # not a format string ("{" in a message)
        return names
    for field in fields:
        for part in field.replace("[", ".").split(".")[1:]:
            if part.isidentifier():
                names.add(part)
    return names


@contextlib.contextmanager
def watching(
    report: Callable[[str], None],
    before_library: Callable[[Any, set[types.CodeType]], None] | None = None,
) -> Generator[Watch]:
    """While inside, each call the user's code makes of a function in :func:`_hidden_state`
    is reported (``report(what)``) before it runs, and the code objects that run are noted
    (the :class:`Watch` yielded). ``before_library(frame, the library code so far)`` is
    called before installed packages' code the step calls first runs (what it reads, as it
    found it: a counter it advances itself is told from one changed between calls)."""
    if sys.getprofile() is not None:  # a profiler's: not replaced
        yield Watch(None)
        return
    codes: set[types.CodeType] = set()
    ran = codes.add
    scopes: dict[types.CodeType, Any] = {}
    watch = Watch(codes, scopes)

    libraries = watch.libraries
    library_generators = watch.generators
    interrupting = _interrupting_codes()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            if code not in codes:
                ran(code)
                scopes[code] = frame.f_globals
                if code in _DYNAMIC_CODES:
                    watch.dynamic = True
            if code not in libraries and called_library(frame, interrupting):
                libraries.add(code)
                # its NumPy generators, before it draws (Cython: no profile event for a draw)
                scope = frame.f_globals
                for name in code.co_names:
                    value = scope.get(name)
                    if isinstance(value, NUMPY_GENERATORS) and id(value) not in library_generators:
                        library_generators[id(value)] = (value, generator_state(value))
                if before_library is not None:
                    before_library(frame, libraries)
            return
        if event != "c_call":
            return
        if id(arg) in _DYNAMIC_BUILTINS:
            if not watch.dynamic and user_file(frame.f_code.co_filename):
                watch.dynamic = True
            elif frame.f_code in libraries:
                watch.library_dynamic = True
        try:
            what = _hidden_state(arg)
        except Exception:  # noqa: BLE001 -- an exception here would end the hook in the user's code
            what = None
        if what is None:
            return
        if arg is _OPEN:  # a file opened for the user's code, through a library's too (np.load)
            if _asked_by_user(frame):
                report(what)
            return
        # Made by the user's code or an installed package's code it called (a library's
        # jitter), or by random's, secrets' or uuid's Python called by either; not shapegrad's
        # own use nor that of the packages it drives (numba timing its compiles), nor the
        # standard library's (logging stamping a record).
        caller = frame
        while caller.f_back is not None and _drawing_code(caller.f_code):
            caller = caller.f_back
        if caller.f_code in libraries or user_file(caller.f_code.co_filename):
            report(what)

    sys.setprofile(profile)
    try:
        yield watch
    finally:
        sys.setprofile(None)
