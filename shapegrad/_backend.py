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
from collections.abc import Generator
from importlib import metadata
from typing import Any, Protocol, cast, runtime_checkable

from ._errors import BackendError, DTypeError, ShapeError

__all__ = [
    "Backend",
    "active_backend",
    "as_backend_array",
    "available_backends",
    "backend_info",
    "get_backend",
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


def fused_kernel(backend: Backend, name: str, dtype: Any) -> Any:
    """The backend's fused element-wise kernel ``name`` for arrays of ``dtype``, or ``None``.

    A backend may offer ``fused_kernel(name, dtype)`` returning a callable that does in one
    launch what an op's shared math does in several ``xp`` calls (CuPy does, for float32
    and float64; see ``backends/cupy_kernels.py`` for the names and signatures). It is
    optional: ops fall back to their ``xp`` math, which is what NumPy wants anyway.
    """
    lookup = getattr(backend, "fused_kernel", None)
    return None if lookup is None else lookup(name, dtype)


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
        raise BackendError(f"unknown backend {name!r}; registered backends: {known}")
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


def set_backend(backend: str | Backend) -> Backend:
    """Make ``backend`` (a registered name or a Backend) the one new tensors use.

    Example:
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

    Example:
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


def as_backend_array(backend: Backend, data: Any, dtype: str | None, *, copy: bool = True) -> Any:
    """``data`` as an array of ``backend``: Python floats become float32, ints int64,
    arrays keep their dtype unless ``dtype`` is given. Object, string, complex and ragged
    data are refused with ``DTypeError``/``ShapeError``. With ``copy`` (the default) the
    result never shares memory with ``data``; without it, an array of the backend (or, on
    NumPy, a NumPy array) is used as it is."""
    import numpy as np

    from ._tensor import AnyTensor, Tensor

    if isinstance(data, Tensor):
        source = cast(AnyTensor, data)
        data = source._data if source._backend is backend else source.numpy()
    if backend.is_array(data):
        array = data
        name = backend.dtype_name(array.dtype)
        if not name.startswith(("float", "int", "uint", "bool")):
            raise DTypeError(f"tensor() expects real numeric or boolean data, found dtype {name}")
        if copy and dtype is None:
            array = backend.xp.asarray(array, copy=True)
    else:
        try:
            host: np.ndarray[Any, Any] = np.asarray(data)
        except ValueError as exc:
            raise ShapeError(f"tensor() expects rectangular nested lists, found ragged data: {exc}") from None
        except TypeError as exc:
            # Device arrays (CuPy's) refuse to become NumPy arrays implicitly.
            kind = f"{type(data).__module__}.{type(data).__name__}"
            raise BackendError(
                f"tensor() for backend {backend.name!r} got a {kind} it cannot read ({exc}); "
                "create the tensor on the backend the array lives on (backend='cupy' for a CuPy array)"
            ) from None
        if host.dtype.kind in "OUSVcMm":
            raise DTypeError(f"tensor() expects real numeric or boolean data, found dtype {host.dtype}")
        if dtype is None and not isinstance(data, np.ndarray) and host.dtype.kind == "f":
            host = host.astype("float32")  # DEFAULT_FLOAT, as Python floats are in PyTorch
        if (copy and isinstance(data, np.ndarray)) or not host.flags.c_contiguous:
            host = np.array(host, order="C")
        array = backend.asarray(host, None)
    if dtype is not None:
        array = backend.xp.astype(array, backend.dtype(dtype))
    return array
