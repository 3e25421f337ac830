"""``sg.compile(step)``: record one eager run of a step at the array level, replay it after.

The first call of a compiled step for an argument signature runs the step eagerly while a
:class:`_Recorder` watches every array operation it does: the backend's ``xp`` namespace
is replaced by a recording proxy, the arrays the step computes are views of the subclass
:class:`_Traced` (so that operators, ufuncs, NumPy functions and array methods on them are
seen through ``__array_ufunc__``/``__array_function__`` and overridden methods), and a
tensor's ``_data`` slot reads pre-existing arrays (parameters, buffers, the step's
arguments) as inputs of the recording. Fused kernels, the backends' in-place helpers and
random draws are recorded as calls of the same callables, so a replay runs the same
kernels and draws fresh numbers from the same generators. An optimizer's update is
recorded as one host call (its schedule, bias correction and clipping are Python over
the step count), run again at every replay; so is ``sg.distributed``'s
``Comm.allreduce_mean`` (a collective every rank runs at the same place whether it
replays, records or runs eagerly; its host call sets the gradients' bookkeeping to what
the recording run found there first, since a replay restores it only at its end).

The recording becomes one generated Python function: a line per array operation on local
variables, element-wise results written into buffers allocated once (``out=``) and shared
between values whose lifetimes do not overlap. No tape, no tensor objects, no checks. Where
the backend compiles loops (NumPy with numba: :class:`_Fusion`), a chain of element-wise
operations (arithmetic, comparisons, ``where``, ``maximum``) becomes one call of a compiled
loop that keeps the chain's inner values in registers and rounds as NumPy does. Before
that, a recording without side effects beyond its own arrays (a forward pass) is narrowed to
the rows its results read (``_compile_narrow``): the last position of a sequence, say.

Anything the recording cannot follow makes the step run eagerly from then on, with one
:class:`CompileWarning`: a value read by Python (``.item()``, ``float(t)``, ``bool(t)``,
``.tolist()``, ``.numpy()``: the step's control flow may depend on it), a value from hidden
state (a random draw in Python, a clock, an iterator's next item: ``_compile_watch``), or an
array that reached the step's math through a path the recording does not see. What the
step's Python read is baked in, so before each replay the state it reaches must be as
recorded (``_compile_layout.Layout``), else it records again. Never a wrong replay.
"""

from __future__ import annotations

import bisect
import builtins
import collections
import dataclasses
import dis
import functools
import math
import operator
import os
import sys
import types
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, ParamSpec, TypeVar, cast

import numpy as np

from . import _hooks
from ._autodiff import Version, merge_tapes, note_version_written, note_written, version_of
from ._backend import CompiledLoops, _loaded, active_backend
from ._compile_fold import folded_positions
from ._compile_ir import (
    Op as _Op,
    Ref as _Ref,
    mentions_ref as _mentions_ref,
    refs as _refs,
    register_uses as _register_uses,
)
from ._compile_layout import (
    ATOMS,
    Layout,
    LibraryStart,
    TooLarge,
    _code_names,
    argument_objects,
    attribute,
    free_values,
    reachable,
    same_array,
)
from ._compile_narrow import KERNEL_ROWS, Snapshot, agrees, narrow
from ._compile_scatter import scatter_writes
from ._compile_transposed import transposed_once
from ._compile_watch import (
    _shapegrad_dirs,
    exact,
    generator_states,
    iterator_state,
    same_value,
    user_file,
    watching,
)
from ._errors import CompileError, CompileWarning, ShapeError, ShapegradError, TapeError
from ._gradients import Gradients, bookkeeping, end_tape, leaves_of, set_bookkeeping, tape_of
from ._no_grad import inside_no_grad
from ._tensor import Tensor, wrap
from .nn._module import Module
from .optim._base import Optimizer

__all__ = ["CompiledStep", "compile"]

P = ParamSpec("P")
R = TypeVar("R")

_current: _Recorder | None = None  # the recording in progress (also while paused in a host call)

# New signatures in a row (no replay between) that a compiled step records before it records
# a signature only when met a second time (see CompiledStep._unsettled).
_SETTLE_AFTER = 2

# The library's fused kernels (by ``fused_kernel``'s name) that write none of their arguments,
# only arrays they make: the row kernels narrowing reads and their gradients. Any other kernel
# may write its arguments, so what a guard later asks of them (cross_entropy's labels, read
# again by a second loss on them) could not be asked before a replay: the step ran eagerly.
_PURE_KERNELS = frozenset(
    {
        *KERNEL_ROWS,
        "gelu_exact_backward",
        "relu_backward",
        "softmax_backward",
        "cross_entropy_backward",
        "layer_norm_backward",
    }
)

# NumPy functions whose Python results depend on shapes and dtypes only, never on values.
_STATIC_RESULTS = frozenset(
    {
        "shape",
        "ndim",
        "size",
        "result_type",
        "can_cast",
        "may_share_memory",
        "shares_memory",
        "iscomplexobj",
        "isrealobj",
        "isscalar",
        "broadcast_shapes",
        "isdtype",
        "min_scalar_type",
    }
)


# NumPy functions and methods whose results' shapes depend on their arguments' values (how many
# are true or non-zero, how many are distinct): a replay's buffers and fused loops are sized
# as recorded, so such a shape is asked again before each replay (see _Recorder.guard_shapes).
_VALUE_SHAPED = frozenset(
    {
        "nonzero",
        "flatnonzero",
        "argwhere",
        "extract",
        "compress",
        "unique",
        "unique_values",
        "unique_counts",
        "unique_inverse",
        "unique_all",
        "trim_zeros",
        "setdiff1d",
        "intersect1d",
        "union1d",
        "setxor1d",
        "bincount",
    }
)


def _value_shaped(kind: str, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether an operation's result's shape may depend on values, not only on its
    arguments' shapes (``args``: the plain arrays): boolean-mask indexing (``x[mask]``,
    ``x[x > 0]``), ``np.nonzero`` and the like, ``np.where(c)`` with the condition alone,
    ``repeat`` and ``delete`` given an array of counts or of indices."""
    name = _name(fn)
    if kind == "method" and name == "__getitem__":
        return _has_bool_array(args[1])
    if name == "where":
        return len(args) + len(kwargs) == 1
    if name in ("repeat", "delete"):
        counts: Any = args[1] if len(args) > 1 else kwargs.get("repeats", kwargs.get("obj", 0))
        return np.ndim(counts) > 0
    return name in _VALUE_SHAPED


def _has_bool_array(index: Any) -> bool:
    """Whether an index holds a boolean array (a mask)."""
    if isinstance(index, tuple):
        return any(_has_bool_array(i) for i in cast("tuple[Any, ...]", index))
    return isinstance(index, (np.ndarray, np.generic)) and cast(Any, index).dtype == np.bool_


_SHAPE_READ = "a shape that depends on values (x[mask], np.nonzero) of an array computed in the step"


def _has_shape(array: Any, shape: tuple[int, ...]) -> Any:
    """A 0-d boolean array: whether ``array`` has ``shape`` (a guard's question)."""
    return np.asarray(array.shape == shape)


def _mask_counts(index: Any) -> tuple[int, ...]:
    """How many values each boolean array in an index selects."""
    items: tuple[Any, ...] = cast("tuple[Any, ...]", index) if isinstance(index, tuple) else (index,)
    return tuple(int(np.count_nonzero(i)) for i in items if _has_bool_array(i))


def _selects(index: Any, counts: tuple[int, ...]) -> Any:
    """A 0-d boolean array: whether the masks in ``index`` select ``counts`` values (a guard's
    question: ``x[mask]``'s shape is ``x``'s with the mask's axes made one of that length)."""
    return np.asarray(_mask_counts(index) == counts)


def _is_array(value: Any) -> bool:
    """A NumPy array or scalar (the check leaves ``value`` typed ``Any``)."""
    return isinstance(value, (np.ndarray, np.generic))


def _root(array: Any) -> Any:
    """The object at the end of an array's ``.base`` chain (the array itself where it owns its
    memory): arrays of different roots do not share memory."""
    base = getattr(array, "base", None)
    while base is not None:
        array, base = base, getattr(base, "base", None)
    return array


def memory_pattern(values: Sequence[Any]) -> tuple[tuple[int, int], ...]:
    """``(i, j)`` for each array ``values[i]`` that may share memory with an earlier
    ``values[j]`` (the first such): which of a recording's inputs are one memory."""
    seen: dict[int, list[int]] = {}
    pairs: list[tuple[int, int]] = []
    for i, value in enumerate(values):
        group = seen.setdefault(id(_root(value)), [])
        for j in group:
            if np.may_share_memory(value, values[j]):
                pairs.append((i, j))
                break
        group.append(i)
    return tuple(pairs)


def _is_ndarray(value: Any) -> bool:
    return isinstance(value, np.ndarray)


def _is_sequence(value: Any) -> bool:
    return isinstance(value, (tuple, list))


def _is_slice(value: Any) -> bool:
    return isinstance(value, slice)


def _is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float, complex))


def _is_tensor(value: Any) -> bool:
    return isinstance(value, Tensor)


def _plain_of(value: Any) -> Any:
    """The array behind a traced view, outside any recording."""
    # ndarray's own view: _Traced.view is a recorded method
    return np.ndarray.view(value, np.ndarray) if isinstance(value, _Traced) else value


def _unwrap_free(value: Any) -> Any:
    if isinstance(value, _Traced):
        return _plain_of(value)
    if isinstance(value, (tuple, list)):
        items = cast("tuple[Any, ...] | list[Any]", value)
        return (
            type(items)(_unwrap_free(v) for v in items)
            if isinstance(items, list)
            else tuple(_unwrap_free(v) for v in items)
        )
    return value


def _dispatch(kind: str, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], ufunc: bool = False) -> Any:
    """Every array operation on a traced value comes here: recorded while a recording runs
    (not paused), else computed on the plain arrays."""
    rec = _current
    if rec is None or _hooks.recorder is not rec:
        if rec is not None:
            rec.escape(f"a recorded array reached code run outside the recording ({_name(fn)})")
        plain_args = tuple(_unwrap_free(a) for a in args)
        plain_kwargs = {k: _unwrap_free(v) for k, v in kwargs.items()}
        return _run(kind, fn, plain_args, plain_kwargs)
    return rec.call(kind, fn, args, kwargs, ufunc)


def _run(kind: str, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if kind == "method":
        return getattr(args[0], fn)(*args[1:], **kwargs)
    if kind == "attr":
        return getattr(args[0], fn)
    return fn(*args, **kwargs)


def _name(fn: Any) -> str:
    return fn if isinstance(fn, str) else getattr(fn, "__name__", type(fn).__name__)


class _Traced(np.ndarray):
    """A view of an array the recording knows (register ``_r``); ``-1`` for views NumPy made
    of one without the recording seeing how (using one of those is an escape)."""

    _r: int
    _rec: Any  # the recording whose register _r is (a view kept from another one is unknown)

    def __array_finalize__(self, obj: Any) -> None:
        self._r = -1
        self._rec = None

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        fn = ufunc if method == "__call__" else getattr(ufunc, method)
        return _dispatch("call", fn, inputs, kwargs, ufunc=method == "__call__")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return _dispatch("call", func, tuple(args), dict(kwargs))

    def __iter__(self) -> Any:
        for i in range(len(self)):
            yield self[i]

    @property
    def base(self) -> Any:
        # The library compares bases to find views of one array (write detection): the
        # base of a traced view is the traced view of its plain array's base.
        rec = _current
        plain = rec.plain[self._r] if rec is not None and self._rec is rec else _plain_of(self)
        owner = plain.base
        if rec is not None and owner is not None:
            index = rec.reg_of.get(id(owner))
            if index is not None:
                return rec.traced(index)
        return owner

    def _value_read(self, what: str) -> Any:
        """The value the step's Python reads (noted as a value read): a NumPy scalar where
        eagerly it is one (a reduction, an element: its register holds it as a 0-d array)."""
        rec = _current
        if rec is not None:
            rec.value_read(f"{what} of an array")
        if rec is None or self._rec is not rec:
            return _plain_of(self)
        plain = rec.plain[self._r]
        return plain[()] if self._r in rec.scalars else plain


def _method(name: str) -> Callable[..., Any]:
    def method(self: _Traced, *args: Any, **kwargs: Any) -> Any:
        return _dispatch("method", name, (self, *args), kwargs)

    method.__name__ = name
    return method


def _attribute(name: str) -> property:
    return property(lambda self: _dispatch("attr", name, (self,), {}))


def _reader(name: str) -> Callable[..., Any]:
    def read(self: _Traced, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._value_read(name), name)(*args, **kwargs)

    read.__name__ = name
    return read


_METHODS = (
    "reshape astype copy transpose swapaxes ravel flatten squeeze view take repeat sum mean max min prod std "
    "var argmax argmin cumsum cumprod clip dot round fill any all nonzero sort argsort diagonal trace put "
    "searchsorted partition argpartition conj conjugate compress choose __getitem__ __setitem__ __copy__ "
    "__deepcopy__"
).split()
_READERS = "item tolist tobytes tofile dump dumps __float__ __int__ __bool__ __index__ __complex__ __contains__".split()
for _n in _METHODS:
    setattr(_Traced, _n, _method(_n))
for _n in ("T", "mT", "real", "imag"):
    setattr(_Traced, _n, _attribute(_n))
for _n in _READERS:
    setattr(_Traced, _n, _reader(_n))


def _traced_bool(self: _Traced) -> bool:
    rec = _current
    if rec is None or _hooks.recorder is not rec or self._rec is not rec:
        return bool(self._value_read("__bool__"))
    return rec.guard(self)


_Traced.__bool__ = _traced_bool


def _scalar_reader(name: str, read: Callable[..., Any], what: str) -> Callable[..., Any]:
    """A dunder of NumPy scalars that ndarray lacks or refuses (``round(s)``, ``math.trunc(s)``,
    ``hash(s)``): what eagerly is a scalar is read (a value read) and gives eager's result;
    another array gives what ``read`` of an ndarray gives (``round`` of one raises)."""

    def method(self: _Traced, *args: Any) -> Any:
        rec = _current
        if name == "__hash__" and (rec is None or self._rec is not rec or self._r not in rec.scalars):
            raise TypeError("unhashable type: 'numpy.ndarray'")
        return read(self._value_read(what), *args)

    method.__name__ = name
    return method


for _n, _read, _what in (
    ("__round__", round, "round()"),
    ("__floor__", math.floor, "math.floor()"),
    ("__ceil__", math.ceil, "math.ceil()"),
    ("__trunc__", math.trunc, "math.trunc()"),
    ("__hash__", hash, "hash() (a dict key)"),
):
    setattr(_Traced, _n, _scalar_reader(_n, _read, _what))
# What NumPy scalars have besides ndarray's attributes (a float's is_integer(), an int's
# bit_count()): read of what eagerly is a scalar, an AttributeError as eagerly of an array.
_SCALAR_ATTRIBUTES = frozenset("is_integer as_integer_ratio bit_count numerator denominator hex".split())


def _scalar_attribute(self: _Traced, name: str) -> Any:
    rec = _current
    if name in _SCALAR_ATTRIBUTES and rec is not None and self._rec is rec and self._r in rec.scalars:
        return getattr(self._value_read(name), name)
    raise AttributeError(f"'numpy.ndarray' object has no attribute {name!r}")


setattr(_Traced, "__getattr__", _scalar_attribute)
_Traced.__format__ = lambda self, spec: format(self._value_read("format"), spec)
_Traced.__repr__ = lambda self: repr(self._value_read("repr"))
_Traced.__str__ = lambda self: str(self._value_read("str"))


class _Namespace:
    """A recording stand-in for an array module (``backend.xp``): its functions record,
    its types, ufuncs and constants are the module's own (a ufunc records through the
    traced operand it is given; submodules are stand-ins too)."""

    def __init__(self, module: Any) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._module, name)
        if isinstance(real, types.ModuleType):
            value: Any = _Namespace(real)
        elif isinstance(real, (type, np.ufunc)) or not callable(real):
            value = real
        else:
            value = _recording_function(real)
        self.__dict__[name] = value
        return value


def _recording_function(real: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(real)
    def call(*args: Any, **kwargs: Any) -> Any:
        rec = _current
        if rec is None or _hooks.recorder is not rec:
            return real(*[_unwrap_free(a) for a in args], **{k: _unwrap_free(v) for k, v in kwargs.items()})
        return rec.call("call", real, args, kwargs)

    return call


_namespaces: dict[int, _Namespace] = {}


def _namespace(module: Any) -> _Namespace:
    space = _namespaces.get(id(module))
    if space is None:
        space = _namespaces[id(module)] = _Namespace(module)
    return space


class _Recorder:
    """The registers (every array the step used, kept alive so that ids stay unique), the
    operations, the inputs, and the first reason the recording cannot be replayed."""

    def __init__(self, allowed: dict[int, Any]) -> None:
        self.plain: list[Any] = []
        self.views: list[_Traced | None] = []
        self.scalars: set[int] = set()  # the registers holding what eagerly is a NumPy scalar (a reduction's)
        self.reg_of: dict[int, int] = {}
        self.ops: list[_Op] = []
        # per input register: ("arg", path) | ("holder", tensor) | ("object", array)
        self.inputs: list[tuple[str, Any]] = []
        self.input_regs: list[int] = []
        self._by_root: dict[int, list[int]] = {}  # id(the array an input views, at the end of .base) -> inputs
        self.owner: list[int] = []  # the register whose memory each register is (itself, or the one it views)
        self.made_by: list[int] = []  # the op that made each register (-1: an input)
        self.rebound: dict[int, tuple[Any, int]] = {}  # id(tensor) -> (tensor, register) it holds at the end
        # every rebinding, in order: a replay that raises does those the step did before it raised
        self.rebinds: list[tuple[Any, int]] = []
        self.arguments: set[int] = set()  # the ids of the tensors the step takes as arguments
        self.born: set[int] = set()
        self.keep: list[Any] = []
        self.allowed = allowed  # id -> array: persistent arrays not reached through a tensor
        self.value_reason: str | None = None
        self.escape_reason: str | None = None
        self.guards: list[tuple[list[int], int, bool]] = []  # (ops computing it, register, answer)
        self.written: set[int] = set()  # input registers some op wrote in place
        self.written_any: list[int] = []  # every register some op wrote in place, in order
        # the arrays the host calls so far said they may write (None: one did not say)
        self.host_written: list[Any] | None = []
        self.read_first: set[int] = set()  # Gradients read before the step zeroed them
        self.zeroed_ids: set[int] = set()
        # What the step did to the tapes' Python state, in order, which a replay does again:
        # ("written", where) for an in-place write it noted (note_written: a buffer the caller
        # holds, a parameter, batch-norm statistics; where: ("arg", path) for a tensor argument,
        # ("tensor", tensor) for one it reaches, ("version", counter) for one made in the step
        # whose counter may be shared), ("zeroed", grads) for grads.zero() (the tape ends)
        self.effects: list[tuple[str, Any]] = []
        self.argument_paths: dict[int, tuple[Any, ...]] = {}  # id(tensor argument) -> its path
        self.argument_tensors: dict[int, Any] = {}
        # id(tuple, list or dict among the arguments) -> its path: given back, it is the call's own
        self.argument_containers: dict[int, tuple[Any, ...]] = {}
        self.thread = _hooks.get_ident()  # the recording's (another thread's writes are its own)
        # the Python state a replay that raises leaves (a range check failing, a host call or an
        # operation raising), as the step leaves it when it raises there (set once the
        # recording's start is known); the last one taken (see here)
        self.at_check: Callable[[], Any] | None = None
        self._here: tuple[Any, Any, int, int] | None = None
        # What first gave the step's Python a recorded array itself (t.data in its code, a NumPy
        # array argument, g.permutation(n)): NumPy reads one's values unseen where it indexes a
        # plain array with it or copies it (TABLE[y.data], np.array(t.data)), so a NumPy array
        # the step builds and converts after that may hold values a replay would not recompute
        self.handed: str | None = None
        # The 0-d arrays the step's own code was given (made by an operation it issued, a
        # reduction of t.data or an element, or read as a 0-d tensor's t.data): register ->
        # (the position of the next operation, where, its value then, the position when first
        # given). NumPy's scalar types read one's value in C (np.float32(x.data.std())), unseen:
        # see _read_unseen
        self.given: dict[int, tuple[int, str, Any, int]] = {}
        # the ids of the objects the step reached before it ran (its modules, the objects it
        # reads, its arguments): one it gives back is that object at every replay too
        self.existing: set[int] = set()
        # id(optimizer) -> the settings of it the library's code decided by while recording and
        # a replay does not ask again (its ``unused`` policy, where parameters got no gradient):
        # compared before each replay as what the step's own code reads of it
        self.settings_read: dict[int, set[str]] = {}
        # The errors raised while recording from what it watches (the library's errors, an
        # operation or a host call raising), in order: one the step catches (it returns) makes
        # it run eagerly, since whether a check, an operation or an update raises depends on
        # values, and a replay runs the path recorded whatever they are (see caught)
        self.raised: list[BaseException] = []
        # NumPy's error state and Python's warnings filters as the step was called: an operation
        # or a host call run under others (np.errstate, warnings.catch_warnings inside the step),
        # which a replay would not enter, is an escape (see context_changed)
        self._error_object: Any = None if _ERROR_STATE is None else _ERROR_STATE.get()
        self._error_state = (np.geterr(), np.geterrcall())
        self._filters: list[Any] = list(warnings.filters)
        self._shown = (warnings.showwarning, cast(Any, warnings)._showwarnmsg_impl)
        # Where the step's code (or another library's, not shapegrad's) runs an operation, a check
        # or a host call inside a try/except (" (at file:line)"): a replay would raise where eager
        # catches, should it raise there (see _inside_except)
        self.in_except: str | None = None

    # -- problems ------------------------------------------------------------------------------
    def value_read(self, what: str) -> None:
        if self.value_reason is None:
            self.value_reason = what + _where()

    def escape(self, what: str) -> None:
        if self.escape_reason is None:
            self.escape_reason = what + _where()

    def raising(self, error: BaseException) -> None:
        """``error`` is made (the library's errors, as they are made) or raised (an operation, a
        host call) in the step's thread while it records: see ``raised``."""
        if _hooks.get_ident() == self.thread and not any(e is error for e in self.raised):
            self.raised.append(error)

    def caught(self) -> BaseException | None:
        """The first error raised while recording (made and not raised does not count: its
        traceback is None), once the step has returned: the step caught it."""
        return next((e for e in self.raised if e.__traceback__ is not None), None)

    def in_context(self) -> bool:
        """Whether NumPy's error state and Python's warnings filters are as the step was called."""
        return (
            _ERROR_STATE is not None
            and _ERROR_STATE.get() is self._error_object
            and warnings.filters == self._filters
            and warnings.showwarning is self._shown[0]
            and cast(Any, warnings)._showwarnmsg_impl is self._shown[1]
        )

    def context_changed(self, what: str = "an operation") -> None:
        """``what`` runs under another NumPy error state or other warnings filters than the step
        was called under (``not in_context()``): set inside the step, a replay would not enter
        them (its operations would not raise where eager's do, its warnings would go elsewhere),
        so an escape; an error state of the same settings in another object is the same."""
        if _ERROR_STATE is None or _ERROR_STATE.get() is not self._error_object:
            if (np.geterr(), np.geterrcall()) != self._error_state:
                self.escape(
                    f"{what} run under another NumPy error state ({_error_settings(np.geterr())}) than the step "
                    f"was called under ({_error_settings(self._error_state[0])}): np.errstate or np.seterr inside "
                    "the step, which a replay would not enter"
                )
                return
            if _ERROR_STATE is not None:
                self._error_object = _ERROR_STATE.get()
        if (
            warnings.filters != self._filters
            or warnings.showwarning is not self._shown[0]
            or cast(Any, warnings)._showwarnmsg_impl is not self._shown[1]
        ):
            self.escape(
                f"{what} run under other warnings filters than the step was called under: "
                "warnings.catch_warnings, simplefilter or filterwarnings inside the step, which a replay "
                "would not set (the warnings it gives would go elsewhere)"
            )

    def hand(self, what: str) -> None:
        """The step's Python is given a recorded array itself (``what``)."""
        if self.handed is None:
            self.handed = what

    def give(self, index: int, since: int, where: str) -> None:
        """The step's own code is given the 0-d array of register ``index`` before operation
        ``since`` (see ``given``)."""
        first = self.given[index][3] if index in self.given else since
        self.given[index] = (since, where, np.array(self.plain[index], copy=True), first)

    # -- registers -------------------------------------------------------------------------------
    def traced(self, index: int) -> _Traced:
        view = self.views[index]
        if view is None:
            view = self.plain[index].view(_Traced)
            view._r = index
            view._rec = self
            self.views[index] = view
        return view

    def _new(self, plain: Any, made_by: int) -> int:
        index = len(self.plain)
        self.plain.append(plain)
        self.views.append(None)
        self.reg_of[id(plain)] = index
        self.made_by.append(made_by)
        owner = index
        base = getattr(plain, "base", None)
        if base is not None:
            found = self.reg_of.get(id(base))
            owner = self.owner[found] if found is not None else index
        self.owner.append(owner)
        return index

    def add_input(self, plain: Any, source: tuple[str, Any]) -> int:
        index = self._new(plain, -1)
        # Inputs that share memory (x and x[1:] or x.T, a buffer and a view of it passed as an
        # argument) are one memory to what reorders operations past writes (fused loops): a
        # write into one is a write into the other.
        group = self._by_root.setdefault(id(_root(plain)), [])
        for other in group:
            if self.owner[other] != self.owner[index] and np.may_share_memory(plain, self.plain[other]):
                self.owner[index] = self.owner[other]
                break
        group.append(index)
        self.inputs.append(source)
        self.input_regs.append(index)
        return index

    def read_slot(self, tensor: Any, plain: Any) -> Any:
        """A tensor's ``_data`` read: its register's traced view; an array that existed
        before the step becomes an input read from the tensor at every replay."""
        index = self.reg_of.get(id(plain))
        if index is None:
            if not _is_array(plain):
                self.escape(f"a tensor holds a {type(plain).__name__}, not a NumPy array")
                return plain
            if id(tensor) in self.born:
                self.escape("a tensor made in the step holds an array no recorded operation produced")
                return plain
            self.keep.append(tensor)
            index = self.add_input(np.asarray(plain) if not _is_ndarray(plain) else plain, ("holder", tensor))
            if not _is_ndarray(plain):
                self.scalars.add(index)
        return self.traced(index)

    def write_slot(self, tensor: Any, value: Any, held: Any) -> Any:
        """A tensor's ``_data`` set: stored plain; a tensor that existed before the step and
        is given another array is rebound at every replay (``held``: the array it held, or
        ``_UNSET`` for a tensor being made). An in-place write (``t[...] = v``) sets the
        array the tensor holds: nothing to rebind. A tensor argument given another array
        cannot be rebound: the replay's argument is another tensor."""
        fresh = held is _UNSET
        plain = value
        if isinstance(value, _Traced):
            if value._rec is not self:
                self.escape("a tensor was given an array derived outside the recording")
                return _plain_of(value)
            plain = self.plain[value._r]
        index = self.reg_of.get(id(plain))
        if index is None and _is_array(plain):
            if id(plain) in self.allowed:
                index = self.add_input(plain, ("object", plain))
            else:
                self.escape("a tensor was given an array no recorded operation produced")
        if fresh:
            self.born.add(id(tensor))
            self.keep.append(tensor)
        elif index is not None and plain is not held:
            if id(tensor) in self.arguments:
                self.escape("a tensor argument was given another array, which a replay could not give the next call's")
            self.rebound[id(tensor)] = (tensor, index)
            self.rebinds.append((tensor, index))
        return plain

    # -- operations ------------------------------------------------------------------------------
    def _template(self, value: Any) -> Any:
        if isinstance(value, _Traced):
            if value._rec is not self:
                self.escape("an array derived outside this recording (a view NumPy made unseen, or kept from another)")
                return _plain_of(value)
            return _Ref(value._r)
        if _is_ndarray(value):
            index = self.reg_of.get(id(value))
            if index is None:
                if id(value) in self.allowed:
                    index = self.add_input(value, ("object", value))
                else:
                    self.escape("an array no recorded operation produced (computed outside the backend's xp)")
                    return value
            return _Ref(index)
        if isinstance(value, tuple):
            return tuple(self._template(v) for v in cast("tuple[Any, ...]", value))
        if isinstance(value, list):
            return [self._template(v) for v in cast("list[Any]", value)]
        if isinstance(value, dict):
            return {k: self._template(v) for k, v in cast("dict[Any, Any]", value).items()}
        return value

    def _resolve(self, template: Any) -> Any:
        if isinstance(template, _Ref):
            return self.plain[template.index]
        if isinstance(template, tuple):
            return tuple(self._resolve(v) for v in cast("tuple[Any, ...]", template))
        if isinstance(template, list):
            return [self._resolve(v) for v in cast("list[Any]", template)]
        if isinstance(template, dict):
            return {k: self._resolve(v) for k, v in cast("dict[Any, Any]", template).items()}
        return template

    def call(
        self,
        kind: str,
        fn: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        ufunc: bool = False,
        label: str | None = None,
        pure: bool = False,
    ) -> Any:
        """Run one array operation on the plain arrays and record it; its array results
        come back as traced views. ``label``: a fused kernel's name in the library;
        ``pure``: a backend method that changes nothing (``asarray``)."""
        targs = tuple(self._template(a) for a in args)
        tkwargs = {k: self._template(v) for k, v in kwargs.items()}
        has_arrays = _mentions_ref(targs) or _mentions_ref(tkwargs)
        plain_args, plain_kwargs = self._resolve(targs), self._resolve(tkwargs)
        state = self.here()
        if not self.in_context():
            self.context_changed()
        if self.in_except is None:
            self.in_except = _inside_except()
        try:
            result = _run(kind, fn, plain_args, plain_kwargs)
        except BaseException as error:
            self.raising(error)
            raise
        op = _Op(kind, fn, targs, tkwargs, None)
        op.label, op.state = label, state
        op.ufunc = ufunc and "out" not in kwargs
        writes = self._writes(kind, fn, targs, tkwargs, label)
        op.pure = (
            not writes and kind != "kernel" and (pure or not isinstance(fn, (types.MethodType, functools.partial)))
        )
        for index in writes:
            owner = self.owner[index]
            if self.made_by[owner] < 0:
                self.written.add(owner)
            self.written_any.append(index)
        position = len(self.ops)
        self.ops.append(op)
        traced = self._results(op, position, result, has_arrays)
        made: Any = op.outs
        outs: tuple[int | None, ...] = cast("tuple[int | None, ...]", made) if isinstance(made, tuple) else (made,)
        zero_d = [index for index in outs if index is not None and self.plain[index].ndim == 0]
        if zero_d:
            where = _issued_where()
            if where is not None:
                for index in zero_d:
                    self.give(index, position + 1, where)
        if has_arrays and _value_shaped(kind, fn, plain_args, plain_kwargs):
            self.guard_shapes(kind, fn, args, traced)
        return traced

    def guard_shapes(self, kind: str, fn: Any, args: tuple[Any, ...], result: Any) -> None:
        """The shapes of an operation's results that depend on values, asked again before
        each replay as a guard (another answer records again; where it cannot be asked, a
        mask computed after the update, the step runs eagerly): a replay sized as recorded
        would compute another shape's values into the recorded shape's buffers and loops.
        Of ``x[mask]``, how many the masks select (not ``x``'s values: a model's output
        masked by the batch's mask is asked of the mask alone); of others, their results."""
        if kind == "method" and _name(fn) == "__getitem__":
            counts = _mask_counts(self._resolve(self._template(args[1])))
            self.guard(self.call("call", _selects, (args[1], counts), {}), _SHAPE_READ)
            return
        items: list[Any] = list(cast("tuple[Any, ...]", result)) if _is_sequence(result) else [result]
        for item in items:
            if isinstance(item, _Traced) and item._rec is self:
                shape = tuple(self.plain[item._r].shape)
                self.guard(self.call("call", _has_shape, (item, shape), {}), _SHAPE_READ)

    def _writes(
        self, kind: str, fn: Any, targs: tuple[Any, ...], tkwargs: dict[str, Any], label: str | None = None
    ) -> list[int]:
        """The registers an operation may write in place: ``out=``, ``x[i] = v``, in-place
        methods, the backends' helpers (their first argument), any argument of a kernel but
        the library's that write only arrays they make (``_PURE_KERNELS``)."""
        if kind == "kernel":
            return [] if label in _PURE_KERNELS else _refs((targs, tkwargs), [])
        if "out" in tkwargs:
            return _refs(tkwargs["out"], [])
        if kind == "method" and fn in ("__setitem__", "fill", "sort", "put", "partition"):
            return _refs(targs[0], [])
        if isinstance(fn, types.MethodType) and getattr(fn, "__name__", "") in ("copy_into", "add_into", "scatter_add"):
            return _refs(targs[0], [])
        name = getattr(fn, "__name__", "")
        if name in ("copyto", "at", "put", "place", "putmask", "put_along_axis", "fill_diagonal"):
            return _refs(targs[0], []) if targs else []
        return []

    def _results(self, op: _Op, position: int, result: Any, has_arrays: bool) -> Any:
        if _is_array(result):
            index = self.reg_of.get(id(result))
            if index is None:
                index = self._new(np.asarray(result) if not _is_ndarray(result) else result, position)
                if not _is_ndarray(result):
                    op.ufunc = False  # a scalar result has no buffer
                    self.scalars.add(index)
            op.outs = index
            return self.traced(index)
        if _is_sequence(result) and any(_is_array(v) for v in result):
            items: list[Any] = list(cast("tuple[Any, ...]", result))
            outs: list[int | None] = []
            back: list[Any] = []
            for item in items:
                if _is_array(item):
                    index = self.reg_of.get(id(item))
                    if index is None:
                        index = self._new(np.asarray(item) if not _is_ndarray(item) else item, position)
                        if not _is_ndarray(item):
                            self.scalars.add(index)
                    outs.append(index)
                    back.append(self.traced(index))
                else:
                    outs.append(None)
                    back.append(item)
            op.outs = tuple(outs)
            op.ufunc = False
            return tuple(back) if isinstance(result, tuple) else back
        if result is not None and has_arrays and op.kind != "kernel":
            if _is_number(result) and _name(op.fn) not in _STATIC_RESULTS:
                self.value_read(f"the Python value returned by {_name(op.fn)}")
        if op.kind == "kernel":
            op.expect = result
        return result

    def converts_constant(self, array: Any) -> bool:
        """Whether a NumPy array the step converts (``sg.tensor(array)``) is a constant of the
        recording: not when it is, or views, an array the recording reads as an input (an
        argument in a named tuple, optimizer state, a gradient buffer), whose values a replay
        must read as they are then (a host call, the optimizer's update, writes them during
        the replay, after the check before it) and which the conversion must copy."""
        base = array
        while base is not None:
            if id(base) in self.reg_of or id(base) in self.allowed:
                return False
            base = getattr(base, "base", None)
        return True

    def touch(self, grads: Any) -> None:
        """A ``Gradients`` was read: before the step zeroed it, the recording depends on the
        bookkeeping it came in with."""
        if id(grads) not in self.zeroed_ids:
            self.read_first.add(id(grads))

    def zeroed(self, grads: Any) -> None:
        self.zeroed_ids.add(id(grads))
        self.effects.append(("zeroed", grads))

    def noted(self, tensor: Any, version: Any) -> None:
        """``note_written(tensor)`` in the step (``version``: its write counter, now raised): a
        backward pass through values saved before it raises, after a replay as after the step."""
        if _hooks.get_ident() != self.thread:  # another thread's write (a loader refilling its buffer)
            return
        path = self.argument_paths.get(id(tensor))
        if path is None and id(tensor) not in self.born:
            self.effects.append(("written", ("tensor", tensor)))
            return
        if path is None:  # made in the step: its counter may be an argument's (a view of it)
            for tensor_id, where in self.argument_paths.items():
                argument = self.argument_tensors[tensor_id]
                if argument._version is version:
                    path = where
                    break
        self.effects.append(("written", ("version", version) if path is None else ("arg", path)))

    def here(self) -> tuple[Any, Any, int, int] | None:
        """The Python state the step has now, which a replay that raises here leaves, as the
        step raising here does: its gradients' bookkeeping, its modules' modes (``at_check``),
        the count of its effects so far (those the replay does before raising) and of its
        rebindings (``rebinds``: the tensors it gave another array by then). The last one again
        where none of it changed, shared by the operations in between."""
        if self.at_check is None:
            return None
        books, modes = self.at_check()
        last = self._here
        if (
            last is not None
            and last[2] == len(self.effects)
            and last[3] == len(self.rebinds)
            and last[0] == books
            and last[1] == modes
        ):
            return last
        self._here = (books, modes, len(self.effects), len(self.rebinds))
        return self._here

    def check(self, flag: Any, message: str, error: type[ShapegradError] = ShapeError) -> None:
        """A value check: a range check (``require_in_range``), or a power's check for a
        negative integer exponent (``DTypeError``, ``error``): raises ``error(message)`` now if
        ``flag`` (a recorded 0-d boolean) is true, and at every replay where it is."""
        if not isinstance(flag, _Traced) or flag._rec is not self:
            self.escape("a range check on an array the recording does not know")
            return
        if self.in_except is None:
            self.in_except = _inside_except()
        op = _Op("check", (error, message), (_Ref(flag._r),), {}, None)
        op.expect = self.here()
        self.ops.append(op)
        if bool(self.plain[flag._r]):
            raise error(message)

    def guard(self, value: _Traced, what: str = "bool() of an array computed in the step") -> bool:
        """``bool(value)`` read by the library's Python code (``cross_entropy`` asking whether
        a label is ignored): where the value is a pure function of the step's inputs, the
        same question is asked before each replay, which runs eagerly if the answer differs;
        otherwise the step's control flow depends on a value it computed (an eager fallback)."""
        index = value._r
        answer = bool(self.plain[index])
        # after a host call (an optimizer's update, which writes parameters unseen) the
        # inputs it wrote no longer hold what they held when the replay began: a value read
        # from them is not asked again, nor any after a host call that did not say what it writes
        host = self.host_written
        cone = None if host is None else self._cone(index, host)
        if cone is None:
            self.value_read(what)
        else:
            self.guards.append((cone, index, answer))
        return answer

    def _cone(self, index: int, also_written: Sequence[Any] = ()) -> list[int] | None:
        """The ops ``index`` is computed by, in order, if they are pure and read only inputs
        that nothing in the step has written so far (``also_written``: arrays host calls
        wrote); None otherwise. An array the step wrote in place (``t[0] = v`` into
        ``sg.tensor([0.0, 0.0])`` or ``sg.zeros(2)``) holds what its pure ops alone do not
        compute: a value in its memory is not asked again."""
        needed: set[int] = set()
        todo = [index]
        written = [self.plain[w] for w in self.written_any] + list(also_written)
        while todo:
            r = todo.pop()
            value: Any = self.plain[r]
            if any(np.may_share_memory(value, w) for w in written):
                return None
            position = self.made_by[r]
            if position < 0:
                if r in self.written:
                    return None
                continue
            if position in needed:
                continue
            op = self.ops[position]
            if op.kind not in ("call", "method", "attr") or not op.pure:
                return None
            needed.add(position)
            todo += _refs((op.args, op.kwargs), [])
        return sorted(needed)

    def kernel(self, kernel: Callable[..., Any], name: str | None = None) -> Callable[..., Any]:
        """A fused kernel as the recording sees it: each call recorded (it may write any of
        its array arguments in place); its Python result must come out the same at replay.
        ``name``: the kernel's name in the library (``fused_kernel``'s), which says what it
        computes whatever the backend (what row narrowing reads)."""

        def recorded(*args: Any, **kwargs: Any) -> Any:
            if _hooks.recorder is not self:
                return kernel(*args, **kwargs)
            return self.call("kernel", kernel, args, kwargs, label=name)

        return recorded

    def method_call(self, fn: Callable[..., Any], args: tuple[Any, ...], pure: bool = False) -> Any:
        """A backend method (``copy_into``, ``add_into``, ``scatter_add``, ``asarray``) or a
        random draw, recorded as a call of the same bound method (``pure``: it changes
        nothing, as ``asarray``)."""
        if _hooks.recorder is not self:
            return fn(*[_unwrap_free(a) for a in args])
        return self.call("call", fn, args, {}, pure=pure)

    def setting_read(self, owner: Any, name: str) -> None:
        """The library's code decided by ``owner.name`` (an optimizer's ``unused`` policy) in a
        way the recording bakes in: a replay needs it as it was (see ``settings_read``)."""
        self.settings_read.setdefault(id(owner), set()).add(name)

    def host_call(self, fn: Callable[[], None], writes: Callable[[], list[Any]] | None = None) -> None:
        """Run ``fn`` now with recording paused and again at every replay (an optimizer's
        update: Python over the step count and the learning-rate schedule). ``writes`` gives,
        once ``fn`` has run, every array it may write in place (None: any array): a value the
        step computes later from other arrays is still asked again before a replay."""
        state = self.here()
        if not self.in_context():
            self.context_changed("an optimizer's update (a host call)")
        if self.in_except is None:
            self.in_except = _inside_except()
        _hooks.set_hook("recorder", None)
        try:
            fn()
        except BaseException as error:
            self.raising(error)
            raise
        finally:
            _hooks.set_hook("recorder", self)
        op = _Op("host", fn, (), {}, None)
        op.state = state
        self.ops.append(op)
        if writes is None or self.host_written is None:
            self.host_written = None
        else:
            self.host_written += writes()


# code object -> the ranges of its bytecode offsets whose exceptions a try/except in it may
# catch (empty for shapegrad's own code, which converts what it catches and raises it again)
_EXCEPT_RANGES: dict[types.CodeType, tuple[tuple[int, int], ...]] = {}
_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)


def _inside_except() -> str | None:
    """Where (``" (at file:line)"``) the step's code, or another library's between it and the
    recording, is inside a ``try`` with an ``except`` now; None where none is. A replay runs no
    Python: where an operation, a check or a host call raises (another value than recorded), it
    raises out of the step, while eager would have caught it. A ``finally`` raises on; a ``with``
    counts as raising on too (its ``__exit__`` could suppress the error, as ``contextlib.suppress``
    does, unseen)."""
    frame: Any = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if code is _RECORD_CODE:
            return None
        ranges = _EXCEPT_RANGES.get(code)
        if ranges is None:
            if len(_EXCEPT_RANGES) > 4096:
                _EXCEPT_RANGES.clear()
            ranges = _EXCEPT_RANGES[code] = _except_ranges(code)
        if ranges:
            lasti = frame.f_lasti
            if any(start <= lasti < end for start, end in ranges):
                return f" (at {code.co_filename}:{frame.f_lineno})"
        frame = frame.f_back
    return None


def _except_ranges(code: types.CodeType) -> tuple[tuple[int, int], ...]:
    """The bytecode ranges of ``code`` whose exceptions reach an ``except`` (or a handler not
    read here: conservatively) in it, following ``finally`` and ``with`` handlers outwards."""
    if not code.co_filename.startswith("<") and os.path.abspath(code.co_filename).startswith(_shapegrad_dirs()):
        return ()
    parse: Any = getattr(dis, "_parse_exception_table", None)
    if parse is None:  # not CPython 3.11+: every try counts
        return ((0, len(code.co_code)),) if code.co_exceptiontable else ()
    entries: list[Any] = list(parse(code))
    if not entries:
        return ()
    instructions = list(dis.get_instructions(code))
    at = {ins.offset: i for i, ins in enumerate(instructions)}

    def covering(offset: int) -> Any:
        return next((e for e in entries if e.start <= offset < e.end), None)

    def raises_on(target: int) -> int | None:
        """The offset a handler at ``target`` raises the error again from, None where it may not."""
        i = at.get(target)
        if i is None:
            return None
        if instructions[i].opname == "PUSH_EXC_INFO":
            i += 1
            if i < len(instructions) and instructions[i].opname == "WITH_EXCEPT_START":
                return target
        for ins in instructions[i:]:
            if ins.opname == "RERAISE":
                return ins.offset
            if ins.opname in ("CHECK_EXC_MATCH", "CHECK_EG_MATCH", "RETURN_VALUE") or ins.opcode in _JUMPS:
                return None
        return None

    ranges: list[tuple[int, int]] = []
    for entry in entries:
        current: Any = entry
        for _ in range(len(entries) + 1):
            offset = raises_on(current.target)
            if offset is None:
                ranges.append((entry.start, entry.end))
                break
            outer = covering(offset)
            if outer is None or outer is current:
                break
            current = outer
        else:
            ranges.append((entry.start, entry.end))
    return tuple(ranges)


def _caught_where(error: BaseException) -> str:
    """Where the step's code caught ``error`` (``" (at file:line)"``): the outermost frame of
    its traceback in the user's code, the frame whose ``try`` it passed through."""
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if user_file(code.co_filename):
            return f" (at {code.co_filename}:{tb.tb_lineno})"
        tb = tb.tb_next
    return ""


def _issued_where() -> str | None:
    """Where the step's own code issued the operation being recorded (``" (at file:line)"``),
    or None where it is the library's: the nearest frame outside this module is the user's."""
    frame: Any = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename == _THIS_FILE:
        frame = frame.f_back
    if frame is None or not user_file(frame.f_code.co_filename):
        return None
    return f" (at {frame.f_code.co_filename}:{frame.f_lineno})"


def _where() -> str:
    """Where the step's code was when the recording met a problem: its innermost frame in the
    user's code (not shapegrad's, NumPy's or another installed library's: the line to look at)."""
    import os
    import traceback

    frames = traceback.extract_stack()[:-3]
    if os.environ.get("SHAPEGRAD_COMPILE_DEBUG"):
        return "\n" + "".join(traceback.format_list(frames[-12:]))
    for frame in reversed(frames):
        if user_file(frame.filename):
            return f" (at {frame.filename}:{frame.lineno})"
    return ""


_THIS_FILE = _issued_where.__code__.co_filename


# -- installing the recording ------------------------------------------------------------------
# What ``_DataSlot`` passes for the array held by a tensor whose ``_data`` is being set first.
_UNSET = object()


class _DataSlot:
    """Stands in for ``Tensor._data`` (a slot) while a recording runs: reads and writes go
    through the recorder; paused (in a host call) it is the plain slot."""

    def __init__(self, slot: Any, rec: _Recorder) -> None:
        self.slot, self.rec = slot, rec

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        plain = self.slot.__get__(obj, owner)
        if _hooks.recorder is not self.rec:
            return plain
        return self.rec.read_slot(obj, plain)

    def __set__(self, obj: Any, value: Any) -> None:
        rec = self.rec
        if _hooks.recorder is not rec:
            if isinstance(value, _Traced):
                rec.escape("a recorded array was stored in a tensor outside the recording")
            self.slot.__set__(obj, _plain_of(value))
            return
        try:
            held = self.slot.__get__(obj, None)
        except AttributeError:
            held = _UNSET
        self.slot.__set__(obj, rec.write_slot(obj, value, held))


class _Constant:
    """A NumPy array converted into a tensor inside the step: a constant of the value it had
    when the step was recorded (each replay converts a copy of it). ``source`` is the array
    itself: one the step reads from a global or an object (a mask kept between calls) may be
    written in place between calls, and a replay is only for the value it was recorded with
    (:meth:`changed`, asked before each replay)."""

    __slots__ = ("array", "source", "unseen")

    def __init__(self, array: Any, unseen: tuple[str, str] | None = None) -> None:
        self.source = array
        self.array = np.array(array, copy=True)
        # converted after the step's Python was given a recorded array: what that was, and
        # where the step converted this one (a temporary built from it would hold values a replay
        # does not recompute)
        self.unseen = unseen

    def changed(self) -> bool:
        """Whether the array converted now holds another value than when recorded."""
        return not same_array(self.source, self.array)


def _patched_backend(rec: _Recorder, backend: Any) -> dict[str, Any]:
    """Instance attributes that shadow the backend's ``xp`` and in-place helpers while
    ``rec`` records; what they replaced is returned (to put back)."""
    saved = {name: backend.__dict__[name] for name in _PATCHED if name in backend.__dict__}
    originals = {name: getattr(backend, name) for name in _PATCHED}

    def helper(name: str) -> Callable[..., Any]:
        original = originals[name]

        def recorded(*args: Any) -> Any:
            return rec.method_call(original, args)

        return recorded

    def to_numpy(array: Any) -> Any:
        if _hooks.recorder is rec:
            rec.value_read("a tensor's values (.item(), .numpy(), .tolist(), float(t), bool(t), a comparison in an if)")
            array = rec.plain[array._r] if isinstance(array, _Traced) and array._rec is rec else _plain_of(array)
        return originals["to_numpy"](array)

    def asarray(data: Any, dtype: Any) -> Any:
        if _hooks.recorder is not rec:
            return originals["asarray"](_unwrap_free(data), dtype)
        if _is_ndarray(data) and not isinstance(data, _Traced) and rec.converts_constant(data):
            constant = _Constant(data, None if rec.handed is None else (rec.handed, _where()))
            return rec.method_call(functools.partial(_from_constant, originals["asarray"], constant), (dtype,), True)
        return rec.method_call(originals["asarray"], (data, dtype), True)

    backend.xp = _namespace(originals["xp"])
    for name in ("copy_into", "add_into", "scatter_add"):
        setattr(backend, name, helper(name))
    backend.to_numpy = to_numpy
    backend.asarray = asarray
    return saved


_PATCHED = ("xp", "copy_into", "add_into", "scatter_add", "to_numpy", "asarray")


def _from_constant(asarray: Callable[..., Any], constant: _Constant, dtype: Any) -> Any:
    return asarray(constant.array.copy(), dtype)


_DATA = Tensor.__dict__["data"]


def _handed_data(tensor: Tensor[Any, *tuple[Any, ...]]) -> Any:
    """``Tensor.data`` while a step records: read by the step's own code (not the library's,
    whose NumPy on it the recording follows), the step's Python holds a recorded array (a 0-d
    one is noted in ``rec.given``: see :func:`_read_unseen`)."""
    rec = _current
    data = tensor._data
    if rec is None:
        return data
    zero_d = isinstance(data, _Traced) and data._rec is rec and data.ndim == 0
    if rec.handed is None or zero_d:
        caller = sys._getframe(1)
        if user_file(caller.f_code.co_filename):
            rec.hand("a tensor's array (t.data)")
            if zero_d:
                rec.give(data._r, len(rec.ops), f" (at {caller.f_code.co_filename}:{caller.f_lineno})")
    return data


_HANDED_DATA = property(_handed_data, doc=_DATA.__doc__)


class _Session:
    """Installs a recording (the ``_data`` slot, the backends, the hooks) and takes it down."""

    def __init__(self, rec: _Recorder, backends: list[Any]) -> None:
        self.rec, self.backends = rec, backends
        self.saved: list[tuple[Any, dict[str, Any]]] = []

    def __enter__(self) -> _Session:
        global _current
        self.slot = Tensor.__dict__["_data"]
        type.__setattr__(Tensor, "_data", _DataSlot(self.slot, self.rec))
        type.__setattr__(Tensor, "data", _HANDED_DATA)
        for backend in self.backends:
            self.saved.append((backend, _patched_backend(self.rec, backend)))
        _current = self.rec
        _hooks.set_hook("recorder", self.rec)
        return self

    def __exit__(self, *exc: object) -> None:
        global _current
        _hooks.set_hook("recorder", None)
        _current = None
        type.__setattr__(Tensor, "_data", self.slot)
        type.__setattr__(Tensor, "data", _DATA)
        for backend, saved in self.saved:
            for name in _PATCHED:
                backend.__dict__.pop(name, None)
            backend.__dict__.update(saved)


# -- fusing element-wise chains ------------------------------------------------------------------
# The ufuncs a fused loop computes, as each element's expression over its operands' names:
# IEEE arithmetic, comparisons and selections, which a compiled loop without fastmath rounds
# exactly as NumPy's passes do (a fused replay gives eager's bits). Transcendentals (exp,
# tanh, log) stay NumPy passes between loops: NumPy's vectorised float32 versions round
# differently from the C library's that numba calls, and a scalar library call keeps the loop
# from being vectorised (see backends/numba_kernels.py).
_ELEMENT_EXPRESSIONS: dict[Any, str] = {
    np.add: "{0} + {1}",
    np.subtract: "{0} - {1}",
    np.multiply: "{0} * {1}",
    np.true_divide: "{0} / {1}",
    np.negative: "-{0}",
    np.absolute: "abs({0})",
    np.square: "{0} * {0}",
    # NumPy's: the first operand where it is the larger or NaN, else the second (NaN spreads;
    # of two equal values, -0.0 and 0.0 too, the second, as NumPy's SIMD and scalar loops give)
    np.maximum: "{0} if {0} > {1} or {0} != {0} else {1}",
    np.minimum: "{0} if {0} < {1} or {0} != {0} else {1}",
}
_COMPARISONS: dict[Any, str] = {
    np.greater: "{0} > {1}",
    np.greater_equal: "{0} >= {1}",
    np.less: "{0} < {1}",
    np.less_equal: "{0} <= {1}",
    np.equal: "{0} == {1}",
    np.not_equal: "{0} != {1}",
}
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_MAX_CHAIN = 48  # operations per loop: bounds one compile (numba's time grows with the body)
# A chain runs at its last op's place, so the arrays it reads live until then: it does not
# reach past more than this many other ops, nor past any but the cheap ones below (a matrix
# product between would keep, say, every time step's weight gradient alive for one chain of
# additions: more memory for no pass saved).
_MAX_SPAN = 24
_CHEAP_BETWEEN = frozenset(
    {"__getitem__", "__setitem__", "reshape", "transpose", "matrix_transpose", "swapaxes", "T", "mT", "view"}
    | {"zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like", "where"}
)


def _broadcast_pattern(shape: tuple[int, ...], full: tuple[int, ...]) -> str | None:
    """How an operand of ``shape`` meets a chain's ``full`` shape, seen as (rows, columns):
    "full", "row" (a vector along the last axis: a bias), "column" (one value per row), "one"
    (a single value); None for any other broadcast (the op is not fused)."""
    if shape == full:
        return "full"
    if len(shape) > len(full):
        return None
    padded = (1,) * (len(full) - len(shape)) + shape
    if all(d == 1 for d in padded):
        return "one"
    if all(d == 1 for d in padded[:-1]) and padded[-1] == full[-1]:
        return "row"
    if padded[-1] == 1 and padded[:-1] == full[:-1]:
        return "column"
    return None


class _Chain:
    """Element-wise operations replayed as one compiled loop: ``members`` (op positions, in
    order) of one shape and float dtype, run where the last of them was."""

    __slots__ = ("members", "shape", "dtype")

    def __init__(self, members: list[int], shape: tuple[int, ...], dtype: Any) -> None:
        self.members, self.shape, self.dtype = members, shape, dtype


class _Fused:
    """A chain ready to replay: its compiled loop, the registers it reads (with the replay
    expression passing each) and the registers it writes (the values used outside it)."""

    __slots__ = ("chain", "loop", "inputs", "outputs", "source")

    def __init__(
        self, chain: _Chain, loop: Any, inputs: list[tuple[int, str]], outputs: list[int], source: str
    ) -> None:
        self.chain, self.loop, self.inputs, self.outputs, self.source = chain, loop, inputs, outputs, source


def _op_writes(rec: _Recorder, into: dict[int, int]) -> list[set[int] | None]:
    """Per op, the memory (owner registers) its replay may write; None: anything (a host
    call). An element-wise op whose copy was elided (``into``) writes the copy's target."""
    writes: list[set[int] | None] = []
    for op in rec.ops:
        if op.kind == "host":
            writes.append(None)
        else:
            written = rec._writes(op.kind, op.fn, op.args, op.kwargs, op.label)
            writes.append({rec.owner[i] for i in written})
    for made, copy in into.items():
        target = cast(_Ref, rec.ops[copy].args[0])
        cast("set[int]", writes[made]).add(rec.owner[target.index])
    return writes


class _Fusion:
    """Groups a recording's element-wise operations into chains (:class:`_Chain`) and
    compiles each chain's loop with the backend (``compile_loop``).

    A chain grows op by op in recorded order: an element-wise op joins the chains that made
    its operands (same shape and dtype) where the grown chain can still run at the new op's
    place: none of its values is read by an op outside it before that place, and nothing
    between its first op and that place writes memory it reads (an in-place op, a kernel, a
    host call). Its values read only inside it never become arrays. Each loop is checked once
    against the values the recording computed: a loop that gives other bits is not used."""

    def __init__(
        self,
        rec: _Recorder,
        escaping: set[int],
        uses: dict[int, list[int]],
        writes: list[set[int] | None],
        compile_loop: Any,
        excluded: set[int],
    ) -> None:
        self.rec = rec
        self.ops = rec.ops
        self.escaping = escaping
        self.compile_loop = compile_loop
        self.uses = uses
        self.writes = writes
        self.chain_of: dict[int, _Chain] = {}
        for position in range(len(self.ops)):
            if position not in excluded:
                self._grow(position)
        self.fused: dict[int, _Fused] = {}  # by the position it runs at
        self.at: dict[int, int] = {}  # member position -> the position its chain runs at
        self.internal: set[int] = set()  # registers a loop keeps in registers, never arrays
        self.keep: dict[int, int] = {}  # register -> a loop's place where it is read (besides its ops' arguments)
        done: set[int] = set()
        for chain in self.chain_of.values():
            if id(chain) in done or len(chain.members) < 2:
                continue
            done.add(id(chain))
            fused = self._compile(chain)
            if fused is None:
                continue
            end = chain.members[-1]
            self.fused[end] = fused
            for position in chain.members:
                self.at[position] = end
                out = self.ops[position].outs
                if out not in fused.outputs:
                    self.internal.add(out)

    # -- which ops ----------------------------------------------------------------------------
    def _element(self, position: int) -> tuple[tuple[int, ...], Any] | None:
        """The shape and float dtype of an element-wise op a loop can compute, or None."""
        op, rec = self.ops[position], self.rec
        out = op.outs
        if op.kind != "call" or op.kwargs or not isinstance(out, int):
            return None
        if not (op.ufunc and (op.fn in _ELEMENT_EXPRESSIONS or op.fn in _COMPARISONS)) and not (
            op.fn is np.where and len(op.args) == 3
        ):
            return None
        result = rec.plain[out]
        if (
            rec.made_by[out] != position
            or rec.owner[out] != out
            or not _is_ndarray(result)
            or result.ndim == 0
            or result.size == 0
            or not result.flags.c_contiguous
        ):
            return None
        shape: tuple[int, ...] = result.shape
        arrays = [rec.plain[a.index] for a in op.args if isinstance(a, _Ref)]
        if len(arrays) + sum(1 for a in op.args if self._constant(a)) != len(op.args):
            return None
        if any(not _is_ndarray(a) or _broadcast_pattern(a.shape, shape) is None for a in arrays):
            return None
        if op.fn is np.where:
            condition, values = op.args[0], op.args[1:]
            dtype = result.dtype
            if not (isinstance(condition, _Ref) and rec.plain[condition.index].dtype == np.bool_):
                return None
            arrays = [rec.plain[a.index] for a in values if isinstance(a, _Ref)]
        elif op.fn in _COMPARISONS:
            if result.dtype != np.bool_ or not arrays:
                return None
            dtype = arrays[0].dtype
        else:
            dtype = result.dtype
        if dtype not in _FLOATS or any(a.dtype != dtype for a in arrays):
            return None
        return shape, dtype

    @staticmethod
    def _constant(value: Any) -> bool:
        # a Python number a loop writes as a literal of the chain's dtype (as NumPy converts it)
        if type(value) is float:
            return bool(np.isfinite(value))
        return type(value) is int and abs(value) < 2**24

    # -- growing chains ---------------------------------------------------------------------------
    def _grow(self, position: int) -> None:
        kind = self._element(position)
        if kind is None:
            return
        shape, dtype = kind
        candidates: list[_Chain] = []
        for index in _refs(self.ops[position].args, []):
            chain = self.chain_of.get(self.rec.made_by[index])
            if chain is not None and chain.shape == shape and chain.dtype == dtype and chain not in candidates:
                candidates.append(chain)
        tries = [candidates] if len(candidates) > 1 else []
        tries += [[c] for c in sorted(candidates, key=lambda c: -len(c.members))]
        for group in tries:
            members = sorted({p for c in group for p in c.members} | {position})
            if len(members) <= _MAX_CHAIN and self._can_run_at(members, position):
                merged = _Chain(members, shape, dtype)
                for p in members:
                    self.chain_of[p] = merged
                return
        self.chain_of[position] = _Chain([position], shape, dtype)

    def _can_run_at(self, members: list[int], end: int) -> bool:
        """Whether ops ``members`` can all run at ``end`` (the last of them)."""
        inside = set(members)
        made = {self.ops[p].outs for p in members}
        for index in made:
            if any(u < end and u not in inside for u in self.uses.get(index, ())):
                return False  # read by an op outside the chain before the chain would run
        if end - members[0] + 1 - len(members) > _MAX_SPAN:
            return False
        read = {self.rec.owner[i] for p in members for i in _refs(self.ops[p].args, []) if i not in made}
        for p in range(members[0] + 1, end):
            if p in inside:
                continue
            between = self.ops[p]
            if not (between.ufunc or _name(between.fn) in _CHEAP_BETWEEN):
                return False
            written = self.writes[p]
            if written is None or not written.isdisjoint(read):
                return False
        return True

    # -- the loop --------------------------------------------------------------------------------------
    def _column_slice(self, index: int, full: tuple[int, ...]) -> tuple[int, int] | None:
        """``(parent, offset)`` where register ``index`` is ``parent[:, offset:offset + cols]``
        of a C-contiguous 2-D ``parent`` (a gate of a fused matrix product), else None. A
        loop reading such columns as an array of its own gets NumPy's strides, which numba
        cannot vectorise over; read through the parent at an offset, it can. The slice is a
        recorded op with a constant key, so the offset is the same at every replay."""
        rec = self.rec
        position = rec.made_by[index]
        if position < 0 or len(full) != 2:
            return None
        op = self.ops[position]
        if not (op.kind == "method" and op.fn == "__getitem__" and isinstance(op.args[0], _Ref)):
            return None
        template: Any = op.args[1]
        if not isinstance(template, tuple):
            return None
        key = cast("tuple[Any, ...]", template)
        if key and key[-1] is Ellipsis:
            key = key[:-1]  # x[:, a:b, ...]: the library's slices of the last axis
        parent = op.args[0].index
        whole, array = rec.plain[parent], rec.plain[index]
        columns: Any = key[1] if len(key) == 2 else None
        if not (
            key[0] == slice(None)
            and _is_slice(columns)
            and columns.step in (None, 1)
            and _is_ndarray(whole)
            and whole.ndim == 2
            and whole.flags.c_contiguous
            and array.shape == full
            and whole.shape[0] == full[0]
            and array.strides == whole.strides
        ):
            return None
        offset = (array.ctypes.data - whole.ctypes.data) // whole.itemsize
        return (parent, offset) if 0 <= offset <= whole.shape[1] - full[1] else None

    def _compile(self, chain: _Chain) -> _Fused | None:
        """The chain's loop: generated, compiled, and checked against the recorded values."""
        rec, ops = self.rec, self.ops
        inside = set(chain.members)
        full = chain.shape
        rows, cols = int(np.prod(full[:-1], dtype=np.int64)), full[-1]
        name = "float32" if chain.dtype == np.float32 else "float64"
        names: dict[int, str] = {}  # register -> its name in the loop
        inputs: list[tuple[int, str]] = []
        loads: list[str] = []
        body: list[str] = []
        outputs: list[int] = []
        kept: list[int] = []  # registers read besides the ops' arguments (column slices' parents)
        made = [cast(int, ops[p].outs) for p in chain.members]
        for p, out in zip(chain.members, made, strict=True):
            op = ops[p]
            operands: list[str] = []
            for arg in op.args:
                if not isinstance(arg, _Ref):
                    operands.append(f"np.{name}({float(arg)!r})")
                    continue
                if arg.index not in names:
                    array = rec.plain[arg.index]
                    passed, column = arg.index, self._column_slice(arg.index, full)
                    if column is not None:
                        # the contiguous array it is columns of: a loop over it is vectorised
                        passed, offset = column
                        expr, index = f"r{passed}", f"[i, j + {offset}]"
                        kept.append(passed)
                    else:
                        pattern = _broadcast_pattern(array.shape, full)
                        expr, index = _operand(f"r{arg.index}", array.ndim, pattern, rows, cols)
                    names[arg.index] = f"x{len(inputs)}"
                    loads.append(f"            x{len(inputs)} = a{len(inputs)}{index}")
                    inputs.append((passed, expr))
                operands.append(names[arg.index])
            if op.fn is np.where:
                text = f"{operands[1]} if {operands[0]} else {operands[2]}"
            else:
                text = (_ELEMENT_EXPRESSIONS.get(op.fn) or _COMPARISONS[op.fn]).format(*operands)
            names[out] = f"t{len(body)}"
            body.append(f"            t{len(body)} = {text}")
            uses = self.uses.get(out, [])
            if out in self.escaping or not uses or any(u not in inside for u in uses):
                outputs.append(out)
        stores = [f"            o{k}[i, j] = {names[out]}" for k, out in enumerate(outputs)]
        parameters = [f"a{k}" for k in range(len(inputs))] + [f"o{k}" for k in range(len(outputs))]
        source = "\n".join(
            [
                f"def fused({', '.join(parameters)}):",
                "    rows, cols = o0.shape",
                "    for i in range(rows):",
                "        for j in range(cols):",
                *loads,
                *body,
                *stores,
            ]
        )
        # Compiled here for the recorded arrays' types, and checked against what eager computed.
        recorded = [rec.plain[i] for i in outputs]
        scratch = [np.empty_like(r) for r in recorded]
        args = [_shaped(rec.plain[i], expr) for i, expr in inputs]
        try:
            loop = self.compile_loop(source, "fused")
            if loop is None:
                return None
            loop(*args, *[s.reshape(rows, cols) for s in scratch])
        except Exception:  # noqa: BLE001 -- a loop the compiler cannot build: the chain's ops stay as they are
            return None
        if not all(_same_bits(s, r) for s, r in zip(scratch, recorded, strict=True)):
            return None
        for index in kept:
            self.keep[index] = max(self.keep.get(index, -1), chain.members[-1])
        return _Fused(chain, loop, inputs, outputs, source)


def _same_bits(found: Any, expected: Any) -> bool:
    """Whether a loop's values are eager's: equal, NaN where eager has NaN, and zeros of the
    same sign (``-0.0 == 0.0``, but ``1 / x`` tells them apart)."""
    if not np.array_equal(found, expected, equal_nan=True):
        return False
    if found.dtype.kind != "f":
        return True
    return not np.any((np.signbit(found) != np.signbit(expected)) & ~np.isnan(expected))


def _operand(name: str, ndim: int, pattern: str | None, rows: int, cols: int) -> tuple[str, str]:
    """How a replay passes an operand to a loop over (rows, cols), and the loop's index of it."""
    if pattern == "full":
        return (name if ndim == 2 else f"{name}.reshape({rows}, {cols})"), "[i, j]"
    if pattern == "row":
        return (name, "[j]") if ndim == 1 else (f"{name}.reshape(1, {cols})", "[0, j]")
    if pattern == "column":
        return (name if ndim == 2 else f"{name}.reshape({rows}, 1)"), "[i, 0]"
    return (name, "[0]") if ndim == 1 else (f"{name}.reshape(1, 1)", "[0, 0]")


def _shaped(array: Any, expr: str) -> Any:
    """``array`` as the replay expression ``expr`` (from :func:`_operand`) passes it."""
    if ".reshape(" not in expr:
        return array
    shape = tuple(int(d) for d in expr[expr.index(".reshape(") + 9 : -1].split(", "))
    return array.reshape(shape)


# -- the replay ----------------------------------------------------------------------------------
class _Diverged(CompileError):
    pass


def _assigned(out: Any, text: str) -> list[str]:
    """The replay lines that store a call's result (an op's ``outs``): one register, or each
    kept element of a tuple."""
    if isinstance(out, int):
        return [f"    r{out} = {text}"]
    elements = cast("tuple[int | None, ...]", out)
    return [f"    _t = {text}", *(f"    r{index} = _t[{i}]" for i, index in enumerate(elements) if index is not None)]


def _diverged(position: int, expected: Any, found: Any) -> None:
    raise _Diverged(
        f"a compiled step's replay diverged from its recording: kernel call {position} returned {found!r}, "
        f"expected {expected!r} as when recorded"
    )


def _failed(check: tuple[type[ShapegradError], str], state: Any = None) -> None:
    """A check failed in a replay (``check``: the error's class and message, as the step
    raises it): the Python state as the step leaves it when it raises there (its gradients'
    bookkeeping after ``grads.zero()``, modules' modes it set), then the error (the replay
    notes the writes and ends the tapes the step did before it: the count of its effects so
    far, ``_Plan.effects``)."""
    error, message = check
    if state is None:
        raise error(message)
    books, modes, done, rebinds = state
    _set_state(books, modes)
    raise _CheckFailed(error, message, done, rebinds)


def _set_state(books: list[tuple[Any, Any]], modes: list[tuple[Any, bool]]) -> None:
    """The gradients' bookkeeping and the modules' modes of a state taken by ``_Recorder.here``."""
    for grads, kept in books:
        set_bookkeeping(grads, kept)
    _restore_modes(modes)


class _CheckFailed(Exception):
    """A check failed in a replay, after ``done`` of the recording's effects and ``rebinds`` of
    its rebindings: the replay does those, then raises the ``error(message)`` the step raises."""

    def __init__(self, error: type[ShapegradError], message: str, done: int, rebinds: int) -> None:
        super().__init__(message)
        self.error, self.message, self.done, self.rebinds = error, message, done, rebinds


def _state_at_check(grads: list[Any], modules: list[Any]) -> tuple[list[Any], list[tuple[Any, bool]]]:
    """The gradients' bookkeeping and the modules' modes as they are now (at a range check, an
    operation or a host call: see ``_Recorder.here``)."""
    return [(g, bookkeeping(g)) for g in grads], [(m, m.training) for m in modules]


_AS_METHODS: dict[Any, str] = {np.reshape: "reshape", np.transpose: "transpose"}


class _Codegen:
    """Writes the recording as one Python function over local variables ``r<register>``."""

    def __init__(self) -> None:
        self.functions: list[Any] = []
        self.constants: list[Any] = []

    def fn(self, value: Any) -> str:
        self.functions.append(value)
        return f"F[{len(self.functions) - 1}]"

    def const(self, value: Any) -> str:
        if value is None or value is Ellipsis or isinstance(value, (bool, str)):
            return repr(value) if value is not Ellipsis else "..."
        if type(value) is int:
            return repr(value)
        if type(value) is float and np.isfinite(value):
            return repr(value)
        self.constants.append(value)
        return f"C[{len(self.constants) - 1}]"

    def expr(self, template: Any) -> str:
        if isinstance(template, _Ref):
            return f"r{template.index}"
        if isinstance(template, tuple):
            items = cast("tuple[Any, ...]", template)
            if not _mentions_ref(items):
                return self.const(items)
            return "(" + "".join(self.expr(v) + ", " for v in items) + ")"
        if isinstance(template, list):
            if not _mentions_ref(template):
                return f"list({self.const(tuple(cast('list[Any]', template)))})"
            return "[" + ", ".join(self.expr(v) for v in cast("list[Any]", template)) + "]"
        if isinstance(template, dict):
            entries = cast("dict[Any, Any]", template)
            return "{" + ", ".join(f"{self.const(k)}: {self.expr(v)}" for k, v in entries.items()) + "}"
        return self.const(template)

    def call(self, op: _Op, extra: str = "") -> str:
        if op.kind == "attr":
            return f"{self.expr(op.args[0])}.{op.fn}"
        if op.kind == "method":
            target, rest = self.expr(op.args[0]), op.args[1:]
            if op.fn == "__getitem__":
                return f"{target}[{self.expr(rest[0])}]"
            if op.fn == "__setitem__":
                return f"{target}[{self.expr(rest[0])}] = {self.expr(rest[1])}"
            head = f"{target}.{op.fn}"
        elif (
            op.fn in _AS_METHODS and len(op.args) == 2 and isinstance(op.args[0], _Ref) and not op.kwargs and not extra
        ):
            # np.reshape(r, s) is r.reshape(s) on an array, without the dispatch of the function
            head, rest = f"{self.expr(op.args[0])}.{_AS_METHODS[op.fn]}", op.args[1:]
        else:
            head, rest = self.fn(op.fn), op.args
        parts = [self.expr(a) for a in rest] + [f"{k}={self.expr(v)}" for k, v in op.kwargs.items()]
        if extra:
            parts.append(extra)
        return f"{head}({', '.join(parts)})"


class _Plan:
    """A recording ready to replay: the generated function, where its inputs come from,
    what it gives back, and the Python state a replay leaves (as the recorded run did)."""

    def __init__(
        self,
        rec: _Recorder,
        result: Any,
        end_state: list[tuple[Any, Any]],
        signature: Any,
        pins: list[Any],
        backend: Any = None,
    ) -> None:
        self.signature = signature
        self.bookkeeping: list[tuple[Any, tuple[frozenset[int], Any]]] = []
        self.layout = Layout([])
        # (optimizer, the attributes the step's own code reads of it, whether all of its state,
        # their values as the recording left them): a replay bakes in what its Python read
        self.optimizer_reads: list[tuple[Any, tuple[str, ...], bool, tuple[Any, ...]]] = []
        # the insides of what those attributes hold (a schedule object as opt.lr whose factor the
        # step reads, a list, a NumPy array), as the recording left them; None: nothing
        self.optimizer_layout: Layout | None = None
        self.defaults = _default_generators_drawn(rec)  # (backend's id, default generator) drawn from
        # NumPy arrays the step converted (sg.tensor(mask)): a replay is for their recorded values
        # (only those held outside the recording: a temporary the step built, np.arange(n) > pos,
        # is built again by no one, and its values are the recorded ones)
        self.converted = _held_elsewhere(
            [_partial_args(op.fn)[1] for op in rec.ops if getattr(op.fn, "func", None) is _from_constant]
        )
        self.pins = pins  # objects the signature names by id: kept alive so that ids stay theirs
        self.end_state = end_state
        self.effects = rec.effects
        # The Gradients the step zeroed, grouped by the tape each records on as the recorded run
        # left them (with any other its tape merged into), and their parameters' leaves' marks
        self.tape_groups: list[list[Any]] = []
        self.lost: list[tuple[Any, bool]] = []
        slot = Tensor.__dict__["_data"]
        self.slot = slot
        needed: list[int] = []
        self.result = self._outputs(rec, result, needed, slot, {}, _version_owners(rec), {})
        if rec.escape_reason is not None:
            raise CompileError(rec.escape_reason)
        self.rebound = [(tensor, index) for tensor, index in rec.rebound.values()]
        # every rebinding's array is given back by the generated function, so never a buffer a
        # later replay reuses: a replay that raises rebinds those done before (see _rebind_raised)
        self.rebinds = rec.rebinds
        self.unrebound = False  # a replay raised where it could not rebind as the step did
        needed += list(dict.fromkeys(index for _, index in self.rebinds))
        self.inputs = rec.inputs
        # which inputs were one memory (an argument and a view of it, or of a buffer the step
        # writes): a replay is for the same overlaps, as what it reorders past writes assumed
        recorded = [rec.plain[index] for index in rec.input_regs]
        self.overlaps = memory_pattern(recorded)
        # For the common replay (new argument arrays of their own memory, the same parameters):
        # the other inputs' positions, their arrays at the last admitted call, those arrays'
        # memory roots, and whether no recorded overlap involves an argument (see _same_memory).
        self._args_at = [i for i, (kind, _) in enumerate(rec.inputs) if kind == "arg"]
        self._held_at = [i for i, (kind, _) in enumerate(rec.inputs) if kind != "arg"]
        self._held_last = [recorded[i] for i in self._held_at]
        self._held_roots = {id(_root(array)) for array in self._held_last}
        arguments = set(self._args_at)
        self._args_apart = not any(i in arguments or j in arguments for i, j in self.overlaps)
        # (tensor, input position): a tensor the step reaches that held an argument's array
        # when recorded (compiled(model.weight), a buffer passed as the argument): the
        # recording reads the argument for it, which is right only while it holds that array
        self.also: list[tuple[Any, int]] = []
        self.n_ops = sum(1 for op in rec.ops if op.kind != "host")
        self.n_host = len(rec.ops) - self.n_ops
        narrowing = narrow(rec, needed)
        self._build(rec, needed, backend)
        self.narrowed_operations = 0
        if narrowing is not None:
            snapshot, count = narrowing
            if self._narrowed_agrees(rec, snapshot, needed):
                self.narrowed_operations = count
            else:
                snapshot.restore(rec)
                self._build(rec, needed, backend)

    def _narrowed_agrees(self, rec: _Recorder, snapshot: Snapshot, needed: list[int]) -> bool:
        """Whether the narrowed replay, run once on the recording's own inputs (it changes
        nothing outside its arrays), gives back what the recording computed."""
        values = [snapshot.plain[index] for index in rec.input_regs]
        try:
            outs = self.function(values, self.functions, self.constants, self.buffers)
        except Exception:  # noqa: BLE001 -- any failure keeps the whole recording
            return False
        return agrees([snapshot.plain[index] for index in needed], outs)

    def _outputs(
        self,
        rec: _Recorder,
        value: Any,
        needed: list[int],
        slot: Any,
        memo: dict[int, Any],
        owners: dict[int, tuple[str, Any]],
        groups: dict[int, Any],
    ) -> Any:
        """The template a replay builds its result from (see :func:`_build_result`). An object
        given back twice (``return y, y``, a list and a tensor in it) is one template, so one
        object at replay as in eager (``memo``: by id); a tensor or a list or dict the step
        takes as an argument, or a tensor that existed before it (a parameter), is that object;
        a tensor made in the step counts writes with the argument or tensor it views
        (``owners``: their write counters, by id; ``x.reshape(n)``, ``w.detach()``), or with the
        other tensors it gives back that share its counter (``groups``): a write through the
        result is then seen by a backward pass that saved the argument, as in eager."""
        known = memo.get(id(value))
        if known is not None:
            return known
        template: Any
        path = rec.argument_containers.get(id(value))
        if path is not None:
            template = ("argument", path)
        elif _is_tensor(value):
            tensor = value
            path = rec.argument_paths.get(id(tensor))
            plain = slot.__get__(tensor, None)
            index = rec.reg_of.get(id(plain))
            if path is not None:
                template = ("argument", path)
            elif id(tensor) not in rec.born:
                template = ("object", tensor)  # a parameter, a buffer: it holds this call's array
            elif index is None:
                rec.escape("the step returned a tensor holding an array no recorded operation produced")
                template = ("object", tensor)
            elif _backward_may_follow(tensor):
                rec.escape(
                    "it returns a traced tensor a backward pass could still start from after the step (as the "
                    "caller may do eagerly), and a replay records no graph to run it through: run backward "
                    "inside the step, or return loss.detach() or loss.item()"
                )
                template = ("object", tensor)
            elif _gradient_may_be_read(tensor):
                rec.escape(
                    "it returns a traced input whose gradient the caller may read after the step "
                    "(grads[x], as eagerly), which a replay does not deliver: read the gradient inside "
                    "the step and return it"
                )
                template = ("object", tensor)
            else:
                needed.append(index)
                shared: Any = None
                if tensor._version is not None:
                    shared = owners.get(id(tensor._version))
                    if shared is None:
                        shared = ("group", groups.setdefault(id(tensor._version), object()))
                template = ("tensor", index, tensor._backend, shared)
        elif _is_ndarray(value):
            traced = isinstance(value, _Traced) and value._rec is rec  # an array argument given back, say
            index = value._r if traced else rec.reg_of.get(id(value))
            if index is None:
                rec.escape("the step returned an array no recorded operation produced")
                return ("object", value)
            needed.append(index)
            template = ("array", index)
        elif isinstance(value, (tuple, list)):
            items = [self._outputs(rec, v, needed, slot, memo, owners, groups) for v in cast("tuple[Any, ...]", value)]
            kind: type = type(cast(object, value))
            if kind is tuple or kind is list:
                template = ("tuple" if kind is tuple else "list", items)
            elif issubclass(kind, tuple) and hasattr(cast(object, kind), "_make"):  # a named tuple: one again
                template = ("named", kind, items)
            else:
                return _made_in_step(rec, value)
        elif isinstance(value, dict):
            if type(cast(object, value)) is not dict:  # an OrderedDict, a defaultdict: not rebuilt as a dict
                return _made_in_step(rec, value)
            entries = cast("dict[Any, Any]", value)
            pairs: list[tuple[Any, Any]] = [
                (k, self._outputs(rec, v, needed, slot, memo, owners, groups)) for k, v in entries.items()
            ]
            template = ("dict", pairs)
        elif id(value) in rec.existing or _immutable(value):
            return ("object", value)
        elif _rebuildable(value):
            # an output dataclass (ModelOutput(loss=..., logits=...)), a SimpleNamespace the step
            # made: a new one at every replay, its attributes this call's
            held: dict[str, Any] = vars(cast(object, value))
            attributes = [(k, self._outputs(rec, v, needed, slot, memo, owners, groups)) for k, v in held.items()]
            template = ("attributes", value.__class__, attributes)
        else:
            return _made_in_step(rec, value)
        memo[id(cast(object, value))] = template
        return template

    @staticmethod
    def _last_uses(
        rec: _Recorder, needed: list[int], at: dict[int, int], keep: dict[int, int]
    ) -> tuple[list[int], list[int]]:
        """Each register's last use (``len(ops)``: given back) and its memory's (the last use
        of any view of it); an op that runs inside a fused loop uses at the loop's place, and
        a loop reads the registers ``keep`` names at its place."""
        ops = rec.ops
        n = len(rec.plain)
        last = [-1] * n
        for position, op in enumerate(ops):
            runs = at.get(position, position)
            for index in _refs((op.args, op.kwargs), []):
                last[index] = max(last[index], runs)
            made: Any = op.outs
            outs: tuple[int | None, ...] = cast("tuple[int | None, ...]", made) if isinstance(made, tuple) else (made,)
            for index in outs:
                if index is not None:
                    last[index] = max(last[index], runs)
        for index, position in keep.items():
            last[index] = max(last[index], position)
        for index in needed:
            last[index] = len(ops)
        # A value's memory lives as long as the last use of any view of it.
        memory_last = list(last)
        for index in range(n):
            owner = rec.owner[index]
            memory_last[owner] = max(memory_last[owner], last[index])
        return last, memory_last

    def _build(self, rec: _Recorder, needed: list[int], backend: Any) -> None:
        ops = rec.ops
        n = len(rec.plain)
        end = len(ops)
        last, memory_last = self._last_uses(rec, needed, {}, {})
        escaping = {rec.owner[index] for index in needed}
        inputs = set(rec.input_regs)
        uses = _register_uses(ops)
        into = self._elide_copies(rec, uses, last, escaping)
        folded, preloaded = folded_positions(rec, escaping, into)
        kept = folded | set(into) | set(into.values())  # as recorded: constants, elided copies
        scatter = scatter_writes(rec, uses, last, escaping, kept)
        kept |= scatter.positions()
        writes = _op_writes(rec, into)
        # under np.errstate(divide="raise") (or any other than NumPy's default) NumPy's passes
        # raise or call as eager's do; compiled loops would give inf and NaN silently
        fusion = (
            _Fusion(rec, escaping, uses, writes, backend.compile_loop, kept)
            if isinstance(backend, CompiledLoops) and floating_point_errors() is None
            else None
        )
        if fusion is not None and fusion.fused:
            last, memory_last = self._last_uses(rec, needed, fusion.at, fusion.keep)
        transposed, transposed_products = transposed_once(rec, uses, writes, kept, set(needed))
        for position, first in transposed.items():  # the group's copy lives until its last product
            last[first] = max(last[first], last[cast(int, ops[position].outs)])
        internal = fusion.internal if fusion is not None else set[int]()
        gen = _Codegen()
        lines = ["def _replay(I, F, C, B):"]
        if rec.input_regs:
            lines.append("    " + "".join(f"r{i}, " for i in rec.input_regs) + "= I")
        for index in preloaded:  # computed from no input: the recorded value (_compile_fold)
            lines.append(f"    r{index} = {gen.const(rec.plain[index])}")
        free: dict[tuple[Any, ...], list[int]] = {}
        buffers: list[Any] = []
        releases: dict[int, list[tuple[tuple[Any, ...], int]]] = {}
        dels: dict[int, list[int]] = {}
        for index in range(n):
            if (
                last[index] >= 0
                and last[index] < end
                and index not in inputs
                and index not in internal
                and index not in scatter.gone
            ):
                dels.setdefault(last[index], []).append(index)

        def buffer(out: int) -> int:
            # a reused buffer for a value that is not given back, free again after its last use
            plain = rec.plain[out]
            key = (plain.shape, plain.dtype.str, plain.strides)
            pool = free.get(key)
            if pool:
                slot_index = pool.pop()
            else:
                slot_index = len(buffers)
                buffers.append(np.empty_like(plain))
            releases.setdefault(memory_last[out], []).append((key, slot_index))
            return slot_index

        fused_at = fusion.fused if fusion is not None else {}
        # (the index in lines of an op's first line, the state a replay raising there leaves)
        marks: list[tuple[int, Any]] = []
        for position, op in enumerate(ops):
            if op.state is not None:
                marks.append((len(lines), op.state))
            if op.kind == "host":
                lines.append(f"    {gen.fn(op.fn)}()")
                continue
            if position in into.values():
                continue  # a copy into a buffer its value was written into directly
            if position in folded or position in scatter.dropped:
                continue  # a constant, computed when the recording was built; a zeros no longer summed
            if position in scatter.aliased:
                result, into_array = scatter.aliased[position]
                lines.append(f"    r{result} = r{into_array}")  # written slice by slice (_compile_scatter)
            elif position in scatter.moved:
                self._op_lines(rec, scatter.write(position, op), position, gen, into, escaping, buffer, lines)
            elif position in transposed and transposed[position] != op.outs:
                lines.append(f"    r{op.outs} = r{transposed[position]}")  # transposed once (_compile_transposed)
            elif position in transposed:
                self._op_lines(rec, op, position, gen, into, escaping, buffer, lines)
                lines.append(f"    r{op.outs} = {gen.fn(np.ascontiguousarray)}(r{op.outs})")
            elif fusion is not None and position in fusion.at:
                fused = fused_at.get(position)
                if fused is None:
                    continue  # computed in its chain's loop, at the chain's last op
                lines += self._fused_lines(rec, fused, gen, escaping, buffer)
            else:
                self._op_lines(rec, op, position, gen, into, escaping, buffer, lines)
            for key, slot_index in releases.pop(position, []):
                free.setdefault(key, []).append(slot_index)
            gone = dels.pop(position, [])
            if gone:
                lines.append("    del " + ", ".join(f"r{i}" for i in gone))
        lines.append("    return (" + "".join(f"r{i}, " for i in needed) + ")")
        self.fused_operations = sum(len(f.chain.members) for f in fused_at.values())
        self.folded_operations = len(folded)
        self.scattered_operations = len(scatter.aliased)
        self.transposed_once = transposed_products
        self.fused_loops = len(fused_at)
        self.loop_sources = sorted({f.source for f in fused_at.values()})
        self._finish(rec, gen, lines, buffers, needed, marks)

    @staticmethod
    def _fused_lines(
        rec: _Recorder, fused: _Fused, gen: _Codegen, escaping: set[int], buffer: Callable[[int], int]
    ) -> list[str]:
        """A chain's loop call: its outputs' arrays (reused buffers, or new where given back)
        and the loop over them."""
        lines: list[str] = []
        full = fused.chain.shape
        rows, cols = int(np.prod(full[:-1], dtype=np.int64)), full[-1]
        written: list[str] = []
        for out in fused.outputs:
            plain = rec.plain[out]
            if out in escaping:
                lines.append(
                    f"    r{out} = {gen.fn(np.empty)}({gen.const(plain.shape)}, dtype={gen.const(plain.dtype)})"
                )
            else:
                lines.append(f"    r{out} = B[{buffer(out)}]")
            written.append(f"r{out}" if plain.ndim == 2 else f"r{out}.reshape({rows}, {cols})")
        names = " ".join(_name(rec.ops[p].fn) for p in fused.chain.members)
        arguments = ", ".join([expr for _, expr in fused.inputs] + written)
        lines.append(f"    {gen.fn(fused.loop)}({arguments})  # fused: {names}")
        return lines

    @staticmethod
    def _op_lines(
        rec: _Recorder,
        op: _Op,
        position: int,
        gen: _Codegen,
        into: dict[int, int],
        escaping: set[int],
        buffer: Callable[[int], int],
        lines: list[str],
    ) -> None:
        """One recorded operation's lines."""
        ops = rec.ops
        extra = ""
        out = op.outs
        if position in into:
            extra = f"out={gen.expr(ops[into[position]].args[0])}"
        elif (
            op.ufunc
            and isinstance(out, int)
            and rec.made_by[out] == position
            and rec.owner[out] == out
            and out not in escaping
            and isinstance(rec.plain[out], np.ndarray)
            and rec.plain[out].ndim > 0
        ):
            extra = f"out=B[{buffer(out)}]"
        text = gen.call(op, extra) if op.kind != "check" else ""
        if op.kind == "method" and op.fn == "__setitem__":
            lines.append(f"    {text}")
        elif isinstance(out, (int, tuple)):
            lines += _assigned(out, text)
        elif op.kind == "check":
            lines.append(f"    if {gen.expr(op.args[0])}: _failed({gen.const(op.fn)}, {gen.const(op.expect)})")
        elif op.kind == "kernel" and op.expect is not None:
            lines.append(f"    _v = {text}")
            lines.append(f"    if _v != {gen.const(op.expect)}: _diverged({position}, {gen.const(op.expect)}, _v)")
        else:
            lines.append(f"    {text}")

    def _finish(
        self,
        rec: _Recorder,
        gen: _Codegen,
        lines: list[str],
        buffers: list[Any],
        needed: list[int],
        marks: list[tuple[int, Any]],
    ) -> None:
        self.source = "\n".join(lines)
        # the state a replay raising at a line of the source leaves (see _raised): that of the
        # last op whose lines begin at or before it (an op that wrote no lines gives way to the next)
        starts = [1]
        for line in lines:
            starts.append(starts[-1] + line.count("\n") + 1)
        self.raised_lines: list[int] = []
        self.raised_states: list[Any] = []
        for at, state in marks:
            line = starts[at]
            if self.raised_lines and self.raised_lines[-1] == line:
                self.raised_states[-1] = state
            elif not self.raised_states or state is not self.raised_states[-1]:
                self.raised_lines.append(line)
                self.raised_states.append(state)
        namespace: dict[str, Any] = {"_diverged": _diverged, "_failed": _failed}
        exec(builtins.compile(self.source, "<sg.compile replay>", "exec"), namespace)  # noqa: S102 -- our own generated code
        self.function: Callable[..., tuple[Any, ...]] = namespace["_replay"]
        self.functions, self.constants, self.buffers = gen.functions, gen.constants, buffers
        self.needed = {index: i for i, index in enumerate(needed)}
        self.buffer_bytes = sum(b.nbytes for b in buffers)
        self.guard: Callable[..., tuple[bool, ...]] | None = None
        self.answers = tuple(answer for _, _, answer in rec.guards)
        if rec.guards:
            self.guard = self._guards(rec)

    def _guards(self, rec: _Recorder) -> Callable[..., tuple[bool, ...]]:
        """The function asking the guards' questions of a call's inputs (before a replay)."""
        positions = sorted({p for cone, _, _ in rec.guards for p in cone})
        gen = _Codegen()
        lines = ["def _guard(I, F, C):"]
        if rec.input_regs:
            lines.append("    " + "".join(f"r{i}, " for i in rec.input_regs) + "= I")
        for position in positions:
            op = rec.ops[position]
            out = op.outs
            if isinstance(out, (int, tuple)):
                lines += _assigned(out, gen.call(op))
        lines.append("    return (" + "".join(f"bool(r{index}), " for _, index, _ in rec.guards) + ")")
        namespace: dict[str, Any] = {}
        exec(builtins.compile("\n".join(lines), "<sg.compile guard>", "exec"), namespace)  # noqa: S102
        function = namespace["_guard"]
        functions, constants = gen.functions, gen.constants
        return functools.partial(_call_guard, function, functions, constants)

    def stale(self) -> str | None:
        """What differs, of the library state the step's Python read, from when recorded."""
        if self.defaults:
            from .ops.creation import _default_generators

            for key, gen in self.defaults:
                if _default_generators.get(key) is not gen:
                    return "the default generator it draws from was reseeded (sg.seed)"
        if any(constant.changed() for constant in self.converted):
            return "a NumPy array it converts into a tensor (sg.tensor(array)) holds other values"
        for opt, keys, whole, view in self.optimizer_reads:
            now = _optimizer_view(_optimizer_state(opt), keys, whole) if whole else _optimizer_attributes(opt, keys)
            if not same_value(now, view):
                read = "its state" if whole else ", ".join(f"opt.{k}" for k in keys)
                return f"what it reads of its {type(opt).__name__} ({read}) changed"
        held = self.optimizer_layout
        if held is not None:  # the same objects (optimizer_reads): what they hold
            changed = held.changed(held.roots)
            if changed is not None:
                return f"what it reads through an optimizer's attribute changed ({changed})"
        return None

    def inputs_of(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        """This call's input arrays, in the recording's order."""
        values: list[Any] = []
        for kind, source in self.inputs:
            if kind == "arg":
                leaf = _at_path(args, kwargs, source)
                values.append(cast(Any, leaf)._data if isinstance(leaf, Tensor) else leaf)
            elif kind == "holder":
                values.append(source._data)
            else:
                values.append(source)
        return values

    def admits(self, values: list[Any]) -> bool:
        """Whether the inputs overlap as when recorded and the guards answer as then."""
        if not self._same_memory(values):
            return False
        slot = self.slot
        if any(slot.__get__(tensor, Tensor) is not values[position] for tensor, position in self.also):
            return False
        return self.guard is None or self.guard(values) == self.answers

    def _same_memory(self, values: list[Any]) -> bool:
        """Whether which inputs share memory is as when recorded. Where the inputs other than
        the arguments are the arrays of the last admitted call and each argument's memory is
        its own (no root shared with another input), that is known without comparing every
        pair (0.4 µs an input: 20 µs a decoding step); else the whole pattern is compared."""
        if self._args_apart and all(map(operator.is_, [values[i] for i in self._held_at], self._held_last)):
            roots = self._held_roots
            seen: set[int] = set()
            for i in self._args_at:
                root = id(_root(values[i]))
                if root in roots or root in seen:
                    break
                seen.add(root)
            else:
                return True
        if memory_pattern(values) != self.overlaps:
            return False
        self._held_last = [values[i] for i in self._held_at]
        self._held_roots = {id(_root(array)) for array in self._held_last}
        return True

    @staticmethod
    def _elide_copies(
        rec: _Recorder, uses: dict[int, list[int]], last: list[int], escaping: set[int]
    ) -> dict[int, int]:
        """``{ufunc op: copy op}`` where a backend's ``copy_into(target, value)`` copies an
        element-wise result used nowhere else into a target of its shape and dtype that no op
        in between touches (a gradient into its ``Gradients`` buffer): the ufunc writes into
        the target (``out=``) and the copy goes."""
        ops = rec.ops
        into: dict[int, int] = {}
        for position, op in enumerate(ops):
            if not (op.kind == "call" and getattr(op.fn, "__name__", "") == "copy_into" and len(op.args) == 2):
                continue
            target, value = op.args
            if not (isinstance(target, _Ref) and isinstance(value, _Ref)):
                continue
            t, v = target.index, value.index
            made = rec.made_by[v]
            if made < 0 or not ops[made].ufunc or ops[made].outs != v or rec.owner[v] != v or v in escaping:
                continue
            if uses.get(v, []) != [position] or last[v] != position:
                continue
            a, b = rec.plain[t], rec.plain[v]
            if not (_is_ndarray(a) and _is_ndarray(b) and a.shape == b.shape and a.dtype == b.dtype):
                continue
            if any(made < p < position for p in uses.get(t, [])) or made in into:
                continue
            into[made] = position
        return into

    def replay(self, values: list[Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run the generated function on this call's inputs (``args``, ``kwargs``: the call's
        arguments); rebind, restore, note what the step noted, give back. A replay that raises
        (a range check failing; a host call or an operation raising: a learning-rate schedule
        in the update, ``sg.multinomial`` refusing its weights) raises what the step raises
        there, leaving what the step leaves (see ``_failed``, ``_raised``)."""
        try:
            outs = self.function(values, self.functions, self.constants, self.buffers)
        except _CheckFailed as failed:
            self._rebind_raised(failed.__traceback__, failed.rebinds)
            self._effects(self.effects[: failed.done], args, kwargs)
            raise failed.error(failed.message) from None
        except _Diverged:
            raise
        except BaseException as error:
            self._raised(error, args, kwargs)
            raise
        needed = self.needed
        for tensor, index in self.rebound:
            tensor._data = outs[needed[index]]
        for restore, state in self.end_state:
            restore(state)
        if self.effects:
            self._effects(self.effects, args, kwargs)
            self._tapes()
        return _build_result(self.result, outs, needed, args, kwargs, {})

    def _raised(self, error: BaseException, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """``error`` was raised in the generated function (by a host call, an operation): the
        Python state as the step leaves it when it raises at that operation, taken when it was
        recorded (its gradients' bookkeeping, which the replay sets only at its end, and its
        modules' modes), and the effects the step had by then done again (the tapes its
        ``grads.zero()`` ended, the writes it noted). Which operation raised is read from the
        traceback's line in the generated source: nothing is counted while a replay runs.
        What the operations before it wrote in place they wrote, as the step's did."""
        tb = error.__traceback__
        code = self.function.__code__
        while tb is not None and tb.tb_frame.f_code is not code:
            tb = tb.tb_next
        if tb is None:
            return
        at = bisect.bisect_right(self.raised_lines, tb.tb_lineno) - 1
        if at < 0:
            return
        books, modes, done, rebinds = self.raised_states[at]
        _set_state(books, modes)
        self._rebind_raised(error.__traceback__, rebinds)
        self._effects(self.effects[:done], args, kwargs)

    def _rebind_raised(self, tb: types.TracebackType | None, count: int) -> None:
        """The first ``count`` rebindings the step did (``state._data = ...``), done again by a
        replay that raised where the step had done them, from the arrays the generated
        function's frame (in the traceback ``tb``) holds: the next call reads what eager's
        would. One whose array that frame does not hold yet (a fused loop computes it later)
        cannot be: the step runs eagerly from its next call (see ``unrebound``)."""
        if not count:
            return
        code = self.function.__code__
        while tb is not None and tb.tb_frame.f_code is not code:
            tb = tb.tb_next
        held: dict[str, Any] = {} if tb is None else tb.tb_frame.f_locals
        for tensor, index in self.rebinds[:count]:
            array = held.get(f"r{index}")
            if array is None:
                self.unrebound = True
                continue
            tensor._data = array

    @staticmethod
    def _effects(effects: list[tuple[str, Any]], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """What the step did to the tapes, done again (see ``_Recorder.effects``): the in-place
        writes it noted (a backward pass through values saved before them raises ``TapeError``)
        and the tapes its ``grads.zero()`` ended, each with a new tape behind it."""
        for kind, what in effects:
            if kind == "zeroed":
                end_tape(what)
                continue
            where, target = what
            if where == "version":
                note_version_written(target)
            else:
                tensor = target if where == "tensor" else _at_path(args, kwargs, target)
                if isinstance(tensor, Tensor):
                    note_written(tensor)

    def _tapes(self) -> None:
        """The tapes of the ``Gradients`` the step zeroed as the recorded run left them: those
        one op merged (``x.trace(g_enc, g_dec)``) one tape again, and their parameters' marks
        of a gradient that went to no ``Gradients`` as then."""
        for group in self.tape_groups:
            tape = tape_of(group[0])
            for grads in group[1:]:
                other = tape_of(grads)
                if other.ended is None and other.thread == tape.thread:  # as merge_tapes asks
                    tape = merge_tapes(tape, other)
        for leaf, lost in self.lost:
            leaf.lost = lost


def _held_elsewhere(constants: list[_Constant]) -> list[_Constant]:
    """The constants whose source array (or the array it views) something besides the
    recording holds: a global, an object's attribute, a buffer kept between calls, which may be
    written between calls. A temporary the step built and dropped (a mask from ``np.arange``,
    which the step may even have written after converting it) is held by its constants alone
    (and by the views of it they hold), and cannot change."""
    import sys

    held: dict[int, int] = {}  # id -> the references the constants' sources account for
    for constant in constants:
        held[id(constant.source)] = held.get(id(constant.source), 0) + 1
        if constant.source.base is not None:  # (no variable: it would hold the base too)
            held[id(constant.source.base)] = held.get(id(constant.source.base), 0) + 1
    kept: list[_Constant] = []
    for constant in constants:
        array = constant.source
        while array is not None:
            # getrefcount's argument and this loop's variable; memory another kind of object owns
            # (a PyTorch tensor's, t.numpy(); a DLPack capsule's) is held by it, and may change
            if not _is_ndarray(array) or sys.getrefcount(array) - 2 > held.get(id(array), 0):
                kept.append(constant)
                break
            array = array.base
    return kept


def _built_from_handed(rec: _Recorder) -> str | None:
    """Why a recording cannot replay a NumPy array the step built and converted into a tensor
    after its Python was given a recorded array (``rec.handed``), or None. NumPy computes
    ``TABLE[y.data]``, ``DATA[g.permutation(n)[:b]]`` or ``np.array(t.data)`` from that array's
    values without the recording seeing it, so such an array is not one built from the numbers
    the recording's checks cover (a mask from ``np.arange``), and a replay would give the
    recorded values. One held elsewhere (a global) is compared before each replay instead."""
    constants: list[_Constant] = [
        _partial_args(op.fn)[1] for op in rec.ops if getattr(op.fn, "func", None) is _from_constant
    ]
    kept = {id(constant) for constant in _held_elsewhere(constants)}
    for constant in constants:
        if constant.unseen is not None and id(constant) not in kept:
            given, where = constant.unseen
            return (
                f"a NumPy array it built and converted into a tensor{where} after it was given {given}: "
                "NumPy may have computed it from that array's values (TABLE[y.data], np.array(t.data)), "
                "which the recording cannot follow"
            )
    return None


def _read_unseen(rec: _Recorder) -> str | None:
    """Why a recording cannot replay a 0-d array the step's own code was given (``rec.given``:
    ``x.data.std()``, ``x.data[1]``, a 0-d tensor's ``t.data``), or None. NumPy's scalar types
    read such an array's value in C, unseen by any hook (``np.float32(x.data.std())``,
    ``np.int64(a[1])``), and the number they give is a constant of the recording. Taken for one
    read so: one dropped with no recorded operation taking it after, no guard asking it, nothing
    holding it (the step's result, an attribute), one computed and left unused too; and one
    whose value a recorded operation after it was given takes as a number (``x * np.float32(s)``
    beside ``x / s``, which uses it as an array as well)."""
    last: dict[int, int] = {}
    for position, op in enumerate(rec.ops):
        for index in _refs((op.args, op.kwargs), []):
            last[index] = position
    asked = {index for _, index, _ in rec.guards}
    reason = (
        "the value of a 0-d array{} in a way the recording cannot see: NumPy's scalar types read "
        "it in C (np.float32(x.data.std()), np.int64(a[1]); use it as an array, x / x.data.std(), "
        "to replay)"
    )
    for index, (since, where, value, first) in rec.given.items():
        if any(_same_number(number, value) for op in rec.ops[first:] for number in _numbers((op.args, op.kwargs))):
            return reason.format(where)
        if last.get(index, -1) >= since or index in asked:
            continue
        view = rec.views[index]
        # rec.views, this variable and getrefcount's argument: held by nothing else
        if view is not None and sys.getrefcount(view) <= 3:
            return reason.format(where)
    return None


def _numbers(template: Any) -> list[Any]:
    """The numbers an operation's arguments hold as constants (not arrays, not booleans)."""
    found: list[Any] = []
    stack = [template]
    while stack:
        value = stack.pop()
        if isinstance(value, (tuple, list)):
            stack.extend(cast("Sequence[Any]", value))
        elif isinstance(value, dict):
            stack.extend(cast("dict[Any, Any]", value).values())
        elif isinstance(value, slice):
            bounds = cast("slice[Any, Any, Any]", value)
            stack.extend((bounds.start, bounds.stop, bounds.step))
        elif isinstance(value, (int, float, complex, np.number)) and not isinstance(value, bool):
            found.append(value)
    return found


def _same_number(number: Any, value: Any) -> bool:
    """Whether a constant ``number`` may be a 0-d array's ``value`` read through a NumPy scalar
    type or a Python number (``np.float32(s)``, ``float(np.float32(s))``, ``np.float16(s)``,
    ``int(np.int64(s))``): of the same kind (an integer for an integer array, a float for a
    float one: an axis is no float's value) and equal, or equal to the value rounded to its type."""
    kind = value.dtype.kind
    if kind in "iu":
        if not isinstance(number, (int, np.integer)):
            return False
    elif kind in "fc":
        if not isinstance(number, (float, complex, np.floating, np.complexfloating)):
            return False
    else:
        return False
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if bool(number == value):
            return True
        if isinstance(number, np.number):
            return bool(value.astype(cast(Any, number).dtype) == number)
    return False


def _partial_args(fn: Any) -> tuple[Any, ...]:
    """The arguments a ``functools.partial`` holds; none for any other callable."""
    if isinstance(fn, functools.partial):
        held: tuple[Any, ...] = cast("functools.partial[Any]", fn).args
        return held
    return ()


def _default_generators_drawn(rec: _Recorder) -> list[tuple[int, Any]]:
    """The default generators (``sg.seed``'s, for draws given no generator) the recording drew
    from, by their backend's id: the draws are recorded calls of their sources' methods."""
    from .ops.creation import _default_generators

    owners = {id(o.fn.__self__) for o in rec.ops if isinstance(o.fn, types.MethodType)}
    # and a recorded call that draws inside (sg.multinomial's), given its generator as an argument
    owners |= {id(a) for o in rec.ops for a in _partial_args(o.fn)}
    return [(key, gen) for key, gen in _default_generators.items() if id(gen._source) in owners or id(gen) in owners]


def _call_guard(
    function: Callable[..., tuple[bool, ...]], functions: list[Any], constants: list[Any], values: list[Any]
) -> tuple[bool, ...]:
    return function(values, functions, constants)


def _version_owners(rec: _Recorder) -> dict[int, tuple[str, Any]]:
    """The write counters of the tensors a step takes or reaches, by id, with where a replay
    finds each again: ``("arg", path)`` for a tensor argument (the call's), ``("tensor",
    tensor)`` for one it reads or writes (a parameter, a buffer)."""
    owners: dict[int, tuple[str, Any]] = {}
    reached = [tensor for kind, tensor in rec.inputs if kind == "holder"]
    reached += [what[1] for kind, what in rec.effects if kind == "written" and what[0] == "tensor"]
    for tensor in reached:
        if tensor._version is not None:
            owners.setdefault(id(tensor._version), ("tensor", tensor))
    for tensor_id, path in rec.argument_paths.items():  # last: an argument's path is the call's
        version = rec.argument_tensors[tensor_id]._version
        if version is not None:
            owners[id(version)] = ("arg", path)
    return owners


def _build_result(
    template: Any,
    outs: tuple[Any, ...],
    needed: dict[int, int],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    made: dict[int, Any],
) -> Any:
    """A replay's result from its template (see ``_Plan._outputs``): ``made`` holds what this
    call built, by the template's id (one template given back twice is one object), and the
    write counters shared by tensors made in it, by their group's id."""
    kind = template[0]
    if kind == "object":
        return template[1]
    found = made.get(id(template))
    if found is not None:
        return found
    value: Any
    if kind == "tensor":
        value = wrap(outs[needed[template[1]]], template[2])
        shared = template[3]
        if shared is not None:
            where, source = shared
            if where == "group":
                version = made.get(id(source))
                if version is None:
                    version = made[id(source)] = Version()
                value._version = version
            else:
                owner = _at_path(args, kwargs, source) if where == "arg" else source
                value._version = version_of(owner)
    elif kind == "array":
        return outs[needed[template[1]]]
    elif kind == "argument":
        return _at_path(args, kwargs, template[1])
    elif kind == "tuple":
        value = tuple(_build_result(t, outs, needed, args, kwargs, made) for t in template[1])
    elif kind == "list":
        value = [_build_result(t, outs, needed, args, kwargs, made) for t in template[1]]
    elif kind == "named":
        value = template[1]._make([_build_result(t, outs, needed, args, kwargs, made) for t in template[2]])
    elif kind == "attributes":
        value = template[1].__new__(template[1])
        made[id(template)] = value  # (before its attributes: one that holds itself)
        value.__dict__.update({k: _build_result(t, outs, needed, args, kwargs, made) for k, t in template[2]})
    else:
        value = {k: _build_result(t, outs, needed, args, kwargs, made) for k, t in template[1]}
    made[id(template)] = value
    return value


def _immutable(value: Any) -> bool:
    """Whether a value the step gives back is one a replay may give back again as recorded: a
    number, a string, None, an enum member, a class or module, a function holding no variables,
    or a frozenset of such: the values the layout holds as atoms, and classes, ``...`` and those."""
    if value is Ellipsis or isinstance(value, (*ATOMS, type)):
        return True
    if isinstance(value, types.FunctionType):
        return value.__closure__ is None
    if isinstance(value, frozenset):
        return all(_immutable(v) for v in cast("frozenset[Any]", value))
    return False


def _rebuildable(value: Any) -> bool:
    """Whether a replay builds a new one of an object the step made and gave back, from its
    attributes: a dataclass instance or a ``SimpleNamespace``, its attributes in its ``__dict__``."""
    kind: type = value.__class__
    if kind is types.SimpleNamespace:
        return True
    return (
        dataclasses.is_dataclass(value)
        and kind.__new__ is object.__new__
        and "__slots__" not in kind.__dict__
        and hasattr(value, "__dict__")
    )


def _made_in_step(rec: _Recorder, value: Any) -> Any:
    """The template of an object the step made and gave back that a replay cannot build again
    (a generator, a set, a dict subclass, an instance of the user's class): the recording
    cannot be replayed (it would give back the recorded object, holding the recorded values,
    at every call)."""
    rec.escape(
        f"it returns a {type(value).__name__} it made, which a replay would give back as recorded (the same "
        "object, holding the first call's values, at every call): return tensors in a tuple, list, dict, "
        "named tuple or dataclass"
    )
    return ("object", value)


def _at_path(args: tuple[Any, ...], kwargs: dict[str, Any], path: tuple[Any, ...]) -> Any:
    value: Any = args if path[0] == "a" else kwargs
    for key in path[1:]:
        value = value[key]
    return value


# -- what a call's signature holds -----------------------------------------------------------------
def _walk_arguments(
    args: tuple[Any, ...], kwargs: dict[str, Any], visit: Callable[[tuple[Any, ...], Any], None]
) -> None:
    """Call ``visit(path, value)`` for every argument and every value inside its tuples, lists
    and dicts, a container before what it holds; a path is ``("a", i)`` or ``("k", name)``
    followed by the indices and keys leading to the value."""

    def walk(value: Any, path: tuple[Any, ...]) -> None:
        visit(path, value)
        if isinstance(value, (tuple, list)):
            for i, v in enumerate(cast("tuple[Any, ...]", value)):
                walk(v, (*path, i))
        elif isinstance(value, dict):
            for k, v in cast("dict[Any, Any]", value).items():
                walk(v, (*path, k))

    for i, a in enumerate(args):
        walk(a, ("a", i))
    for k, v in kwargs.items():
        walk(v, ("k", k))


def _tensor_leaves(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[tuple[Any, ...], Any]]:
    """``(path, leaf)`` for every tensor and NumPy array among the arguments (inside tuples,
    lists and dicts too)."""
    found: list[tuple[tuple[Any, ...], Any]] = []

    def visit(path: tuple[Any, ...], value: Any) -> None:
        if _is_tensor(value) or _is_ndarray(value):
            found.append((path, value))

    _walk_arguments(args, kwargs, visit)
    return found


def _signature_change(before: Any, now: Any) -> str:
    """What differs between two signatures (``CompiledStep``'s keys), said for a person: the
    first argument whose description differs, as ``argument 0: shape (1, 10) -> shape (1, 11)``."""

    def said(description: Any, other: Any) -> str:
        kind = description[0]
        if kind in ("tensor", "array"):
            if kind != other[0] or description[1] != other[1]:
                return f"shape {tuple(description[1])}"
            if description[2] != other[2]:
                return f"dtype {description[2]}"
            order = description[-1]
            return f"memory order {order}" if isinstance(order, str) else f"strides largest first on axes {order}"
        if kind in ("int", "float", "complex", "bool", "str", "bytes", "NoneType"):
            return repr(description[1])
        if kind in ("tuple", "list", "dict"):
            of = f" ({description[2][0]})" if len(description) > 2 else ""
            return f"a {kind}{of} of {len(description[1])}"
        return kind if kind != "object" else "another object"

    def first_change(name: str, b: Any, n: Any) -> str | None:
        if b == n:
            return None
        if b[0] == n[0] and b[0] in ("tuple", "list", "dict") and len(b[1]) == len(n[1]):
            inner = [(f"{name}[{i}]", x, y) for i, (x, y) in enumerate(zip(b[1], n[1], strict=True))]
            if b[0] == "dict":
                inner = [(f"{name}[{x[0]!r}]", x[1], y[1]) for x, y in zip(b[1], n[1], strict=True)]
            for inner_name, x, y in inner:
                found = first_change(inner_name, x, y)
                if found is not None:
                    return found
        return f"{name}: {said(b, n)} -> {said(n, b)}"

    if before is not None:
        named = [(f"argument {i}", b, n) for i, (b, n) in enumerate(zip(before[0], now[0], strict=False))]
        named += [(f"{k}=", b, n) for (k, b), (_, n) in zip(before[1], now[1], strict=False)]
        for name, b, n in named:
            found = first_change(name, b, n)
            if found is not None:
                return found
    return "its arguments' shapes, dtypes or values change from call to call"


class _Exact:
    """A float or complex argument in a signature, or a number keying a dict argument: equal to
    another where their types and bits are (``==`` calls 0.0 and -0.0 equal, which ``1 / s``
    tells apart, a NaN unequal to itself, which recorded again at every call, and 1, 1.0 and
    True equal); shown as the number."""

    __slots__ = ("bits", "value")

    def __init__(self, value: float | complex) -> None:
        self.value, self.bits = value, (value.__class__, exact(value))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Exact) and self.bits == other.bits

    def __hash__(self) -> int:
        return hash(self.bits)

    def __repr__(self) -> str:
        return repr(self.value)


# NumPy's error state lives in a context variable (NumPy 2): its default object tells the
# default state apart without building np.geterr()'s dict at every call
_ERROR_STATE: Any = getattr(getattr(getattr(np, "_core", None), "umath", None), "_extobj_contextvar", None)
_DEFAULT_ERROR_STATE = None if _ERROR_STATE is None else _ERROR_STATE.get()


def floating_point_errors() -> tuple[tuple[str, Any], ...] | None:
    """What ``np.errstate``/``np.seterr`` ask of floating-point errors now, where some error
    raises or calls (``divide="raise"``: a division by zero raises ``FloatingPointError``);
    None where each is ignored or warned of (NumPy's default). Part of a compiled step's
    signature: a recording made under such a state runs NumPy's passes only, which raise (or
    call) as eager's do; compiled loops give inf and NaN as an ignored error does."""
    if _ERROR_STATE is not None and _ERROR_STATE.get() is _DEFAULT_ERROR_STATE:
        return None
    state = np.geterr()
    if all(how in ("ignore", "warn") for how in state.values()):
        return None
    return tuple(sorted(state.items()))


def _error_settings(state: Mapping[str, Any]) -> str:
    """``np.geterr()``'s settings as ``divide='raise', ...``."""
    return ", ".join(f"{name}={how!r}" for name, how in sorted(state.items()))


def _memory_order(data: Any) -> Any:
    """How an argument's array lies in memory, for the signature: ``"C"``, ``"F"``, or its axes
    from the largest stride to the smallest. NumPy sums and iterates in memory order and a
    recording's buffers keep the recorded one, so a transposed view replayed with a C-ordered
    recording rounded otherwise than eager (``exp(x).sum(axis=1)``, 4 in 10 million apart)."""
    flags = getattr(data, "flags", None)
    if flags is None or flags.c_contiguous:
        return "C"
    if flags.f_contiguous:
        return "F"
    strides: tuple[int, ...] = data.strides
    return tuple(sorted(range(len(strides)), key=lambda axis: -abs(strides[axis])))


def _describe(value: Any, pins: list[Any]) -> Any:
    """One argument's part of the signature: shape, dtype and backend of a tensor, the value
    of a number or string, the identity of any other object."""
    if isinstance(value, Tensor):
        tensor = cast(Any, value)
        if tensor.traced:
            raise CompileError(
                f"a compiled step takes untraced tensors, found a traced argument {tensor!r}: a replay runs "
                "no tape, so a tape begun outside the step cannot continue inside it. Trace inside the step "
                "(x.trace(grads)) and pass the untraced tensor"
            )
        data = tensor._data
        return ("tensor", tensor.shape, tensor.backend_dtype_name(), id(tensor._backend), _memory_order(data))
    if isinstance(value, np.ndarray):
        array = cast("np.ndarray[Any, Any]", value)
        return ("array", array.shape, array.dtype.str, _memory_order(array))
    if type(value) in (float, complex):  # bit for bit: -0.0 is not 0.0, a NaN is itself
        return (type(value).__name__, _Exact(value))
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return (type(value).__name__, value)
    if isinstance(value, np.generic):  # a NumPy scalar (np.float32(0.1)): by value, bit for bit, as a number is
        scalar = cast("np.generic[Any]", value)
        return ("scalar", scalar.dtype.str, scalar.tobytes())
    if isinstance(value, (tuple, list)):
        kind = "tuple" if isinstance(value, tuple) else "list"
        items = cast("tuple[Any, ...]", value)
        described = (kind, tuple(_describe(v, pins) for v in items))
        return described if type(items) in (tuple, list) else (*described, _describe_class(items, pins))
    if isinstance(value, dict):
        entries = cast("dict[Any, Any]", value)
        described = ("dict", tuple((_describe_key(k), _describe(v, pins)) for k, v in entries.items()))
        return described if type(entries) is dict else (*described, _describe_class(entries, pins))
    pins.append(value)
    return ("object", id(value))


def _describe_class(value: Any, pins: list[Any]) -> Any:
    """The class of a tuple, list or dict argument of a subclass (a named tuple, an
    ``OrderedDict``, a ``defaultdict`` and what it makes for a missing key), by identity: two
    named tuples of equal items are equal tuples, which the step's Python may tell apart
    (``hp.scale`` of another class, ``isinstance``)."""
    kind: type = value.__class__
    pins.append(kind)
    factory = attribute(value, "default_factory") if isinstance(value, collections.defaultdict) else None
    if factory is not None:
        pins.append(factory)
    return (kind.__qualname__, id(kind), id(factory))


def _describe_key(key: Any) -> Any:
    """A dict argument's key in the signature: a number by type and bits (``{1: w}``,
    ``{True: w}`` and ``{1.0: w}`` are equal dicts, and ``{0.0: w}`` and ``{-0.0: w}``, which the
    step's Python may tell apart), any other key itself."""
    return _Exact(key) if isinstance(key, (int, float, complex)) else key


class _State:
    """The library objects a step reaches, by kind: what the signature reads of them and what a
    replay restores."""

    def __init__(self, objects: list[Any]) -> None:
        self._seen: set[int] = set()
        self.grads: list[Any] = []
        self.modules: list[Any] = []
        self.optimizers: list[Any] = []
        self.extend(objects)

    def extend(self, objects: list[Any]) -> None:
        """Add the library objects among ``objects`` not met yet."""
        for value in objects:
            if id(value) in self._seen:
                continue
            self._seen.add(id(value))
            if isinstance(value, Gradients):
                self.grads.append(value)
            elif isinstance(value, Module):
                self.modules.append(value)
            elif isinstance(value, Optimizer):
                self.optimizers.append(value)

    def bookkeeping(self) -> list[tuple[Any, tuple[frozenset[int], Any]]]:
        """Each ``Gradients``'s bookkeeping as the call finds it: a recording that reads it
        before ``grads.zero()`` replays only where it is the same."""
        return [(g, bookkeeping(g)) for g in self.grads]

    def allowed(self) -> dict[int, Any]:
        """Arrays that persist between steps and may be reached outside a tensor: gradient
        buffers and optimizer state."""
        arrays: dict[int, Any] = {}
        for g in self.grads:
            for buffer in g._slots.values():
                arrays[id(buffer)] = buffer
        for opt in self.optimizers:
            for slot in opt._slots:
                for value in slot.state.values():
                    arrays[id(value)] = value
        return arrays

    def end_state(self, start: Layout) -> list[tuple[Callable[[Any], None], Any]]:
        """What a replay sets, as the recorded run left it: the gradients' bookkeeping (which
        buffers hold this step's gradient, whether an update used them) and the modes of the
        modules whose mode the step changed (``start``: the layout as the recording began)."""
        restores: list[tuple[Callable[[Any], None], Any]] = []
        for g in self.grads:
            restores.append((functools.partial(set_bookkeeping, g), bookkeeping(g)))
        changed = [(m, m.training) for m, _, training, _ in start.modules if m.training is not training]
        if changed:  # the step switched modes (model.eval() inside it): a replay does too
            restores.append((_restore_modes, changed))
        return restores


# Optimizer methods whose results hold none of its Python numbers (its update is a host call).
_OPTIMIZER_PLAIN_CALLS = frozenset({"update", "state_arrays", "state_backend"})

_ABSENT = object()


def _optimizer_state(opt: Any) -> tuple[dict[str, Any], tuple[int, ...], tuple[tuple[tuple[str, Any], ...], ...]]:
    """An optimizer's Python state as it is now: its attributes (``lr``, ``step_count``, its
    settings), each parameter's own step count and each group's settings."""
    return (
        dict(opt.__dict__),
        tuple(slot.steps for slot in opt._slots),
        tuple(tuple(cast("dict[str, Any]", vars(hp)).items()) for hp in opt._group_hp),
    )


def _optimizer_read(opt: Any, names: frozenset[str]) -> tuple[tuple[str, ...], bool]:
    """What the step's own code may read of ``opt`` (``names``: the names it uses): the
    attributes it names (``opt.lr``, ``opt.step_count``), and whether it calls a method that
    reads them (``opt.current_lr()``, ``opt.slot_steps()``): then all of its state."""
    kind: type = opt.__class__
    whole = any(
        not name.startswith("__") and callable(getattr(kind, name, None)) for name in names - _OPTIMIZER_PLAIN_CALLS
    )
    attributes = cast("dict[str, Any]", opt.__dict__)
    return tuple(k for k in attributes if whole or k in names), whole


def _held_by(opt: Any, keys: tuple[str, ...] | None = None) -> list[Any]:
    """What ``opt``'s attributes (``keys``: those alone) hold that is more than a value: a
    schedule object as ``opt.lr``, a list, a NumPy array, a group's settings, whose insides
    the step's code may read (not its slots, the library's own, held by identity)."""
    attributes = cast("dict[str, Any]", opt.__dict__)
    return [
        v for k, v in attributes.items() if (keys is None or k in keys) and k != "_slots" and not isinstance(v, ATOMS)
    ]


def _optimizer_attributes(opt: Any, keys: tuple[str, ...]) -> tuple[Any, ...]:
    """``_optimizer_view`` of the attributes ``keys`` alone, read without copying all of the
    optimizer's state (before each replay)."""
    attributes = cast("dict[str, Any]", opt.__dict__)
    return tuple(attributes.get(k, _ABSENT) for k in keys)


def _optimizer_view(state: Any, keys: tuple[str, ...], whole: bool) -> tuple[Any, ...]:
    attributes, steps, groups = state
    view = tuple(attributes.get(k, _ABSENT) for k in keys)
    return (*view, steps, groups) if whole else view


def _restore_modes(flags: list[tuple[Any, bool]]) -> None:
    for module, training in flags:
        module.training = training


# -- the compiled step -------------------------------------------------------------------------------
class Recording:
    """One cached recording of a compiled step (``compiled.recordings``): the signature it
    replays for, how many array operations and host calls it runs, the bytes of its reused
    buffers, and its fused chains: ``fused_operations`` element-wise operations replayed in
    ``fused_loops`` compiled loops (``loop_sources``: the distinct loops' source, each
    compiled once; none without numba). ``narrowed_operations``: how many operations run on
    only the rows the results read (a forward pass whose result is its last position);
    ``folded_operations``: how many compute from no input (a causal mask) and were computed
    once, when the recording was built; ``scattered_operations``: how many sums of arrays zero
    but for one slice each (the gradient of an input read through slices) are written slice
    by slice into one array instead; ``transposed_once``: how many products read a matrix
    that the replay transposes into contiguous memory once (a recurrent weight's ``W.T``)."""

    __slots__ = (
        "signature",
        "operations",
        "host_calls",
        "buffer_bytes",
        "replays",
        "fused_operations",
        "fused_loops",
        "loop_sources",
        "narrowed_operations",
        "folded_operations",
        "scattered_operations",
        "transposed_once",
        "_plan",
    )

    def __init__(self, plan: _Plan) -> None:
        self._plan = plan
        self.signature: Any = plan.signature
        self.operations = plan.n_ops
        self.host_calls = plan.n_host
        self.buffer_bytes = plan.buffer_bytes
        self.fused_operations = plan.fused_operations
        self.fused_loops = plan.fused_loops
        self.loop_sources = plan.loop_sources
        self.narrowed_operations = plan.narrowed_operations
        self.folded_operations = plan.folded_operations
        self.scattered_operations = plan.scattered_operations
        self.transposed_once = plan.transposed_once
        self.replays = 0

    @property
    def source(self) -> str:
        """The generated replay function's source (one line per array operation)."""
        return self._plan.source

    def __repr__(self) -> str:
        return (
            f"Recording({self.operations} array operations, {self.host_calls} host calls, "
            f"{self.fused_operations} fused into {self.fused_loops} loops, "
            f"{self.narrowed_operations} narrowed to the rows read, {self.folded_operations} folded, "
            f"{self.scattered_operations} sums written slice by slice, "
            f"{self.transposed_once} products reading a matrix transposed once, "
            f"{self.buffer_bytes} buffer bytes, replayed {self.replays} times)"
        )


class CompiledStep(Generic[P, R]):
    """A step recorded once per argument signature and replayed after (see :func:`compile`)."""

    def __init__(self, step: Callable[P, R], max_recordings: int = 8) -> None:
        if max_recordings < 1:
            raise CompileError(f"max_recordings expects at least 1, found {max_recordings}")
        self._step = step
        self.max_recordings = max_recordings
        self._cache: dict[Any, list[Recording]] = {}  # signature -> recordings (by guard answers)
        self._order: dict[Recording, int] = {}  # recording -> when it was last recorded or replayed
        self._tick = 0
        self._relayouts = 0  # calls in a row that found their modules changed since recorded
        # calls in a row that recorded again because their gradients' bookkeeping differed from
        # every fitting recording's (gradients accumulating across calls, never zeroed)
        self._rebooked = 0
        self._mutations = 0  # recordings in a row whose step changed its own modules
        self._new_in_a_row = 0  # calls in a row that met a signature no recording had
        # once that passes max_recordings (shapes that change at every call: a growing
        # sequence), for good: the signatures met once since, each with the tick it was met
        # at, which record only when met again
        self._met_once: dict[Any, int] = {}
        self._settling = False
        self._said_unsettled = False
        self._last_new: Any = None  # the last new signature met
        self.eager_reason: str | None = None
        """Why the step runs eagerly from now on (None while it is replayed)."""
        try:
            functools.update_wrapper(self, step)
        except Exception:  # noqa: BLE001 -- a callable object whose __getattr__ raises KeyError, say
            self.__wrapped__ = step

    @property
    def recordings(self) -> list[Recording]:
        """The cached recordings, the least recently used first (at most ``max_recordings``;
        beyond it a new recording drops the least recently used)."""
        return sorted(self._order, key=lambda r: self._order[r])

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        if self.eager_reason is not None or _current is not None or _hooks.anomaly is not None:
            # Eager for good; inside another compiled step's recording (recorded by it); or
            # under anomaly detection, which reads every value.
            return self._step(*args, **kwargs)
        pins: list[Any] = []
        described = tuple(_describe(a, pins) for a in args)
        described_kw = tuple((k, _describe(v, pins)) for k, v in kwargs.items())
        leaves = _tensor_leaves(args, kwargs)
        aliasing = tuple(_alias_pattern(leaves))
        free = free_values(self._step)
        state = _State(reachable(args, kwargs, free))
        objects = argument_objects(args, kwargs)  # held by identity in the signature; their insides here
        # what a recording's layout is checked against: the step itself (its globals' insides, the
        # attributes of the user's modules it names) and what it reaches
        roots = [self._step, *free, *objects, *state.modules]
        backend = active_backend()
        # inside sg.no_grad() or not: eager gives untraced results there (a backward pass raises)
        # and under which np.errstate (None: NumPy's default), which decides whether it fuses
        key = (described, described_kw, aliasing, id(backend), inside_no_grad(), floating_point_errors())
        relayout: str | None = None  # why no recording of this signature fits the modules as they are
        rebooked: Any = None  # a Gradients whose bookkeeping no fitting recording's matched
        for recording in self._cache.get(key, ()):
            plan = recording._plan
            changed = plan.layout.changed(roots)
            if changed is None:
                changed = plan.stale()
            if changed is not None:
                relayout = changed if relayout is None else relayout
                continue
            relayout = ""  # one recording fits them: a new one is for another reason
            differs = next((g for g, expected in plan.bookkeeping if bookkeeping(g) != expected), None)
            if differs is not None:
                rebooked = differs
                continue
            values = plan.inputs_of(args, kwargs)
            if plan.admits(values):
                recording.replays += 1
                self._tick += 1
                self._order[recording] = self._tick  # the least recently used goes first
                self._relayouts = 0
                self._rebooked = 0
                self._new_in_a_row = 0
                try:
                    return plan.replay(values, args, kwargs)
                finally:
                    if plan.unrebound:
                        self._fall_back(
                            "a replay raised where the step had given a tensor another array (t._data = ...) "
                            "that the replay had not computed yet, so it could not leave that tensor as the step does"
                        )
        self._rebooked = 0 if rebooked is None else self._rebooked + 1
        if self._rebooked > self.max_recordings:
            # A Gradients never zeroed holds another bookkeeping at each call (which buffers hold
            # a gradient, which update used them): each call would record again, replaying none.
            self._fall_back(
                f"at each of its last {self._rebooked} calls the gradients it reads ({rebooked!r}) were not as "
                "any recording found them (which buffers hold a gradient, whether an update used them), so each "
                "call recorded again and none was replayed: likely gradients accumulating across calls, with "
                "grads.zero() called neither in the step nor between calls"
            )
            return self._step(*args, **kwargs)
        if relayout:
            # Modules that change between every call (a counter kept on a module, a tensor
            # attribute rebuilt per call) would record at every call: run eagerly instead.
            self._relayouts += 1
            if self._relayouts > self.max_recordings:
                self._fall_back(
                    f"what it reads changes from call to call ({relayout} "
                    f"{self._relayouts} times running), so no recording could be replayed"
                )
                return self._step(*args, **kwargs)
        elif relayout is None and self._unsettled(key):
            return self._step(*args, **kwargs)
        return self._record(key, args, kwargs, leaves, state, roots, objects, backend, pins)

    def _unsettled(self, key: Any) -> bool:
        """Whether a call with a new signature ``key`` runs eagerly without recording: once
        more than ``_SETTLE_AFTER`` calls in a row met new signatures (argument shapes that
        may change at every call, such as a sequence that grows by a token per call), recording
        each would cost more than running it (a recording costs some ten eager calls), and
        replay nothing. From then on a signature is
        recorded only when it is met a second time (the shape a growing sequence settles at),
        and, where the cache is full, only if its least recently used recording has not been
        used since that signature was last met: a generation loop run again meets its growing
        prefix's shapes again, and recording them in turn would drop the recordings in use
        (the settled shape's, replayed at every call) to record them again at the next run."""
        self._new_in_a_row += 1
        before, self._last_new = self._last_new, key
        if not self._settling:
            if self._new_in_a_row <= min(_SETTLE_AFTER, self.max_recordings):
                return False
            self._settling = True
        if self._new_in_a_row > self.max_recordings and not self._said_unsettled:  # said once the pattern is clear
            self._said_unsettled = True
            warnings.warn(
                f"sg.compile: {attribute(self._step, '__qualname__', self._step)!r} met a new argument "
                f"signature at each of its last {self.max_recordings + 1} calls ({_signature_change(before, key)}), so "
                "recordings would not be replayed: a signature runs eagerly the first time it is met and is "
                "recorded the second time (if the same signatures come back in turn, more of them than "
                f"max_recordings={self.max_recordings}, raise max_recordings)",
                CompileWarning,
                stacklevel=3,
            )
        met = self._met_once.pop(key, None)
        self._tick += 1
        if met is not None and (len(self._order) < self.max_recordings or min(self._order.values()) < met):
            return False
        self._met_once[key] = self._tick
        if len(self._met_once) > 16 * self.max_recordings:
            del self._met_once[next(iter(self._met_once))]  # the oldest
        return True

    def _fall_back(self, reason: str) -> None:
        self.eager_reason = reason
        self._cache.clear()
        self._order.clear()
        warnings.warn(
            f"sg.compile: {attribute(self._step, '__qualname__', self._step)!r} runs eagerly from now on: {reason}",
            CompileWarning,
            stacklevel=3,
        )

    def _record(
        self,
        key: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        leaves: list[tuple[tuple[Any, ...], Any]],
        state: _State,
        roots: list[Any],
        objects: list[Any],
        backend: Any,
        pins: list[Any],
    ) -> R:
        backends = {id(backend): backend}
        for _, leaf in leaves:
            if isinstance(leaf, Tensor):
                b = cast(Any, leaf)._backend
                backends[id(b)] = b
        unsupported = sorted({b.name for b in backends.values() if b.name != "numpy"})
        if unsupported:
            self._fall_back(f"it records steps on the NumPy backend only, found {', '.join(unsupported)}")
            return self._step(*args, **kwargs)
        for b in _loaded.values():
            if b.name == "numpy":
                backends[id(b)] = b
        try:
            start_layout = Layout(roots)
        except TooLarge as error:
            self._fall_back(str(error))
            return self._step(*args, **kwargs)
        state.extend(start_layout.library)  # a helper's optimizer, trainer.parts.grads
        rec = _Recorder(state.allowed())
        rec.existing = {id(o) for o in roots}
        rec.existing.update(id(m) for m, *_ in start_layout.modules)
        rec.existing.update(id(o) for o, *_ in start_layout.objects)
        rec.existing.update(id(o) for o in [*state.grads, *state.optimizers, *start_layout.generators])
        slot = Tensor.__dict__["_data"]
        for path, leaf in leaves:
            plain = leaf
            if isinstance(leaf, Tensor):
                plain = slot.__get__(leaf, Tensor)
                tensor = cast(Any, leaf)
                rec.arguments.add(id(tensor))
                rec.argument_paths.setdefault(id(tensor), path)
                rec.argument_tensors[id(tensor)] = tensor
            if id(plain) not in rec.reg_of:
                rec.add_input(plain, ("arg", path))
        containers = _argument_containers(args, kwargs)
        for path, container in containers:
            rec.argument_containers.setdefault(id(container), path)
        contents = [_contents(container) for _, container in containers]
        # the tensors it reaches that hold an argument's array (a buffer passed as the argument)
        held = {id(slot.__get__(t, Tensor)): t for t, *_ in start_layout.tensors}
        also = [(held[id(rec.plain[r])], p) for p, r in enumerate(rec.input_regs) if id(rec.plain[r]) in held]
        start = state.bookkeeping()
        optimizers = [(opt, _optimizer_state(opt)) for opt in state.optimizers]
        try:  # what their attributes hold, as the step found it (a step changing it runs eagerly)
            held_start = {id(opt): Layout(_held_by(opt)) for opt in state.optimizers}
        except TooLarge as error:
            self._fall_back(str(error))
            return self._step(*args, **kwargs)
        rec.at_check = functools.partial(_state_at_check, state.grads, [m for m, _, _, _ in start_layout.modules])
        drawn = generator_states(start_layout.generators)
        positions = [iterator_state(it) for it in start_layout.iterators]
        # NumPy array arguments are given to the step as traced views: what its Python reads of
        # one (float(a[0]), a.tolist()) is a value read, and its NumPy math on one is recorded
        # (in the caller's lists and dicts for the recording run, put back after it)
        swapped: list[tuple[Any, Any, Any, Any]] = []
        library_start = LibraryStart()  # what installed packages' code reads, as it found it
        call_args = tuple(_traced_argument(rec, a, swapped) for a in args)
        call_kwargs = {k: _traced_argument(rec, v, swapped) for k, v in kwargs.items()}
        try:
            with _Session(rec, list(backends.values())), watching(rec.value_read, library_start.before) as watch:
                traced_result = self._step(*call_args, **call_kwargs)
        finally:
            # (not named key: that is the signature the recording is kept under)
            _put_back(swapped)
            # the traced arguments held by nothing the step did not keep now (see _read_unseen)
            del call_args, call_kwargs, swapped
        result = _untraced_result(traced_result)  # the caller's; the plan reads the traced one
        caught = rec.caught()
        rec.raised.clear()  # (their tracebacks hold the step's frames)
        if caught is not None:
            # try: loss = cross_entropy(out, y) except ShapeError: loss = fallback. Recorded on one
            # path, a replay would take it whatever the values: a fallback for valid labels, or
            # raising where eager catches
            self._fall_back(
                f"the step caught {type(caught).__name__}: {caught} raised inside it{_caught_where(caught)}: "
                "whether the library's checks, an array operation or an optimizer's update raise depends on "
                "values, and a replay would take the path recorded whatever they are"
            )
            return result
        if not rec.in_context():  # np.seterr or warnings.simplefilter inside the step, left set
            rec.context_changed("the step's end")
        if rec.in_except is not None:
            # try: loss = cross_entropy(out, y) except ShapeError: ..., recorded with valid labels: a
            # replay with an invalid one would raise out of the step where eager catches
            self._fall_back(
                f"its code runs array operations, the library's checks or an optimizer's update inside a try "
                f"with an except{rec.in_except}: a replay runs no Python, so where one of them raises (on other "
                "values than recorded) it would raise out of the step where the step catches the error"
            )
            return result
        if contents != [_contents(container) for _, container in containers]:
            # batch["logits"] = model(batch["x"]), inputs.append(h): a replay runs none of the
            # step's Python, so it would leave the next call's list or dict as it came
            self._fall_back(
                "it changes a list or dict it takes as an argument (batch['out'] = ..., xs.append(...)), "
                "which a replay would not do"
            )
            return result
        if rec.value_reason is None and (
            watch.library_drew()
            or library_start.drew()
            or not all(same_value(a, b) for a, b in zip(drawn, generator_states(start_layout.generators), strict=True))
        ):
            rec.value_read("a random number drawn from a NumPy generator in Python (rng.uniform(), np.random.rand())")
        if rec.value_reason is None and positions != [iterator_state(it) for it in start_layout.iterators]:
            rec.value_read("the next item of an iterator or a generator it reaches (next(batches))")
        if rec.value_reason is None and rec.handed is not None:
            rec.value_reason = _built_from_handed(rec)
        if rec.value_reason is None and rec.given:
            rec.value_reason = _read_unseen(rec)
        if rec.value_reason is not None:
            self._fall_back(
                f"its Python code read {rec.value_reason} while it was recorded, so what it does may depend on values"
            )
            return result
        if rec.escape_reason is not None:
            self._fall_back(f"the recording could not follow it: {rec.escape_reason}")
            return result
        if library_start.error is not None:
            self._fall_back(library_start.error)
            return result
        roots = [self._step, *free_values(self._step), *objects, *state.modules]  # as the step left them
        mutated = start_layout.changed(roots, modes=False) or library_start.changed()
        if mutated is not None and start_layout.digests() != start_layout.large_digests:
            mutated = "a NumPy array of more than 4,096 elements it reads, which it writes in place"
        # What the step's own code read of its optimizers (opt.lr, opt.step_count, opt.current_lr()):
        # baked into the recording as any number its Python reads
        names = watch.user_names()
        if names is None:  # a profiler holds the hook: the step's own names
            code = attribute(attribute(self._step, "__func__", self._step), "__code__")
            names = frozenset(_code_names(code)) if isinstance(code, types.CodeType) else frozenset[str]()
        optimizer_reads: list[tuple[Any, tuple[str, ...], bool, tuple[Any, ...]]] = []
        for opt, before in optimizers:
            keys, whole = _optimizer_read(opt, names | rec.settings_read.get(id(opt), set()))
            if not keys:
                continue
            now = _optimizer_view(_optimizer_state(opt), keys, whole)
            if mutated is None and not same_value(_optimizer_view(before, keys, whole), now):
                read = "its state (opt.current_lr(), say)" if whole else ", ".join(f"opt.{k}" for k in keys)
                mutated = f"what it reads of its {type(opt).__name__}: {read}"
            if mutated is None and _held_by(opt, keys):
                inside = held_start[id(opt)].changed(held_start[id(opt)].roots, modes=False)
                if inside is not None:
                    mutated = f"what an attribute of its {type(opt).__name__} holds ({inside})"
            optimizer_reads.append((opt, keys, whole, now))
        if mutated is not None:
            # The step itself changed what it reads of its modules (a counter, a lazily built
            # attribute): a replay would not. Once may be a first call's set-up; twice running
            # is every call's. No plan is built for a recording that is not kept.
            self._mutations += 1
            if self._mutations > 1:
                self._fall_back(f"it changes what it reads at every call ({mutated}), which a replay would not do")
            return result
        self._mutations = 0
        try:
            # As the step left them: what the next call must find. Only the attributes the
            # code that ran names (a trainer's history list the step never reads may change).
            end_layout = Layout(roots, watch.read_names(), watch.foreign_names())
            end_layout.add_third_party_globals(watch)
        except TooLarge as error:
            self._fall_back(str(error))
            return result
        # Except the modes: the next call must find each module in the mode the recording
        # started from, and a replay sets the modes the step switched (end_state). Checked as
        # the step left them, a step that switches modes itself (model.train() at the start
        # of a training step, model.eval() at the start of an evaluation) recorded again
        # whenever the other step had run in between, and ran eagerly after a few epochs.
        entry = {id(m): training for m, _, training, _ in start_layout.modules}
        end_layout.modules = [(m, n, entry.get(id(m), t), own) for m, n, t, own in end_layout.modules]
        reached = {id(t[0]) for t in start_layout.tensors} | {id(t[0]) for t in end_layout.tensors}
        if any(kind == "holder" and id(tensor) not in reached for kind, tensor in rec.inputs):
            self._fall_back(
                "it read a tensor it neither takes as an argument nor reaches through what it names (one from an "
                "iterator, a generator or a call's result, say), so a replay could not know to read another: pass "
                "the data as arguments"
            )
            return result
        try:
            plan = _Plan(rec, traced_result, state.end_state(start_layout), key, pins, backend)
        except CompileError as error:
            self._fall_back(f"the recording could not follow it: {error}")
            return result
        plan.bookkeeping = [(g, expected) for g, expected in start if id(g) in rec.read_first]
        if rec.zeroed_ids:
            plan.tape_groups, plan.lost = _tape_state(state.grads, rec.zeroed_ids)
        plan.layout = end_layout
        plan.optimizer_reads = optimizer_reads
        held = [v for opt, keys, _, _ in optimizer_reads for v in _held_by(opt, keys)]
        if held:
            try:
                plan.optimizer_layout = Layout(held, watch.read_names(), watch.foreign_names())
            except TooLarge as error:
                self._fall_back(str(error))
                return result
        plan.also = also
        if len(self.recordings) >= self.max_recordings:
            oldest = self.recordings[0]
            for k, kept in list(self._cache.items()):
                self._cache[k] = [r for r in kept if r is not oldest]
                if not self._cache[k]:
                    del self._cache[k]
            del self._order[oldest]
        recording = Recording(plan)
        self._cache.setdefault(key, []).append(recording)
        self._tick += 1
        self._order[recording] = self._tick
        return result


# the recording run's frame: where _inside_except stops looking outwards
_RECORD_CODE: types.CodeType = cast(Any, CompiledStep)._record.__code__


def _tape_state(grads: list[Any], zeroed: set[int]) -> tuple[list[list[Any]], list[tuple[Any, bool]]]:
    """The tapes of the ``Gradients`` a step zeroed as it leaves them: groups of two or more
    ``Gradients`` (of those it reaches) recording on one tape, each with one it zeroed; and
    each of their parameters' leaves with its mark of a gradient that went nowhere."""
    groups: dict[int, list[Any]] = {}
    for g in grads:
        groups.setdefault(id(tape_of(g)), []).append(g)
    merged = [group for group in groups.values() if len(group) > 1 and any(id(g) in zeroed for g in group)]
    lost = [(leaf, leaf.lost) for g in grads if id(g) in zeroed for leaf in leaves_of(g)]
    return merged, lost


def _traced_argument(rec: _Recorder, value: Any, swapped: list[tuple[Any, Any, Any, Any]]) -> Any:
    """An argument as the recorded step is given it: each NumPy array in it as its register's
    traced view, at the top, in tuples (rebuilt) and in the caller's lists and dicts (swapped
    in place: ``swapped`` notes ``(list or dict, key, array, view)`` to put back)."""
    if _is_ndarray(value) and not isinstance(value, _Traced):
        index = rec.reg_of.get(id(value))
        if index is None:
            return value
        rec.hand("a NumPy array as an argument")
        if value.ndim == 0:  # np.float32(a) reads it unseen (see _read_unseen)
            rec.give(index, 0, " (a 0-d NumPy array argument)")
        return rec.traced(index)
    kind: type = value.__class__
    if kind is tuple:  # not a named tuple, whose class would have to be rebuilt
        items = cast("tuple[Any, ...]", value)
        traced: Any = tuple(_traced_argument(rec, v, swapped) for v in items)
        return value if all(a is b for a, b in zip(traced, items, strict=True)) else traced
    if kind is list or kind is dict:
        holder = cast("dict[Any, Any]", value)
        keys = list(holder) if kind is dict else range(len(holder))
        for key in keys:
            item = holder[key]
            new = _traced_argument(rec, item, swapped)
            if new is not item:
                holder[key] = new
                swapped.append((holder, key, item, new))
    return value


def _put_back(swapped: list[tuple[Any, Any, Any, Any]]) -> None:
    """The caller's lists and dicts as they came, where the step did not replace the traced
    view (see :func:`_traced_argument`)."""
    for holder, place, original, traced in reversed(swapped):
        if holder[place] is traced:
            holder[place] = original


def _argument_containers(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[tuple[Any, ...], Any]]:
    """``(path, container)`` for every tuple, list and dict among the arguments, at any depth
    (paths as :func:`_tensor_leaves` gives them)."""
    found: list[tuple[tuple[Any, ...], Any]] = []

    def visit(path: tuple[Any, ...], value: Any) -> None:
        if isinstance(value, (tuple, list, dict)):
            found.append((path, cast(Any, value)))

    _walk_arguments(args, kwargs, visit)
    return found


def _contents(container: Any) -> list[tuple[Any, int]]:
    """What a list or dict holds, by identity (a tuple's cannot change)."""
    if isinstance(container, dict):
        return [(k, id(v)) for k, v in cast("dict[Any, Any]", container).items()]
    if isinstance(container, list):
        return [(i, id(v)) for i, v in enumerate(cast("list[Any]", container))]
    return []


def _gradient_may_be_read(tensor: Any) -> bool:
    """Whether ``tensor``, which the step gives back, is a traced input that receives a gradient
    (``x.trace(grads, keep_grad=True)``, or into ``sg.Gradients()``) on a tape that has not
    ended: eagerly the caller reads ``grads[x]`` after the step; a replay gives back the values
    alone, an untraced tensor that ``grads`` knows nothing of."""
    node = tensor._node
    if node is None or node.tape is None or node.rule is not None or not node.wants:
        return False
    return node.tape.root().ended is None


def _backward_may_follow(tensor: Any) -> bool:
    """Whether eager execution would let the caller start a backward pass from ``tensor``, which
    the step made and gives back: traced on a tape that has not ended, not already the start of
    a pass (unless that pass said ``retain``), into ``Gradients`` no optimizer update has used.
    A replay gives back the tensor's values alone, without the graph behind them."""
    node = tensor._node
    if node is None or node.tape is None:
        return False
    tape = node.tape.root()
    if tape.ended is not None or tape.spent.get(node.seq) is False:
        return False
    for sink in tape.sinks:
        try:
            sink._check_not_consumed()
        except TapeError:
            return False
    return True


def _untraced_result(value: Any) -> Any:
    """What the recording run returns, its traced arrays (an array argument given back) as
    the plain arrays behind them, inside tuples, lists and dicts too."""
    if isinstance(value, _Traced):
        return _plain_of(value)
    kind: type = value.__class__  # exactly these: a named tuple or a dict subclass is given back as it is
    if kind is tuple or kind is list:
        old: list[Any] = list(cast("list[Any]", value))
        items = [_untraced_result(v) for v in old]
        if all(a is b for a, b in zip(items, old, strict=True)):
            return value  # nothing traced: the step's own object
        return tuple(items) if kind is tuple else items
    if kind is dict:
        entries = cast("dict[Any, Any]", value)
        plain = {k: _untraced_result(v) for k, v in entries.items()}
        return value if all(plain[k] is v for k, v in entries.items()) else plain
    return value


def _alias_pattern(leaves: list[tuple[tuple[Any, ...], Any]]) -> list[int]:
    """For each array argument, the index of the first one sharing its array (itself if none)."""
    first: dict[int, int] = {}
    pattern: list[int] = []
    for i, (_, leaf) in enumerate(leaves):
        plain = cast(Any, leaf)._data if isinstance(leaf, Tensor) else leaf
        pattern.append(first.setdefault(id(plain), i))
    return pattern


def compile(step: Callable[P, R], *, max_recordings: int = 8) -> CompiledStep[P, R]:  # noqa: A001 -- sg.compile
    """``step`` recorded once per argument signature, then replayed without Python per op.

    The first call for a signature (each tensor argument's shape, dtype and backend; numbers
    and strings by value; other objects by identity; the bookkeeping of the ``Gradients``; the
    modules the step reaches as they are laid out: their sub-modules, parameters and numbers by
    identity and their train/eval mode) runs ``step`` eagerly and records its
    array operations: forward, backward, random draws, batch-norm statistics, and the
    optimizer's update as one host call (the learning rate and its schedule, bias correction
    and clipping are read at every replay). Later calls replay the recording: one generated
    function, buffers reused, no tape, no checks. Every error a mistake raises is raised by
    the recording run, which is eager. With numba installed (the ``fast`` extra), chains of
    element-wise arithmetic, comparisons, ``where`` and ``maximum``/``minimum`` (a bias or a
    scalar broadcast) and their gradients replay as single compiled loops, with eager's
    results bit for bit; each distinct loop compiles once, in the recording call, and is
    kept on disk for later processes (``SHAPEGRAD_CACHE_DIR``, default ``~/.cache/shapegrad``;
    ``Recording.fused_operations``, ``fused_loops``, ``loop_sources``). A forward pass
    whose result reads only some rows (``model(ids)[:, -1]``) computes only those rows
    where its operations make rows from rows (``Recording.narrowed_operations``; see
    ``shapegrad._compile_narrow``); results then agree with eager's to float rounding.

    More than two calls in a row that each meet a new signature (a sequence that grows by a
    token per call) make a signature run eagerly the first time it is met and record the
    second time from then on (one :class:`CompileWarning` once more than ``max_recordings``
    came in a row); a full cache then drops no recording used since that signature was last
    met (a generation loop run again replays its settled length, recording nothing).

    A replay returns what the step returned, its tensors untraced: the same objects where the
    step gives back one twice, an argument or a parameter, and a view of an argument counting
    writes with it, as in eager (a step that changes a list or dict it takes as an argument runs
    eagerly, as does one giving back a traced tensor its caller could still run backward from,
    or a traced input whose gradient it could still read).
    Before each replay the
    Python state the step reaches (its globals, closure, defaults and those of the functions
    and classes it names, its object arguments, and inside them modules, plain objects,
    lists, dicts and sets) must be as recorded, else it records again (see
    ``shapegrad._compile_layout.Layout``). A step whose Python code reads a value
    (``.item()``, ``float(t)``, ``bool(t)``, ``if loss > x``, ``.tolist()``, ``.numpy()``),
    takes one from hidden state (``random``, a NumPy generator, a clock, ``next(it)``) or
    does array math the recording cannot follow runs eagerly from then on, with one
    :class:`CompileWarning` saying why (``compiled.eager_reason``). Tensors the step reads
    without taking them as arguments are read from the same tensor objects at each replay. ``sg.distributed``'s
    ``comm.allreduce_mean(grads)`` is recorded as a host call and runs at its place in every
    replay; its other collectives (``Comm.overlap``, ``barrier``, the broadcasts, the sums
    and so ``SyncBatchNorm``) raise :class:`CompileError` inside a compiled step. Replays are
    for the NumPy backend; on others the step runs eagerly (with the warning). Not
    thread-safe while recording. The recordings hold the objects they replay with (the
    optimizer, the modules, the ``Gradients``, object arguments) while the compiled step lives:
    ``model.to(...)`` refuses after ``del opt`` until the compiled step that used it is dropped.

    Args:
        step: a function of tensors (a training step or a forward pass).
        max_recordings: how many signatures are kept; the oldest is dropped beyond it.

    Examples:
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> model = sg.nn.Linear[L[3], L[1]](generator=sg.Generator(0))
        >>> opt, grads = sg.optim.Adam(model, lr=0.1), model.alloc_grads()
        >>> def step(x: sg.Tensor[sg.NoTape, L[4], L[3]]) -> sg.Tensor[sg.OwnedTape[sg.nn.Linear[L[3], L[1]]]]:
        ...     grads.zero()
        ...     loss = (model(x.trace(grads)) ** 2).mean()
        ...     loss.backward()
        ...     opt.update(model, grads)
        ...     return loss
        >>> train = sg.compile(step)
        >>> losses = [train(sg.ones(4, 3)).item() for _ in range(3)]
        >>> train.recordings
        [Recording(... array operations, 1 host calls, ... buffer bytes, replayed 2 times)]
    """
    return CompiledStep(step, max_recordings)
