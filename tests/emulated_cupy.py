"""A stand-in for the ``cupy`` module, built on NumPy, so that the CuPy backend's own code
runs on machines without a GPU (see ``EMULATED_CUPY`` in ``conftest.py``).

It reproduces the parts of CuPy that CPU-only code most often gets wrong:

- device arrays are their own type, and mixing them with NumPy arrays in an operation is a
  ``TypeError``, as in CuPy; data reaches the host only through ``asnumpy``;
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


class ndarray(np.ndarray):  # noqa: N801 - the name CuPy gives its array type
    """A device array: a NumPy array that refuses to meet host arrays in an operation."""

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        _refuse_host(ufunc.__name__, inputs)
        out = kwargs.get("out")
        if out is not None:
            _refuse_host(ufunc.__name__, out)
            kwargs["out"] = tuple(_host_view(o) for o in out)
        result = getattr(ufunc, method)(*[_host_view(x) for x in inputs], **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _to_device(result)

    def __array_function__(self, func: Any, types_: Any, args: Any, kwargs: Any) -> Any:
        _refuse_host(func.__name__, args)
        _refuse_host(func.__name__, kwargs.values())
        return _to_device(func(*_unwrap(args), **_unwrap(kwargs)))


def _host_view(x: Any) -> Any:
    return x.view(np.ndarray) if isinstance(x, ndarray) else x


def _unwrap(value: Any) -> Any:
    if isinstance(value, ndarray):
        return value.view(np.ndarray)
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
        elif isinstance(value, np.ndarray) and not isinstance(value, ndarray):
            # CuPy's words for the same mistake.
            raise TypeError(f"Unsupported type <class 'numpy.ndarray'> in {name}")


def _to_device(result: Any) -> Any:
    if isinstance(result, np.ndarray) and not isinstance(result, ndarray):
        return result.view(ndarray)
    if isinstance(result, tuple):
        items: tuple[Any, ...] = result
        return tuple(_to_device(r) for r in items)
    return result


def _device_function(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        if name not in _FROM_HOST:
            _refuse_host(name, args)
            _refuse_host(name, kwargs.values())
        return _to_device(func(*_unwrap(args), **_unwrap(kwargs)))

    call.__name__ = name
    return call


class _DeviceUfunc:
    """A NumPy ufunc that, like CuPy's, refuses host arrays (its methods too)."""

    def __init__(self, ufunc: Any) -> None:
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__
        self._call = _device_function(ufunc.__name__, ufunc)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)

    def __getattr__(self, method: str) -> Any:
        value = getattr(self._ufunc, method)
        return _device_function(f"{self.__name__}.{method}", value) if callable(value) else value


def asnumpy(array: Any) -> np.ndarray[Any, Any]:
    """A host copy, as ``cupy.asnumpy``."""
    return np.array(_host_view(array))


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
        nin, nout = len(self.inputs), len(self.outputs)
        if len(args) not in (nin, nin + nout):
            raise TypeError(f"Wrong number of arguments for {self.name!r}")
        _refuse_host(self.name, args)
        arrays = [a for a in args if isinstance(a, ndarray)]
        if not arrays:
            raise TypeError(f"{self.name}: no array binds type T")
        dtype = arrays[0].dtype
        if any(a.dtype != dtype for a in arrays):
            found = sorted({str(a.dtype) for a in arrays})
            raise TypeError(f"Type is mismatched. {self.name} T binds {found}")
        t = dtype.type
        ins = args[:nin]
        shape = np.broadcast_shapes(*[a.shape for a in ins if isinstance(a, ndarray)])
        outs = list(args[nin:]) or [np.empty(shape, dtype).view(ndarray) for _ in self.outputs]
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
        }
        for (_, name), value in zip(self.inputs, ins, strict=True):
            scope[name] = np.broadcast_to(_host_view(value), shape) if isinstance(value, ndarray) else t(value)
        for (_, name), out in zip(self.outputs, outs, strict=True):
            scope[name] = _host_view(out)
        bound = {name: scope[name] for _, name in self.inputs}
        for statement in self.statements:
            exec(statement, scope)  # noqa: S102 - the kernel body, in its Python reading
        for _, name in self.inputs:
            if scope[name] is not bound[name]:
                raise TypeError(f"{self.name}: assigns to input {name!r}, which CUDA declares const")
        for (_, name), out in zip(self.outputs, outs, strict=True):
            host = _host_view(out)
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
    module.ndarray = ndarray
    module.asnumpy = asnumpy
    module.ElementwiseKernel = ElementwiseKernel
    module.random = types.SimpleNamespace(default_rng=_Generator)
    module.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 1))
    return module
