"""Making tensors: from data, filled, ranges and random draws."""

# Each size overload that keeps literals comes before the one an int falls to (Open); pyright
# reports that order as overlapping overloads, and the order is the point.
# pyright: reportOverlappingOverload=false

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, cast, overload

import numpy as np

from .. import _hooks
from .._autodiff import NoTape
from .._backend import Backend, active_backend, as_backend_array, get_backend
from .._dims import Open
from .._errors import BackendError, DTypeError, HyperparameterError, ShapeError
from .._tensor import AnyTensor, Tensor, wrap
from .._typevars import Y0, Y1, Y2, Y3, Z0, Z1, Z2, Z3, B, N, S
from ._toolkit import integer, integers

__all__ = [
    "Generator",
    "arange",
    "asarray",
    "from_numpy",
    "full",
    "eye",
    "from_dlpack",
    "full_like",
    "linspace",
    "multinomial",
    "ones",
    "ones_like",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "randn_like",
    "randperm",
    "seed",
    "tensor",
    "zeros",
    "zeros_like",
]

if TYPE_CHECKING:
    from numpy import float64
    from numpy.typing import NDArray

DEFAULT_FLOAT = "float32"


def _backend(backend: str | Backend | None) -> Backend:
    if backend is None:
        return active_backend()
    return get_backend(backend) if isinstance(backend, str) else backend


def tensor(
    data: Any, dtype: str | None = None, *, backend: str | Backend | None = None
) -> Tensor[NoTape, *tuple[Open, ...]]:
    """A tensor from nested lists, a scalar, or an array: NumPy's, a backend's, or another
    library's (by ``__dlpack__`` or ``__array__``: a PyTorch tensor, say).

    Python floats become float32, Python ints int64 and bools bool; arrays and NumPy
    scalars keep their dtype unless ``dtype`` is given (``np.float64(1.1)`` stays float64,
    as in ``torch.tensor``; among nested values the widest float wins), and are copied (:func:`asarray` shares memory instead). The
    dims are open: annotate the result (or use :func:`shapegrad.cast`) to state them.

    Examples:
        >>> import shapegrad as sg
        >>> sg.tensor([[1, 2], [3, 4]], dtype="float64")
        Tensor([[1., 2.], [3., 4.]], shape=(2, 2), dtype=float64)
    """
    chosen = _backend(backend)
    return wrap(as_backend_array(chosen, data, dtype), chosen)


def asarray(
    data: Any, dtype: str | None = None, *, backend: str | Backend | None = None
) -> Tensor[NoTape, *tuple[Open, ...]]:
    """A tensor that shares memory with ``data`` where it can, unlike :func:`tensor`.

    A NumPy array on the NumPy backend (or an array of the chosen backend) is used as it is,
    without a copy: writing into it later changes the tensor, and a gradient computed from
    it. Anything else, another dtype, or another device is copied. Use it for large
    read-only data; use :func:`tensor` for values that must not change under you.

    Examples:
        >>> import numpy as np
        >>> import shapegrad as sg
        >>> buffer = np.zeros(3, dtype=np.float32)
        >>> t = sg.asarray(buffer)
        >>> buffer[0] = 5.0
        >>> t.tolist()
        [5.0, 0.0, 0.0]
    """
    chosen = _backend(backend)
    return wrap(as_backend_array(chosen, data, dtype, copy=False), chosen)


def from_numpy(array: Any, *, backend: str | Backend | None = None) -> Tensor[NoTape, *tuple[Open, ...]]:
    """A tensor sharing memory with the NumPy ``array`` (as ``torch.from_numpy``); on a
    device backend the values are copied to the device. See :func:`asarray`."""
    import numpy as np

    if not isinstance(array, np.ndarray):
        raise DTypeError(f"from_numpy expects a numpy.ndarray, found {type(array).__name__}; use sg.tensor(data)")
    return asarray(array, backend=backend)


def _shape(dims: Sequence[Any], op: str) -> tuple[int, ...]:
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(cast(Sequence[Any], dims[0]))  # zeros((2, 3)) as well as zeros(2, 3)
    # ints, sg.Dim sizes (ints) and NumPy integers; a float was truncated (zeros(2.5) gave 2)
    shape = integers(op, "size", dims)
    if any(d < 0 for d in shape):
        raise ShapeError(f"sizes must be non-negative, found {shape}")
    return shape


def _filled(dims: Sequence[Any], value: float, dtype: str | None, backend: str | Backend | None, op: str) -> Any:
    chosen = _backend(backend)
    data = chosen.xp.full(_shape(dims, op), value, dtype=chosen.dtype(dtype or DEFAULT_FLOAT))
    return wrap(data, chosen)


def zeros(*dims: Any, dtype: str | None = None, backend: str | Backend | None = None) -> Any:
    """A tensor of zeros; each size may be an int or a ``sg.Dim`` (``zeros(Batch(32), 784)``),
    given as arguments or as one tuple (``zeros((2, 3))``).

    Typed sizes, each by itself: a ``sg.Dim`` keeps its class and a literal in
    ``sg.LiteralSize`` (0-32, the powers of two, the classic widths) keeps its literal, so
    ``sg.zeros(Batch(32), 784)`` is ``Tensor[NoTape, Batch, L[784]]``; a plain ``int``
    variable (or another literal) is ``Open`` (``sg.zeros(batch, 3)``: ``Open, L[3]``), or
    the annotated dim under an annotation (``h: Tensor[NoTape, Batch, L[64]] = sg.zeros(b, 64)``).
    More than four sizes give an open rank.

    Examples:
        >>> import shapegrad as sg
        >>> sg.zeros(2, 3).tolist()
        [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    return _filled(dims, 0.0, dtype, backend, "zeros")


def ones(*dims: Any, dtype: str | None = None, backend: str | Backend | None = None) -> Any:
    """A tensor of ones (sizes as in :func:`zeros`)."""
    return _filled(dims, 1.0, dtype, backend, "ones")


def full(shape: Any, value: float, dtype: str | None = None, *, backend: str | Backend | None = None) -> Any:
    """A tensor of ``shape`` filled with ``value``; sizes may be ints or ``sg.Dim`` values,
    typed as in :func:`zeros` (``full((Batch(32), 10), 0.5)`` is ``Tensor[NoTape, Batch, L[10]]``).
    """
    return _filled(tuple(shape), value, dtype, backend, "full")


def zeros_like(x: Tensor[Any, *S]) -> Tensor[NoTape, *S]:
    """Zeros with ``x``'s shape, dtype and backend (untraced)."""
    return wrap(x._backend.xp.zeros_like(x._data), x._backend)


def ones_like(x: Tensor[Any, *S]) -> Tensor[NoTape, *S]:
    """Ones with ``x``'s shape, dtype and backend (untraced)."""
    return wrap(x._backend.xp.ones_like(x._data), x._backend)


def full_like(x: Tensor[Any, *S], value: float) -> Tensor[NoTape, *S]:
    """``value`` everywhere, with ``x``'s shape, dtype and backend (untraced)."""
    return wrap(x._backend.xp.full_like(x._data, value), x._backend)


@overload
def arange(start: Z0, /, *, dtype: str | None = None, backend: str | Backend | None = None) -> Tensor[NoTape, Z0]: ...
@overload
def arange(
    start: Literal[0], stop: Z0, /, *, dtype: str | None = None, backend: str | Backend | None = None
) -> Tensor[NoTape, Z0]: ...
@overload
def arange(
    start: float,
    stop: float | None = None,
    step: float = 1,
    *,
    dtype: str | None = None,
    backend: str | Backend | None = None,
) -> Tensor[NoTape, Open]: ...
def arange(
    start: float,
    stop: float | None = None,
    step: float = 1,
    *,
    dtype: str | None = None,
    backend: str | Backend | None = None,
) -> Any:
    """Evenly spaced values in ``[start, stop)`` (``[0, start)`` with one argument).
    Integers give int64 and a float bound float32 (as PyTorch) unless ``dtype`` says otherwise.

    ``sg.arange(Seq(16))``, ``sg.arange(0, t)`` with ``t: Seq`` and ``sg.arange(10)`` are
    typed ``Seq``, ``Seq`` and ``L[10]`` (sizes as in :func:`zeros`); other ranges are ``Open``."""
    chosen = _backend(backend)
    if stop is None:
        start, stop = 0, start
    if dtype is None and any(isinstance(bound, (float, np.floating)) for bound in (start, stop, step)):
        dtype = DEFAULT_FLOAT  # as PyTorch: a float bound gives float32 (NumPy: float64)
    data = chosen.xp.arange(start, stop, step, dtype=None if dtype is None else chosen.dtype(dtype))
    return wrap(data, chosen)


class Generator:
    """A seeded source of random tensors on one backend.

    The NumPy and strict backends draw from the same host generator (NumPy's PCG64), so a
    seed gives the same values on both; CuPy draws on the device from its own generator,
    whose values for that seed differ.

    Args:
        seed: the seed; ``None`` draws a fresh one from the operating system.
        backend: the backend whose arrays it draws (by default the active one).

    Examples:
        >>> import shapegrad as sg
        >>> g = sg.Generator(seed=0)
        >>> sg.randn(2, 2, generator=g).shape
        (2, 2)
    """

    def __init__(self, seed: int | None = None, *, backend: str | Backend | None = None) -> None:
        recorder = _hooks.recorder
        if recorder is not None:  # sg.compile: a replay would go on drawing from the recording's generator
            recorder.escape(
                "a generator made inside the step (sg.Generator(...), a layer given one): a replay would go on "
                "drawing from the one the recording made, where the step draws from a new one. Make it outside "
                "the step"
            )
        self._start(seed, backend)

    def _start(self, seed: int | None, backend: str | Backend | None) -> None:
        self.backend = _backend(backend)
        self._source = self.backend.random(seed)

    def normal(self, shape: tuple[int, ...], dtype: str | None = None) -> Any:
        """A backend array of standard normal draws (``dtype``: a float dtype, float32 by
        default; an integer or boolean one raises ``DTypeError``)."""
        chosen = self.backend.dtype(_draw_dtype("Generator.normal", dtype, _FLOAT_DRAWS) or DEFAULT_FLOAT)
        recorder = _hooks.recorder
        if recorder is not None:  # sg.compile: a replay draws again from this generator (see _normal)
            return recorder.method_call(self._normal, (shape, chosen))
        return self._source.normal(shape, chosen)

    def _normal(self, shape: tuple[int, ...], dtype: Any) -> Any:
        # The draw sg.compile records: it reads the source at every replay, so a generator
        # restarted between calls (g.__init__(7), a checkpointed state put back) draws from
        # its new source, as eager does, not on from the one the recording found.
        return self._source.normal(shape, dtype)

    def uniform(self, shape: tuple[int, ...], low: float = 0.0, high: float = 1.0, dtype: str | None = None) -> Any:
        """A backend array of uniform draws in ``[low, high)`` (``dtype``: a float dtype,
        float32 by default; an integer or boolean one raises ``DTypeError``)."""
        chosen = self.backend.dtype(_draw_dtype("Generator.uniform", dtype, _FLOAT_DRAWS) or DEFAULT_FLOAT)
        recorder = _hooks.recorder
        if recorder is not None:
            return recorder.method_call(self._uniform, (shape, low, high, chosen))
        return self._source.uniform(shape, low, high, chosen)

    def _uniform(self, shape: tuple[int, ...], low: float, high: float, dtype: Any) -> Any:
        return self._source.uniform(shape, low, high, dtype)  # recorded so (see _normal)

    def permutation(self, n: int) -> Any:
        """A random ordering of ``range(n)`` as a NumPy array (for shuffling batches)."""
        recorder = _hooks.recorder
        if recorder is not None:  # sg.compile: drawn again at every replay; NumPy indexing with it is unseen
            recorder.hand("a permutation (g.permutation(n))")
            return recorder.method_call(self._host_permutation, (n,))
        return self._host_permutation(n)

    def _host_permutation(self, n: int) -> Any:
        import numpy as np

        backend = self.backend
        # The backend's own to_numpy (sg.compile shadows the instance's while recording).
        return np.asarray(type(backend).to_numpy(backend, self._source.permutation(n)))


# Keyed by the backend object, not its name: a generator draws arrays of one backend object.
_default_generators: dict[int, Generator] = {}


_seed_value: list[int | None] = [None]


def seed(value: int) -> None:
    """Reseed the default generator of every backend (used when no ``generator`` is given)."""
    recorder = _hooks.recorder
    if recorder is not None:  # sg.compile: a replay would not reseed
        recorder.escape("sg.seed() inside the step: a replay would not reseed the default generator")
    _default_generators.clear()
    _seed_value[0] = value


def default_generator(backend: Backend | None = None) -> Generator:
    """The generator used when none is given, one per backend, seeded by :func:`seed`."""
    chosen = backend or active_backend()
    gen = _default_generators.get(id(chosen))
    if gen is None or gen.backend is not chosen:
        # made lazily, also inside a compiled step's recording (whose replays draw on from it)
        gen = Generator.__new__(Generator)
        gen._start(_seed_value[0], chosen)
        _default_generators[id(chosen)] = gen
    return gen


_FLOAT_DRAWS = "pass a float dtype= and convert the draws with .astype afterwards"


def _draw_dtype(op: str, name: str | None, fix: str) -> str | None:
    """``name`` when it is a float dtype (or None, the default float32); a ``DTypeError``
    otherwise. Draws in an integer or boolean dtype would be truncated (uniform draws in
    [0, 1) all to 0), so refuse them as PyTorch does."""
    if name is None or name.startswith("float"):
        return name
    raise DTypeError(f"{op} draws floating-point values, found dtype {name}; {fix}")


def randn(*dims: Any, dtype: str | None = None, generator: Generator | None = None) -> Any:
    """Standard normal draws; pass ``generator=sg.Generator(seed)`` for reproducibility.
    ``dtype`` is a float dtype (float32 by default); an integer or boolean one raises
    ``DTypeError``, as in PyTorch."""
    gen = generator or default_generator()
    chosen = _draw_dtype("randn", dtype, _FLOAT_DRAWS)
    return wrap(gen.normal(_shape(dims, "randn"), chosen), gen.backend)


def rand(*dims: Any, dtype: str | None = None, generator: Generator | None = None) -> Any:
    """Uniform draws in ``[0, 1)``; pass ``generator=`` for reproducibility. ``dtype`` is a
    float dtype (float32 by default); an integer or boolean one raises ``DTypeError``, as
    in PyTorch (for random integers use ``sg.randint``)."""
    gen = generator or default_generator()
    chosen = _draw_dtype("rand", dtype, "pass a float dtype=; for random integers use sg.randint")
    return wrap(gen.uniform(_shape(dims, "rand"), dtype=chosen), gen.backend)


def _like_dtype(op: str, x: AnyTensor, dtype: str | None) -> str:
    name = x._backend.dtype_name(x.dtype) if dtype is None else dtype
    fix = (
        f"pass a float dtype= (sg.{op}(x, dtype='float32')), or convert x first (x.astype('float32'))"
        if dtype is None
        else "pass a float dtype= such as 'float32'"
    )
    chosen = _draw_dtype(op, name, fix)
    assert chosen is not None
    return chosen


def randn_like(
    x: Tensor[Any, *S], generator: Generator | None = None, *, dtype: str | None = None
) -> Tensor[NoTape, *S]:
    """Standard normal draws shaped like ``x`` (untraced), in ``x``'s dtype unless ``dtype``
    is given. The dtype must be a float one: an integer or boolean ``x`` without a float
    ``dtype=`` raises ``DTypeError``, as in PyTorch."""
    gen = generator or default_generator(x._backend)
    return wrap(gen.normal(x.shape, _like_dtype("randn_like", x, dtype)), gen.backend)


def rand_like(
    x: Tensor[Any, *S], generator: Generator | None = None, *, dtype: str | None = None
) -> Tensor[NoTape, *S]:
    """Uniform draws in ``[0, 1)`` shaped like ``x`` (untraced), in ``x``'s dtype unless
    ``dtype`` is given. The dtype must be a float one: an integer or boolean ``x`` without a
    float ``dtype=`` raises ``DTypeError``, as in PyTorch."""
    gen = generator or default_generator(x._backend)
    return wrap(gen.uniform(x.shape, dtype=_like_dtype("rand_like", x, dtype)), gen.backend)


def from_dlpack(obj: Any, *, backend: str | Backend | None = None) -> Tensor[NoTape, *tuple[Open, ...]]:
    """A tensor sharing the memory of any DLPack exporter — a NumPy, PyTorch, CuPy or JAX
    array — without a copy where the devices agree (``backend`` picks ours; the active one
    by default). PyTorch refuses to export a tensor that requires grad: ``.detach()`` it.

    Examples:
        >>> import numpy as np
        >>> import shapegrad as sg
        >>> sg.from_dlpack(np.arange(3.0)).tolist()
        [0.0, 1.0, 2.0]
    """
    chosen = _backend(backend)
    try:
        data = chosen.xp.from_dlpack(obj)
    except (BufferError, TypeError, RuntimeError, ValueError, AttributeError) as exc:
        raise BackendError(
            f"from_dlpack for backend {chosen.name!r} could not import a {type(obj).__module__}.{type(obj).__name__} "
            f"({type(exc).__name__}: {exc}); expected a DLPack exporter on a device this backend reads"
        ) from None
    name = chosen.dtype_name(data.dtype)
    if not name.startswith(("float", "int", "uint", "bool")):
        raise DTypeError(f"from_dlpack expects real numeric or boolean data, found dtype {name}")
    return wrap(data, chosen)


@overload
def eye(n: Z0, *, dtype: str | None = None, backend: str | Backend | None = None) -> Tensor[NoTape, Z0, Z0]: ...
@overload
def eye(n: Z0, m: Z1, *, dtype: str | None = None, backend: str | Backend | None = None) -> Tensor[NoTape, Z0, Z1]: ...
@overload
def eye(
    n: int, m: int | None = None, *, dtype: str | None = None, backend: str | Backend | None = None
) -> Tensor[NoTape, Open, Open]: ...
def eye(n: int, m: int | None = None, *, dtype: str | None = None, backend: str | Backend | None = None) -> Any:
    """The ``n × m`` identity matrix (``m = n`` by default). PyTorch: ``torch.eye``.

    Sizes are typed as in :func:`zeros`: ``sg.eye(8)`` is ``Tensor[NoTape, L[8], L[8]]``.
    """
    chosen = _backend(backend)
    n = integer("eye", "size n", n)
    m = None if m is None else integer("eye", "size m", m)
    return wrap(chosen.xp.eye(n, m, dtype=chosen.dtype(dtype or DEFAULT_FLOAT)), chosen)


def linspace(
    start: float, stop: float, num: int, *, dtype: str | None = None, backend: str | Backend | None = None
) -> Tensor[NoTape, Open]:
    """``num`` evenly spaced values from ``start`` to ``stop``, both included.
    PyTorch: ``torch.linspace``."""
    chosen = _backend(backend)
    num = integer("linspace", "num", num)
    return wrap(chosen.xp.linspace(start, stop, num, dtype=chosen.dtype(dtype or DEFAULT_FLOAT)), chosen)


@overload
def randint(low: int, high: int, shape: tuple[Z0], *, generator: Generator | None = None) -> Tensor[NoTape, Z0]: ...
@overload
def randint(
    low: int, high: int, shape: tuple[Y0 | int], *, generator: Generator | None = None
) -> Tensor[NoTape, Y0]: ...
@overload
def randint(
    low: int, high: int, shape: tuple[Z0, Z1], *, generator: Generator | None = None
) -> Tensor[NoTape, Z0, Z1]: ...
@overload
def randint(
    low: int, high: int, shape: tuple[Y0 | int, Y1 | int], *, generator: Generator | None = None
) -> Tensor[NoTape, Y0, Y1]: ...
@overload
def randint(
    low: int, high: int, shape: tuple[Z0, Z1, Z2], *, generator: Generator | None = None
) -> Tensor[NoTape, Z0, Z1, Z2]: ...
@overload
def randint(
    low: int, high: int, shape: tuple[Y0 | int, Y1 | int, Y2 | int], *, generator: Generator | None = None
) -> Tensor[NoTape, Y0, Y1, Y2]: ...
@overload
def randint(
    low: int, high: int, shape: tuple[Z0, Z1, Z2, Z3], *, generator: Generator | None = None
) -> Tensor[NoTape, Z0, Z1, Z2, Z3]: ...
@overload
def randint(
    low: int, high: int, shape: tuple[Y0 | int, Y1 | int, Y2 | int, Y3 | int], *, generator: Generator | None = None
) -> Tensor[NoTape, Y0, Y1, Y2, Y3]: ...
@overload
def randint(
    low: int, high: int, shape: Sequence[int], *, generator: Generator | None = None
) -> Tensor[NoTape, *tuple[Open, ...]]: ...
def randint(low: int, high: int, shape: Sequence[int], *, generator: Generator | None = None) -> Any:
    """Integers drawn uniformly from ``[low, high)`` (int64), from ``generator`` (seed it for
    reproducibility). PyTorch: ``torch.randint``. The shape is typed as in :func:`zeros`
    (``randint(0, 65, (Batch(4), Seq(16)))`` is ``Tensor[NoTape, Batch, Seq]``)."""
    gen = generator or default_generator()
    draws = gen.uniform(_shape(tuple(shape), "randint"), float(low), float(high), dtype="float64")
    # on the backend's arrays, not the host's: no copy off a device, and sg.compile records it
    # (a trip through NumPy was a value read, which ran a step calling randint eagerly)
    xp = gen.backend.xp
    ints = xp.astype(xp.minimum(xp.maximum(xp.floor(draws), float(low)), float(high - 1)), xp.int64)
    return wrap(ints, gen.backend)


def randperm(n: int, *, generator: Generator | None = None) -> Tensor[NoTape, Open]:
    """A random ordering of ``range(n)`` (int64). PyTorch: ``torch.randperm``."""
    gen = generator or default_generator()
    n = integer("randperm", "size n", n)
    return wrap(gen.backend.asarray(gen.permutation(n).astype("int64"), None), gen.backend)


@overload
def multinomial(
    probs: Tensor[Any, N], num_samples: int, replacement: bool = False, *, generator: Generator | None = None
) -> Tensor[NoTape, Open]: ...
@overload
def multinomial(
    probs: Tensor[Any, B, N], num_samples: int, replacement: bool = False, *, generator: Generator | None = None
) -> Tensor[NoTape, B, Open]: ...
def multinomial(probs: Any, num_samples: int, replacement: bool = False, *, generator: Generator | None = None) -> Any:
    """``num_samples`` category indices (int64) drawn from the weights ``probs`` — a vector,
    or one row per distribution — with or without replacement. Weights need not sum to 1
    (they are normalized); they must be finite and non-negative with a positive sum, and
    without replacement at least ``num_samples`` must be positive. Untraced. Draws come from
    ``generator`` (seed it for reproducibility). PyTorch: ``torch.multinomial``.

    Without replacement the draws are in the order sequential sampling would give them:
    the categories with the smallest ``E / p`` (``E`` an exponential draw per category).

    Examples:
        >>> import shapegrad as sg
        >>> sg.multinomial(sg.tensor([0.0, 1.0, 0.0]), 2, replacement=True).tolist()
        [1, 1]
    """
    if probs.ndim not in (1, 2):
        raise ShapeError(f"multinomial expects probabilities of rank 1 or 2, found shape {probs.shape}")
    name = probs.backend_dtype_name()
    if not name.startswith("float"):
        raise DTypeError(f"multinomial expects floating-point probabilities, found dtype {name}")
    categories = probs.shape[-1]
    num_samples = integer("multinomial", "num_samples", num_samples)
    if num_samples <= 0 or (not replacement and num_samples > categories):
        limit = "> 0" if replacement else f"in [1, {categories}] (the categories, without replacement)"
        raise HyperparameterError(f"multinomial expects num_samples {limit}, found {num_samples}")
    gen = generator or default_generator(probs._backend)
    # without a generator the draw looks up the default one as it is then: sg.seed between
    # calls replaces it, and a replay draws from the new one as eager does (held here, the
    # recording would record again after every sg.seed, and run eagerly past max_recordings)
    draw = functools.partial(_multinomial_draw, probs._backend, generator, num_samples, replacement)
    recorder = _hooks.recorder
    if recorder is not None:
        # sg.compile: the checks, the draws and the search are one recorded call, run again
        # at every replay (a replay draws on from the generator, as eager does); reading the
        # probabilities in Python here would make the whole step run eagerly
        return wrap(recorder.method_call(draw, (probs._data,)), gen.backend)
    return wrap(draw(probs._data), gen.backend)


def _multinomial_draw(
    backend: Backend, generator: Generator | None, num_samples: int, replacement: bool, data: Any
) -> Any:
    """:func:`multinomial`'s checks and draws on the backend array ``data``: a backend array
    of int64 indices. It calls the backends' own methods (through their classes), not what
    ``sg.compile`` shadows while recording, so a recording runs it as one call. ``generator``
    None: ``backend``'s default generator at the time of the call."""
    import numpy as np

    gen = generator or default_generator(backend)

    categories = data.shape[-1]
    weights = np.asarray(type(backend).to_numpy(backend, data), dtype=np.float64).reshape(-1, categories)
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise HyperparameterError(
            "multinomial expects finite, non-negative probabilities, found a negative or non-finite one"
        )
    totals = weights.sum(axis=1)
    if np.any(totals <= 0):
        raise HyperparameterError(
            f"multinomial expects each row of probabilities to have a positive sum, found {totals.tolist()}"
        )
    positive = np.count_nonzero(weights, axis=1)
    if not replacement and np.any(positive < num_samples):
        raise HyperparameterError(
            f"multinomial without replacement expects at least num_samples={num_samples} categories of "
            f"positive probability per row, found {positive.tolist()}"
        )
    rows = weights.shape[0]
    picked: Any
    if replacement:
        # Inverse CDF: a uniform u in [0, 1) lands in category k where cdf[k-1] <= u < cdf[k];
        # the last cdf entry is exactly 1, and a zero-weight category has an empty interval.
        cdf = np.cumsum(weights, axis=1) / totals[:, None]
        cdf[:, -1] = 1.0
        u = _source_uniform(gen, (rows, num_samples))
        # One search for every row: row r's cdf and draws shifted into [r, r + 1].
        offsets = np.arange(rows, dtype=np.float64)[:, None]
        found = np.searchsorted((cdf + offsets).ravel(), (u + offsets).ravel(), side="right")
        picked = found.reshape(rows, num_samples) - np.arange(rows)[:, None] * categories
    else:
        # The exponential race: the k smallest E/p are k draws without replacement, in order.
        exponential = -np.log1p(-_source_uniform(gen, (rows, categories)))
        with np.errstate(divide="ignore"):
            keys = np.where(weights > 0, exponential / np.where(weights > 0, weights, 1.0), np.inf)
        picked = np.argsort(keys, axis=1, kind="stable")[:, :num_samples]
    shape = (num_samples,) if data.ndim == 1 else (rows, num_samples)
    chosen = gen.backend
    return type(chosen).asarray(chosen, picked.astype(np.int64).reshape(shape), None)


def _source_uniform(gen: Generator, shape: tuple[int, ...]) -> NDArray[float64]:
    """Uniform float64 draws in ``[0, 1)`` from ``gen``'s source, as a NumPy array, through
    no method ``sg.compile`` records (:func:`_multinomial_draw` is recorded as one call)."""
    import numpy as np

    chosen = gen.backend
    draws = gen._source.uniform(shape, 0.0, 1.0, chosen.dtype("float64"))  # noqa: SLF001 -- the generator's own source
    return np.asarray(type(chosen).to_numpy(chosen, draws), dtype=np.float64)
