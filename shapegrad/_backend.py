"""The backend interface, the registry of backends and the active-backend switch.

A backend is an object with an Array-API namespace ``xp`` plus the few operations the
standard does not cover (scatter-add, random numbers, host transfer). Op math is written
once against ``xp``; backends differ only in those extras and in optional fused kernels.
Backends are found through the ``shapegrad.backends`` entry-point group, so a third-party
distribution adds one by declaring an entry point, exactly as the built-in ones do.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Callable, Generator, Sequence
from importlib import metadata
from itertools import chain
from typing import Any, Protocol, cast, runtime_checkable

from . import _hooks
from ._errors import BackendError, DTypeError, ShapeError, TapeError
from ._torch_names import backend_hint

__all__ = [
    "Backend",
    "CompiledLoops",
    "FusedKernels",
    "active_backend",
    "as_backend_array",
    "available_backends",
    "backend_info",
    "get_backend",
    "resolve_backend",
    "same_backend",
    "set_backend",
    "use_backend",
]

ENTRY_POINT_GROUP = "shapegrad.backends"


@runtime_checkable
class Backend(Protocol):
    """What shapegrad asks of a backend.

    ``xp`` is an Array-API namespace (NumPy, CuPy, array-api-strict); op math uses only
    it. The methods cover what the standard lacks.
    """

    name: str
    xp: Any

    def is_available(self) -> str | None:
        """``None`` when usable, else the reason it is not (library or device missing)."""
        ...

    def asarray(self, data: Any, dtype: str | None) -> Any:
        """Data (lists, scalars, NumPy arrays, this backend's arrays) as a backend array."""
        ...

    def is_array(self, obj: Any) -> bool:
        """Whether ``obj`` is an array of this backend."""
        ...

    def dtype(self, name: str) -> Any:
        """The backend's dtype for a name such as ``"float32"``."""
        ...

    def dtype_name(self, dtype: Any) -> str:
        """The canonical name of a backend dtype (``"float32"``, ``"int64"``, ``"bool"``)."""
        ...

    def to_numpy(self, array: Any) -> Any:
        """A NumPy array holding the same values (a copy for device backends)."""
        ...

    def scatter_add(self, target: Any, indices: Any, values: Any) -> None:
        """In place: ``target[indices[i]] += values[i]`` along axis 0, repeats accumulating."""
        ...

    def add_into(self, target: Any, values: Any) -> None:
        """In place: ``target += values`` (gradient accumulation into a preallocated buffer)."""
        ...

    def copy_into(self, target: Any, values: Any) -> None:
        """In place: ``target[...] = values``."""
        ...

    def random(self, seed: int | None) -> Any:
        """A seeded generator with ``normal(shape, dtype)`` and ``uniform(shape, lo, hi, dtype)``."""
        ...


@runtime_checkable
class FusedKernels(Protocol):
    """The optional capability of a backend to do an element-wise chain in one kernel.

    ``fused_kernel(name, dtype)`` returns a callable for arrays of ``dtype`` or ``None``.
    Names are an op rule's name (``"gelu_backward"``: called as ``kernel(grad, *saved)``,
    returning the input's gradient), an op's forward (``"gelu"``), or an optimizer update
    (``"adam"``, ``"sgd_momentum"``, ``"sgd_nesterov"``: in place on the parameter and its
    state). ``backends/cupy_kernels.py`` lists CuPy's; NumPy offers ``"adam"``.
    """

    def fused_kernel(self, name: str, dtype: Any) -> Callable[..., Any] | None:
        """The kernel ``name`` for arrays of ``dtype``, or ``None``."""
        ...


@runtime_checkable
class CompiledLoops(Protocol):
    """The optional capability of a backend to compile a generated loop: ``sg.compile``
    writes each chain of element-wise operations of a recording as one Python function over
    2-D arrays (``for i in range(rows): for j in range(cols): ...``, scalars only inside)
    and replays the compiled function in place of the chain (NumPy: with numba)."""

    def compile_loop(self, source: str, name: str) -> Callable[..., Any] | None:
        """The function ``name`` that ``source`` defines, compiled, or ``None``."""
        ...


# (backend, name, dtype) -> kernel or None: asked once per key (backends live as long as
# the process, so plain dicts keep them).
_kernels: dict[tuple[Any, Any, Any], Any] = {}


def fused_kernel(backend: Backend, name: str, dtype: Any) -> Any:
    """The backend's fused kernel ``name`` for arrays of ``dtype``, or ``None`` (always for
    a backend without the :class:`FusedKernels` capability); looked up once per name and
    dtype. Ops fall back to their ``xp`` math, which stays the reference."""
    key = (backend, name, dtype)
    try:
        kernel = _kernels[key]
    except KeyError:
        kernel = _kernels[key] = backend.fused_kernel(name, dtype) if isinstance(backend, FusedKernels) else None
    recorder = _hooks.recorder
    if recorder is not None and kernel is not None:
        return recorder.kernel(kernel, name)  # sg.compile records each call of it
    return kernel


# backend -> rule -> dtype -> the rule to record: nested, because an op pays this lookup on
# the hot path (~0.1 µs; a tuple key costs twice that, mostly hashing it).
_bound: dict[Any, dict[Any, dict[Any, Callable[..., Any]]]] = {}
bound_rules = _bound
"""bind_rule's cache, backend -> rule -> dtype -> bound rule: ``record_traced`` and the ops'
common paths (``ops._toolkit.binary`` and ``unary``) read it inline (a miss, or sg.compile
recording, goes through :func:`bind_rule`)."""


def bind_rule(backend: Backend, rule: Callable[..., Any], dtype: Any) -> Callable[..., Any]:
    """``rule``, or the backend's fused kernel of the same name in its place.

    This is the one place a fused backward kernel is chosen, when an op is recorded: the
    kernel takes the rule's gradient and saved values (numbers converted to ``dtype``) and
    returns the input's gradient (or a tuple, one per input, as the rule does), so the rule
    itself has no kernel branch.
    """
    recording = _hooks.recorder is not None  # sg.compile: the kernel's calls are recorded, not cached
    if not recording:
        try:
            return _bound[backend][rule][dtype]
        except KeyError:
            pass
    kernel = fused_kernel(backend, rule.__name__, dtype)
    bound = rule
    if kernel is not None:
        scalar = getattr(dtype, "type", float)

        def fused_rule(xp: Any, grad: Any, *saved: Any) -> tuple[Any, ...]:
            result: Any = kernel(grad, *[scalar(v) if isinstance(v, (int, float)) else v for v in saved])
            return (
                cast(tuple[Any, ...], result) if isinstance(result, tuple) else (result,)
            )  # one input's, or each input's

        fused_rule.__name__ = rule.__name__
        bound = fused_rule
    if not recording:
        _bound.setdefault(backend, {}).setdefault(rule, {})[dtype] = bound
    return bound


_loaded: dict[str, Backend] = {}
_active: contextvars.ContextVar[Backend | None] = contextvars.ContextVar("shapegrad_backend", default=None)


def _entry_points() -> dict[str, metadata.EntryPoint]:
    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def available_backends() -> list[str]:
    """Names of every registered backend, usable or not, sorted."""
    return sorted(_entry_points())


def get_backend(name: str) -> Backend:
    """The backend registered as ``name``, loaded once and checked to be usable.

    Raises:
        BackendError: the name is unknown (the message lists the registered ones), or the
            backend cannot run here (its library is missing, or no device answers).
    """
    if name in _loaded:
        return _loaded[name]
    eps = _entry_points()
    if name not in eps:
        known = ", ".join(sorted(eps)) or "none (is shapegrad installed? pip install -e .)"
        raise BackendError(f"unknown backend {name!r}; registered backends: {known}{backend_hint(name)}")
    try:
        factory = eps[name].load()
        backend = factory()
    except ImportError as exc:
        raise BackendError(f"backend {name!r} could not be loaded: {exc}") from exc
    if not isinstance(backend, Backend):
        raise BackendError(
            f"entry point {name!r} gave {type(backend).__name__}, which lacks the Backend "
            "interface (name, xp, asarray, to_numpy, scatter_add, ...)"
        )
    reason = backend.is_available()
    if reason is not None:
        raise BackendError(f"backend {name!r} is not usable here: {reason}")
    _loaded[name] = backend
    return backend


def _default_backend() -> Backend:
    name = os.environ.get("SHAPEGRAD_BACKEND", "numpy").strip() or "numpy"
    return get_backend(name)


def active_backend() -> Backend:
    """The backend new tensors are created on."""
    backend = _active.get()
    if backend is None:
        backend = _default_backend()
        _active.set(backend)
    return backend


def _resolve(backend: str | Backend) -> Backend:
    return get_backend(backend) if isinstance(backend, str) else backend


def resolve_backend(backend: str | Backend, call: str) -> Backend:
    """``backend`` as a Backend, for ``call`` (``x.to``, ``Module.to``): a name, a Backend, or
    a ``BackendError`` for anything else (PyTorch's ``torch.float32``, ``torch.device("cuda")``
    named with what to write instead)."""
    if isinstance(backend, str):
        return get_backend(backend)
    found: object = backend
    if not hasattr(found, "xp"):  # no Backend (the protocol's isinstance reads every member)
        names = ", ".join(repr(n) for n in available_backends())
        raise BackendError(
            f"{call} expects a backend name ({names}) or a Backend, found {found!r}{backend_hint(found)}"
        )
    return backend


def set_backend(backend: str | Backend) -> Backend:
    """Make ``backend`` (a registered name or a Backend) the one new tensors use.

    It is set for the calling thread (a context variable): a thread started afterwards
    begins on ``SHAPEGRAD_BACKEND``'s backend unless it is started in a copy of this
    context (``contextvars.copy_context().run``) or calls ``set_backend`` itself.

    Args:
        backend: A registered backend's name (``"numpy"``, ``"strict"``, ``"cupy"``) or a
            ``Backend`` instance.

    Examples:
        >>> import shapegrad as sg
        >>> sg.set_backend("numpy").name
        'numpy'
    """
    resolved = _resolve(backend)
    _active.set(resolved)
    return resolved


@contextlib.contextmanager
def use_backend(backend: str | Backend) -> Generator[Backend, None, None]:
    """Within the block, new tensors are created on ``backend``.

    Examples:
        >>> import shapegrad as sg
        >>> with sg.use_backend("numpy"):
        ...     sg.zeros(2).backend
        'numpy'
    """
    token = _active.set(_resolve(backend))
    try:
        yield _active.get() or active_backend()
    finally:
        _active.reset(token)


def backend_info() -> dict[str, Any]:
    """The active backend's name and, for every registered one, whether it is usable here."""
    status: dict[str, str] = {}
    for name in available_backends():
        try:
            get_backend(name)
            status[name] = "available"
        except BackendError as exc:
            status[name] = f"unavailable: {exc}"
    return {"active": active_backend().name, "backends": status}


def _mixed_backends(a: Any, b: Any) -> BackendError:
    if a.backend == b.backend:
        return BackendError(
            f"an op got tensors of two backend objects both named {a.backend!r} "
            f"({a._backend!r} and {b._backend!r}); expected one. Create both tensors "
            "under the same backend object."
        )
    return BackendError(
        f"an op got tensors of two backends: {a.backend!r} and {b.backend!r}; "
        f"expected one. Move one with .to({a.backend!r})."
    )


def same_backend(a: Any, b: Any) -> Backend:
    """The backend both operands (tensors) live on, or ``BackendError`` naming both."""
    backend = a._backend
    if b._backend is not backend:
        raise _mixed_backends(a, b)
    return backend


def _is_foreign_array(data: Any) -> bool:
    """Whether ``data`` is another library's array (PyTorch's, JAX's, ...): something with
    ``__dlpack__`` or ``__array__`` that is neither NumPy's nor a Python sequence."""
    import numpy as np

    return not isinstance(data, (np.ndarray, np.generic, list, tuple)) and (
        hasattr(data, "__dlpack__") or hasattr(data, "__array__")
    )


def _unreadable(backend: Backend, data: Any, reason: Exception) -> BackendError:
    kind = f"{type(data).__module__}.{type(data).__name__}"
    details = ", ".join(f"{key} {getattr(data, key)}" for key in ("dtype", "device") if hasattr(data, key))
    details += ": " if details else ""
    return BackendError(
        f"tensor() for backend {backend.name!r} got a {kind} it cannot read ({details}{reason}); it expects "
        "an array on the CPU or the backend's device, of a real numeric or boolean dtype, not requiring "
        "grad: detach it, or create the tensor on the backend the array lives on (backend='cupy' for a CuPy array)"
    )


def _foreign_array(backend: Backend, data: Any) -> Any:
    """A foreign array's values, by DLPack where it has it, as a NumPy array (or, for one
    on a device, an array of ``backend`` that reads that device); its dtype kept."""
    import numpy as np

    try:
        return np.from_dlpack(data) if hasattr(data, "__dlpack__") else np.asarray(data)
    except (BufferError, RuntimeError, TypeError, ValueError) as exc:
        reading = exc  # another device (a GPU) or a dtype NumPy lacks (bfloat16)
    importer = getattr(backend.xp, "from_dlpack", None)
    if importer is not None and hasattr(data, "__dlpack__") and backend.name != "numpy":
        try:
            return importer(data)
        except (BufferError, RuntimeError, TypeError, ValueError):
            pass
    raise _unreadable(backend, data, reading) from None


def _widest_float(data: Any) -> Any:
    """The float dtype ``torch.tensor`` gives nested ``data`` that NumPy reads as floats: the
    widest among its NumPy float scalars and arrays, and float32 (DEFAULT_FLOAT) for a Python
    float; integers and bools among floats do not widen it (``[np.float16(1), 2]`` is float16).
    Read one depth at a time, the types of a whole depth in one pass."""
    import numpy as np

    found: list[Any] = []
    level: list[Any] = [data]
    while level:
        kinds = set(map(type, level))
        for kind in kinds:
            if kind is float:
                found.append(np.dtype("float32"))
            elif issubclass(kind, np.floating):
                found.append(np.dtype(cast(Any, kind)))
        if np.ndarray in kinds:
            arrays = [cast("np.ndarray[Any, Any]", a) for a in level if type(a) is np.ndarray]
            found.extend(a.dtype for a in arrays if a.dtype.kind == "f")
        if kinds <= {list, tuple}:
            level = list(chain.from_iterable(level))
        elif list in kinds or tuple in kinds:
            nested: list[Sequence[Any]] = [e for e in level if type(e) is list or type(e) is tuple]
            level = list(chain.from_iterable(nested))
        else:
            break
    return max(found, key=lambda d: d.itemsize) if found else np.dtype("float32")


def as_backend_array(backend: Backend, data: Any, dtype: str | None, *, copy: bool = True) -> Any:
    """``data`` as an array of ``backend``: Python floats become float32, ints int64,
    NumPy scalars and arrays (NumPy's, and other libraries' through DLPack or ``__array__``) keep their dtype
    unless ``dtype`` is given. Object, string, complex and ragged data are refused with
    ``DTypeError``/``ShapeError``. With ``copy`` (the default) the result never shares
    memory with ``data``; without it, an array of the backend (or, on NumPy, a NumPy or
    other CPU array) is used as it is."""
    import numpy as np

    from ._tensor import AnyTensor, Tensor

    if isinstance(data, Tensor):
        source = cast(AnyTensor, data)
        if source.traced:
            # A new tensor from a traced one would be untraced: the gradient would stop here,
            # with no error (np.asarray refuses the same, through __array__).
            raise TapeError(
                f"tensor()/asarray() of a traced tensor {source!r} would copy its values and drop its tape, "
                "so no gradient would reach what it was computed from; expected an untraced tensor or an "
                "array. Use the tensor itself to keep the gradient, or t.detach() for an untraced one"
            )
        data = source._data if source._backend is backend else source.numpy()
    if _is_foreign_array(data):
        data = _foreign_array(backend, data)
    if backend.is_array(data):
        array = data
        name = backend.dtype_name(array.dtype)
        if not name.startswith(("float", "int", "uint", "bool")):
            raise DTypeError(f"tensor() expects real numeric or boolean data, found dtype {name}")
        if copy and dtype is None:
            recorder = _hooks.recorder
            if type(array) is np.ndarray and recorder is not None and recorder.converts_constant(array):
                # sg.compile: a NumPy array the step built (a mask from np.arange) is a
                # constant of the recording, copied at each replay by the backend's asarray
                # as the recording shadows it; copied by xp.asarray, it was an array the
                # recording did not know, and the step ran eagerly. An array the recording
                # reads as an input (optimizer state) is copied by a recorded xp.asarray:
                # the backend's asarray would give the input itself, not a copy
                array = backend.asarray(array, None)
            else:
                array = backend.xp.asarray(array, copy=True)
    else:
        try:
            host: np.ndarray[Any, Any] = np.asarray(data)
        except ValueError as exc:
            raise ShapeError(f"tensor() expects rectangular nested lists, found ragged data: {exc}") from None
        except TypeError as exc:  # an object whose conversion refuses, as a device array's
            raise _unreadable(backend, data, exc) from None
        if host.dtype.kind in "OUSVcMm":
            raise DTypeError(f"tensor() expects real numeric or boolean data, found dtype {host.dtype}")
        if dtype is None and not isinstance(data, np.ndarray) and host.dtype.kind == "f":
            # Python floats are DEFAULT_FLOAT (float32) as in PyTorch; a NumPy float scalar
            # (or array) in the data keeps its dtype, as torch.tensor does (np.float64(1.1)
            # stays float64), the widest float present winning
            chosen: Any
            if type(data) is float:
                chosen = np.dtype("float32")
            elif isinstance(data, np.generic):
                chosen = cast(Any, data).dtype
            else:
                chosen = _widest_float(data)
            if host.dtype != chosen:
                host = host.astype(chosen)
        if (copy and isinstance(data, np.ndarray)) or not host.flags.c_contiguous:
            host = np.array(host, order="C")
        array = backend.asarray(host, None)
    if dtype is not None:
        array = backend.xp.astype(array, backend.dtype(dtype))
    return array
