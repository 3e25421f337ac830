"""A stand-in for the ``cupy`` module, built on NumPy, so that the CuPy backend's own code
runs on machines without a GPU (see ``EMULATED_CUPY`` in ``conftest.py``).

It reproduces the parts of CuPy that CPU-only code most often gets wrong:

- device arrays are their own type (not a NumPy subclass): mixing them with NumPy arrays in
  an operation, assigning a NumPy array into one, passing a list to a ufunc and
  ``np.asarray(device_array)`` are each a ``TypeError``, as in CuPy; data reaches the host
  only through ``asnumpy``, ``.get()``, ``.item()`` and scalar conversions, which are counted
  (:func:`host_transfers`), so tests can hold the hot path to its synchronisations;
- integer-array indices out of range wrap around (``take`` too), as CuPy does not
  bounds-check them, so the library's own range checks are what a test sees;
- the namespace holds only names CuPy 14 has (no ``vecdot``, ``errstate``, ...), and the
  random generator only the methods ``cupy.random.Generator`` has (no ``permutation``);
- ``ElementwiseKernel`` checks its parameter lists, argument count and the one type bound to
  ``T`` as CuPy does, then runs the kernel body on NumPy arrays. The bodies of
  ``backends/cupy_kernels.py`` keep to a subset that means the same in CUDA C++ and Python,
  so this checks their math; ``test_cupy_kernels.py`` compiles them with NVRTC.

What it cannot show: CUDA compilation inside CuPy, device memory, cuBLAS numerics, speed.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np

# Public NumPy 2 names that CuPy 14.2 does not have (dir(numpy) - dir(cupy)).
NOT_IN_CUPY = frozenset(
    "False_ ScalarType True_ asmatrix block bmat busday_count busday_offset busdaycalendar bytes_ "
    "char character clongdouble complex256 core ctypeslib datetime64 datetime_as_string "
    "datetime_data dtypes einsum_path emath errstate f2py flexible float128 frompyfunc fromregex "
    "geomspace get_include getbufsize geterr geterrcall histogram_bin_edges info insert is_busday "
    "isnat little_endian longdouble ma matrix matvec memmap nanpercentile nanquantile ndenumerate "
    "nditer nested_iters object_ polyder polydiv polyint rec recarray record sctypeDict "
    "setbufsize seterr seterrcall show_runtime spacing str_ strings test timedelta64 typecodes "
    "unstack vecdot vecmat void".split()
)

# Functions that take host data on purpose.
_FROM_HOST = frozenset({"asarray", "array", "ascontiguousarray", "asanyarray"})


class _Flags:
    """What ``cupy.ndarray.flags`` has (no ``writeable``: device memory is always writable)."""

    def __init__(self, host: np.ndarray) -> None:
        self.c_contiguous = bool(host.flags.c_contiguous)
        self.f_contiguous = bool(host.flags.f_contiguous)
        self.owndata = bool(host.flags.owndata)


_syncs = [0]


def host_transfers() -> int:
    """How many device-to-host transfers (synchronisations) the emulation has seen."""
    return _syncs[0]


def _sync() -> None:
    _syncs[0] += 1


_operations = [0]


def device_operations() -> int:
    """How many operations the emulation has run on the device: each function, ufunc,
    operator, method, index or kernel call on device arrays, views included (on CuPy each
    is a call with a host cost of its own, and most a kernel launch)."""
    return _operations[0]


class ndarray:  # noqa: N801 - the name CuPy gives its array type
    """A device array. Unlike a NumPy subclass, NumPy cannot read it implicitly:
    ``np.asarray(device)`` raises as CuPy does, and so does any NumPy operand in one of its
    operations; values reach the host only through ``asnumpy``, ``.get()``, ``.item()`` and
    the scalar conversions, each counted by :func:`host_transfers`."""

    __slots__ = ("_a",)
    __array_priority__ = 100.0

    def __init__(self, host: np.ndarray) -> None:
        self._a = host

    # -- facts (no transfer) ---------------------------------------------------------------
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    strides = property(lambda self: self._a.strides)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    flags = property(lambda self: _Flags(self._a))
    T = property(lambda self: ndarray(self._a.T))
    mT = property(lambda self: ndarray(np.swapaxes(self._a, -1, -2)))

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self) -> Any:
        return (_to_device(row) for row in self._a)

    def __repr__(self) -> str:
        return f"emulated_cupy.ndarray(shape={self.shape}, dtype={self.dtype})"

    # -- host transfers ----------------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise TypeError(
            "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array "
            "explicitly."
        )

    def get(self) -> np.ndarray:
        _sync()
        return self._a.copy()

    def item(self) -> Any:
        _sync()
        return self._a.item()

    def tolist(self) -> Any:
        _sync()
        return self._a.tolist()

    def __float__(self) -> float:
        _sync()
        return float(self._a)

    def __int__(self) -> int:
        _sync()
        return int(self._a)

    def __bool__(self) -> bool:
        _sync()
        return bool(self._a)

    def __index__(self) -> int:
        _sync()
        return self._a.__index__()

    # -- indexing: fancy indices wrap around, as CuPy does not bounds-check them ---------------
    def __getitem__(self, key: Any) -> Any:
        return _to_device(self._a[_device_key(key, self._a.shape)])

    def __setitem__(self, key: Any, value: Any) -> None:
        _operations[0] += 1
        _refuse_host("__setitem__", (value,))
        self._a[_device_key(key, self._a.shape)] = _unwrap(value)

    # -- NumPy protocols: NumPy functions and ufuncs on device arrays run on the device ------
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        _refuse_host(ufunc.__name__, inputs)
        out = kwargs.get("out")
        if out is not None:
            _operations[0] += 1
            kwargs["out"] = tuple(_unwrap(o) for o in out)
        result = getattr(ufunc, method)(*_unwrap(inputs), **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _to_device(result)

    def __array_function__(self, func: Any, types_: Any, args: Any, kwargs: Any) -> Any:
        _refuse_host(func.__name__, args)
        _refuse_host(func.__name__, kwargs.values())
        return _to_device(func(*_unwrap(args), **_unwrap(kwargs)))

    # -- methods -----------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name not in ("__dlpack__", "__dlpack_device__"):
            # never hand NumPy the host array's __array_interface__ & co. (DLPack is CuPy's too)
            raise AttributeError(name)
        value = getattr(self._a, name)
        if callable(value):
            return _device_function(f"ndarray.{name}", value)
        return _to_device(value)

    def __deepcopy__(self, memo: Any) -> ndarray:
        return ndarray(self._a.copy())


def _operator(ufunc: Any, reflected: bool = False, inplace: bool = False) -> Any:
    def method(self: ndarray, other: Any) -> Any:
        _refuse_host(ufunc.__name__, (other,))
        if inplace:
            _operations[0] += 1
            ufunc(self._a, _unwrap(other), out=self._a)
            return self
        a, b = (_unwrap(other), self._a) if reflected else (self._a, _unwrap(other))
        return _to_device(ufunc(a, b))

    return method


for _name, _ufunc in {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
    "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power, "matmul": np.matmul,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
}.items():  # fmt: skip
    setattr(ndarray, f"__{_name}__", _operator(_ufunc))
    setattr(ndarray, f"__r{_name}__", _operator(_ufunc, reflected=True))
    setattr(ndarray, f"__i{_name}__", _operator(_ufunc, inplace=True))
for _name, _ufunc in {
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal,
}.items():  # fmt: skip
    setattr(ndarray, f"__{_name}__", _operator(_ufunc))
for _name, _ufunc in {"neg": np.negative, "pos": np.positive, "abs": np.absolute, "invert": np.invert}.items():
    setattr(ndarray, f"__{_name}__", lambda self, _u=_ufunc: _to_device(_u(self._a)))
ndarray.__hash__ = None  # type: ignore[assignment]  # pyright: ignore[reportAttributeAccessIssue] -- unhashable, as arrays are


def _consumed(entry: Any) -> int:
    if entry is None or entry is Ellipsis:
        return 0
    if isinstance(entry, np.ndarray) and entry.dtype == np.bool_:
        return entry.ndim
    return 1


def _device_key(key: Any, shape: tuple[int, ...]) -> Any:
    """The index with device arrays unwrapped, and integer arrays taken modulo their axis
    size: out-of-range fancy indices wrap around on CuPy instead of raising."""
    raw = _unwrap(key)
    entries = list(raw) if isinstance(raw, tuple) else [raw]
    axis = 0
    for i, entry in enumerate(entries):
        if entry is Ellipsis:
            axis = len(shape) - sum(_consumed(e) for e in entries[i + 1 :])
            continue
        if isinstance(entry, np.ndarray) and entry.dtype.kind in "iu" and axis < len(shape) and shape[axis]:
            entries[i] = entry % shape[axis]
        axis += _consumed(entry)
    return tuple(entries) if isinstance(raw, tuple) else entries[0]


def _unwrap(value: Any) -> Any:
    if isinstance(value, ndarray):
        return value._a
    if isinstance(value, (list, tuple)):
        items: Any = value
        return type(items)(_unwrap(v) for v in items)
    if isinstance(value, dict):
        mapping: dict[str, Any] = value
        return {k: _unwrap(v) for k, v in mapping.items()}
    return value


def _refuse_host(name: str, values: Any) -> None:
    for value in values:
        if isinstance(value, (list, tuple)):
            _refuse_host(name, value)
        elif isinstance(value, np.ndarray):
            # CuPy's words for the same mistake.
            raise TypeError(f"Unsupported type <class 'numpy.ndarray'> in {name}")


def _to_device(result: Any) -> Any:
    """A device operation's result on the device (the operation counted)."""
    _operations[0] += 1
    return _device_result(result)


def _device_result(result: Any) -> Any:
    if isinstance(result, (np.ndarray, np.generic)):
        return ndarray(np.asarray(result))  # CuPy reductions give 0-d device arrays, not scalars
    if isinstance(result, tuple):
        items: tuple[Any, ...] = result
        return tuple(_device_result(r) for r in items)
    return result


def _device_function(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        if name not in _FROM_HOST:
            _refuse_host(name, args)
            _refuse_host(name, kwargs.values())
        return _to_device(func(*_unwrap(args), **_unwrap(kwargs)))

    call.__name__ = name
    return call


def _sorting(func: Callable[..., Any]) -> Callable[..., Any]:
    """``cupy.sort``/``argsort``: CuPy's signature, ``(a, axis=-1, kind=None)``, always stable
    (a radix sort); no Array-API ``stable=``/``descending=`` keyword (a ``TypeError`` on the
    real CuPy 14, which the emulated one must give too)."""

    def call(a: Any, axis: int | None = -1, kind: str | None = None) -> Any:
        if kind not in (None, "stable"):
            raise NotImplementedError(f"{func.__name__} does not support kind={kind!r}")
        _refuse_host(func.__name__, (a,))
        return _to_device(func(_unwrap(a), axis=axis, kind="stable"))

    call.__name__ = func.__name__
    return call


def _from_host(func: Callable[..., Any]) -> Callable[..., Any]:
    """``cupy.asarray``/``array``: host data is copied to the device; a device array is kept
    unless a copy or another dtype is asked for."""

    def call(data: Any, dtype: Any = None, *, copy: Any = None, **kwargs: Any) -> Any:
        if isinstance(data, ndarray):
            if copy or (dtype is not None and np.dtype(dtype) != data.dtype) or func is np.array:
                return ndarray(np.array(data._a, dtype=dtype))
            return data
        return ndarray(np.array(_unwrap(data), dtype=dtype, **kwargs))

    return call


class _DeviceUfunc:
    """A NumPy ufunc that, like CuPy's, refuses host arrays and list operands."""

    def __init__(self, ufunc: Any) -> None:
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__
        self._call = _device_function(ufunc.__name__, ufunc)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        for arg in args:
            if isinstance(arg, (list, tuple)):
                raise TypeError(f"Unsupported type {type(arg)} in {self.__name__}")
        return self._call(*args, **kwargs)

    def __getattr__(self, method: str) -> Any:
        value = getattr(self._ufunc, method)
        return _device_function(f"{self.__name__}.{method}", value) if callable(value) else value


def _take(a: Any, indices: Any, axis: Any = None, out: Any = None) -> Any:
    _refuse_host("take", (a, indices))
    return _to_device(np.take(_unwrap(a), _unwrap(indices), axis=axis, mode="wrap"))


def _take_along_axis(a: Any, indices: Any, axis: int) -> Any:
    _refuse_host("take_along_axis", (a, indices))
    host = _unwrap(a)
    return _to_device(np.take_along_axis(host, _unwrap(indices) % max(host.shape[axis], 1), axis=axis))


def asnumpy(array: Any) -> np.ndarray[Any, Any]:
    """A host copy, as ``cupy.asnumpy``."""
    if isinstance(array, ndarray):
        _sync()
        return array._a.copy()
    return np.array(array)


class _Generator:
    """The methods ``cupy.random.Generator`` has, drawing on NumPy."""

    def __init__(self, seed: int | None) -> None:
        self._gen = np.random.default_rng(seed)

    def standard_normal(self, size: Any = None, dtype: Any = np.float64) -> Any:
        return _to_device(np.asarray(self._gen.standard_normal(size, dtype=dtype)))

    def uniform(self, low: float = 0.0, high: float = 1.0, size: Any = None, dtype: Any = np.float64) -> Any:
        return _to_device(np.asarray(self._gen.uniform(low, high, size).astype(dtype)))

    def random(self, size: Any = None, dtype: Any = np.float64) -> Any:
        return _to_device(np.asarray(self._gen.random(size, dtype=dtype)))

    def integers(self, low: int, high: int | None = None, size: Any = None) -> Any:
        return _to_device(np.asarray(self._gen.integers(low, high, size)))


def _param_list(spec: str, kernel: str) -> list[tuple[str, str]]:
    params: list[tuple[str, str]] = []
    for part in spec.split(","):
        words = part.split()
        if len(words) != 2:
            raise ValueError(f"{kernel}: cannot parse parameter {part.strip()!r}")
        ctype, name = words
        if name in ("n", "i") or name.startswith("_"):
            raise ValueError(f"{kernel}: {name!r} is reserved")
        params.append((ctype, name))
    return params


class ElementwiseKernel:
    """``cupy.ElementwiseKernel`` for bodies in the CUDA-and-Python subset (one type ``T``)."""

    def __init__(
        self, in_params: str, out_params: str, operation: str, name: str = "kernel", preamble: str = "", **_: Any
    ) -> None:
        self.name = name
        self.inputs = _param_list(in_params, name)
        self.outputs = _param_list(out_params, name)
        if any(ctype != "T" for ctype, _ in self.inputs + self.outputs):
            raise ValueError(f"{name}: the emulation handles kernels typed with T only")
        self.statements = [compile(s.strip(), f"<{name}>", "exec") for s in operation.split(";") if s.strip()]
        self.preamble = preamble

    def __call__(self, *args: Any) -> Any:
        _operations[0] += 1
        nin, nout = len(self.inputs), len(self.outputs)
        if len(args) not in (nin, nin + nout):
            raise TypeError(f"Wrong number of arguments for {self.name!r}")
        _refuse_host(self.name, args)
        arrays = [a for a in args if isinstance(a, ndarray)]
        for value in args:
            if not isinstance(value, (ndarray, int, float, np.generic)):
                raise TypeError(f"Unsupported type {type(value)} in {self.name}")
        if not arrays:
            raise TypeError(f"{self.name}: no array binds type T")
        dtype = arrays[0].dtype
        if any(a.dtype != dtype for a in arrays):
            found = sorted({str(a.dtype) for a in arrays})
            raise TypeError(f"Type is mismatched. {self.name} T binds {found}")
        t = dtype.type
        ins = args[:nin]
        shape = np.broadcast_shapes(*[a.shape for a in ins if isinstance(a, ndarray)])
        outs = list(args[nin:]) or [ndarray(np.empty(shape, dtype)) for _ in self.outputs]
        for out in outs:
            if out.shape != shape:
                raise ValueError(f"{self.name}: output shape {out.shape} is not the broadcast shape {shape}")
        scope: dict[str, Any] = {
            "T": t,
            "sqrt": np.sqrt,
            "exp": np.exp,
            "log1p": np.log1p,
            "tanh": np.tanh,
            "fabs": np.fabs,
            "positive_part": lambda x: np.maximum(x, t(0)),
            "keep_where": lambda c, v: np.where(c, v, t(0)),
        }
        for (_, name), value in zip(self.inputs, ins, strict=True):
            scope[name] = np.broadcast_to(value._a, shape) if isinstance(value, ndarray) else t(value)
        for (_, name), out in zip(self.outputs, outs, strict=True):
            scope[name] = out._a
        bound = {name: scope[name] for _, name in self.inputs}
        for statement in self.statements:
            exec(statement, scope)  # noqa: S102 - the kernel body, in its Python reading
        for _, name in self.inputs:
            if scope[name] is not bound[name]:
                raise TypeError(f"{self.name}: assigns to input {name!r}, which CUDA declares const")
        for (_, name), out in zip(self.outputs, outs, strict=True):
            host = out._a
            if scope[name] is not host:
                host[...] = scope[name]
        return outs[0] if nout == 1 else tuple(outs)


def make_module() -> types.ModuleType:
    """A fresh stand-in ``cupy`` module."""
    module = types.ModuleType("cupy", __doc__)
    for name in dir(np):
        if name.startswith("_") or name in NOT_IN_CUPY:
            continue
        value = getattr(np, name)
        if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)) or type(value).__name__ == (
            "_ArrayFunctionDispatcher"
        ):
            value = _device_function(name, value)
        elif isinstance(value, np.ufunc):
            value = _DeviceUfunc(value)
        setattr(module, name, value)
    for name in _FROM_HOST:
        setattr(module, name, _from_host(np.array if name == "array" else np.asarray))
    module.take = _take
    module.take_along_axis = _take_along_axis
    module.sort = _sorting(np.sort)
    module.argsort = _sorting(np.argsort)
    module.ndarray = ndarray
    module.asnumpy = asnumpy
    module.ElementwiseKernel = ElementwiseKernel
    module.random = types.SimpleNamespace(default_rng=_Generator)
    module.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 1))
    return module
