"""The CuPy backend's fused kernels, checked where no GPU is.

Their math runs in every backend-parametrised test through the emulated CuPy (``conftest``);
here each kernel is also compiled to PTX by NVRTC for float32 and float64 — wrapped as
``cupy.ElementwiseKernel`` wraps a body (``T`` a typedef, inputs const, outputs references),
and, where the CuPy wheel is installed (the ``dev`` extra on Linux x86-64; it imports without
a GPU), in the source CuPy itself generates — and float32 results are compared with the
NumPy backend. With CuPy installed, the emulation's names are checked against CuPy's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import emulated_cupy_backend
from support import emulated_cupy, nvrtc
from support.op_table import OPS

import shapegrad as sg
import shapegrad._tensor as tensor_module
import shapegrad.ops._toolkit as toolkit_module
from shapegrad_backends.cupy_backend import CupyBackend
from shapegrad_backends.cupy_kernels import KERNELS, PREAMBLE, ElementwiseSource

_NVRTC = nvrtc.load()
needs_nvrtc = pytest.mark.skipif(
    _NVRTC is None, reason="NVRTC is not installed (pip install -e '.[dev]' on Linux x86-64)"
)


def _names(params: str) -> list[str]:
    return [part.split()[1] for part in params.split(",")]


def cuda_source(name: str, kernel: ElementwiseSource, ctype: str) -> str:
    """The kernel as a CUDA translation unit laid out the way ElementwiseKernel lays it out."""
    inputs, outputs = _names(kernel.inputs), _names(kernel.outputs)
    params = [f"const T* _in_{n}" for n in inputs] + [f"T* _out_{n}" for n in outputs] + ["long long _n"]
    loads = [f"    const T {n} = _in_{n}[_i];" for n in inputs] + [f"    T& {n} = _out_{n}[_i];" for n in outputs]
    return "\n".join(
        [
            PREAMBLE,
            f"typedef {ctype} T;",
            f'extern "C" __global__ void shapegrad_{name}({", ".join(params)}) {{',
            "  for (long long _i = blockIdx.x * (long long)blockDim.x + threadIdx.x; _i < _n;"
            " _i += (long long)blockDim.x * gridDim.x) {",
            *loads,
            f"    {kernel.body};",
            "  }",
            "}",
        ]
    )


@needs_nvrtc
@pytest.mark.parametrize("ctype", ["float", "double"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_compiles_with_nvrtc(name: str, ctype: str) -> None:
    assert _NVRTC is not None
    compiled, output = nvrtc.compile_to_ptx(_NVRTC, cuda_source(name, KERNELS[name], ctype))
    assert compiled, output
    assert f"shapegrad_{name}" in output
    if ctype == "float":
        # float32 kernels must not slip into double arithmetic (a bare 0.5 would): consumer
        # GPUs run it 32-64 times slower.
        assert ".f64" not in output, "double-precision instructions in a float32 kernel"


@needs_nvrtc
@pytest.mark.parametrize(
    "body",
    [
        "dx = g * tanhf2(x)",  # no such function
        "x = g",  # assigns an input
        "dx = g * x",  # control: compiles
    ],
)
def test_the_compile_check_rejects_what_cuda_rejects(body: str) -> None:
    assert _NVRTC is not None
    source = cuda_source("probe", ElementwiseSource("T g, T x", "T dx", body), "float")
    compiled, _ = nvrtc.compile_to_ptx(_NVRTC, source)
    assert compiled == (body == "dx = g * x")


def _cupy() -> Any:
    try:
        import cupy
    except ImportError:
        pytest.skip("the CuPy wheel is not installed (pip install -e '.[dev]' on Linux x86-64)")
    return cupy


def cupy_generated_source(cupy: Any, name: str, kernel: ElementwiseSource, dtype: str) -> str:
    """The translation unit ``cupy.ElementwiseKernel`` itself writes for ``kernel`` on
    contiguous 1-D ``dtype`` arrays, through CuPy's private code generator (the one step of
    a kernel launch that needs no GPU)."""
    from cupy._core import _carray, _kernel
    from cupy._core.core import _ndarray_base

    elementwise = cupy.ElementwiseKernel(
        kernel.inputs, kernel.outputs, kernel.body, f"shapegrad_{name}", preamble=PREAMBLE
    )
    array = _kernel._ArgInfo(1, _ndarray_base, np.dtype(dtype), 1, True, True)
    indexer = _kernel._ArgInfo(2, _carray.Indexer, None, 1, True, True)
    code = _kernel._get_elementwise_kernel_code(
        (array,) * (elementwise.nin + elementwise.nout) + (indexer,),
        _kernel._TypeMap((("T", np.dtype(dtype)),)),
        elementwise.params,
        elementwise.operation,
        elementwise.name,
        elementwise.preamble,
    )
    return "#include <cupy/carray.cuh>\n" + code


@needs_nvrtc
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_source_cupy_generates_compiles_with_nvrtc(name: str, dtype: str) -> None:
    assert _NVRTC is not None
    cupy = _cupy()
    try:
        source = cupy_generated_source(cupy, name, KERNELS[name], dtype)
    except (AttributeError, AssertionError, TypeError, ImportError) as exc:
        pytest.skip(f"CuPy {cupy.__version__}'s private kernel code generator has changed: {exc!r}")
    assert KERNELS[name].body in source
    include = str(Path(cupy.__file__).parent / "_core" / "include")
    compiled, output = nvrtc.compile_to_ptx(_NVRTC, source, include=(include,))
    assert compiled, source + output


def test_the_emulation_has_the_names_cupy_has() -> None:
    cupy = _cupy()
    emulated = emulated_cupy.make_module()
    public = {name for name in dir(emulated) if not name.startswith("_")}
    assert public - set(dir(cupy)) == set()
    assert emulated_cupy.NOT_IN_CUPY & set(dir(cupy)) == set()
    generator = {name for name in dir(emulated.random.default_rng(0)) if not name.startswith("_")}
    assert generator <= set(dir(cupy.random.Generator))


def test_without_a_gpu_real_cupy_is_refused_with_the_reason() -> None:
    _cupy()
    backend = CupyBackend()
    reason = backend.is_available()
    if reason is None:
        pytest.skip("a CUDA device answers here")
    assert "CuPy is installed but no CUDA device" in reason


# The op table's rows whose forward or gradient has a fused CuPy kernel.
ACTIVATIONS: list[tuple[str, Callable[[Any], Any]]] = [(op.name, op.fn) for op in OPS if op.kernel]


def _value_and_gradient(fn: Callable[[Any], Any], data: np.ndarray, backend: Any) -> tuple[np.ndarray, np.ndarray]:
    with sg.use_backend(backend):
        grads = sg.Gradients()
        x = sg.tensor(data).trace(grads)
        y = fn(x)
        (y * y).sum().backward()
        return np.asarray(y.numpy()), np.asarray(grads[x].numpy())


@pytest.mark.parametrize("name,fn", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_fused_float32_activations_stay_float32_and_agree_with_numpy(name: str, fn: Callable[[Any], Any]) -> None:
    data = np.random.default_rng(0).uniform(-6, 6, (64, 33)).astype(np.float32)
    y_fused, g_fused = _value_and_gradient(fn, data, emulated_cupy_backend())
    y_ref, g_ref = _value_and_gradient(fn, data, "numpy")
    assert y_fused.dtype == np.float32 and g_fused.dtype == np.float32
    np.testing.assert_allclose(y_fused, y_ref, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(g_fused, g_ref, rtol=2e-5, atol=1e-5)


def test_float16_keeps_the_composed_math(monkeypatch: pytest.MonkeyPatch) -> None:
    launched: list[str] = []
    original = emulated_cupy.ElementwiseKernel.__call__

    def spy(self: Any, *args: Any) -> Any:
        launched.append(self.name)
        return original(self, *args)

    monkeypatch.setattr(emulated_cupy.ElementwiseKernel, "__call__", spy)
    data = np.random.default_rng(1).uniform(-3, 3, (4, 5)).astype(np.float16)
    for _, fn in ACTIVATIONS:
        y_fused, g_fused = _value_and_gradient(fn, data, emulated_cupy_backend())
        y_ref, g_ref = _value_and_gradient(fn, data, "numpy")
        assert y_fused.dtype == np.float16
        np.testing.assert_array_equal(y_fused, y_ref)
        np.testing.assert_array_equal(g_fused, g_ref)
    assert launched == []
    _value_and_gradient(sg.gelu, data.astype(np.float32), emulated_cupy_backend())
    assert launched == ["shapegrad_gelu", "shapegrad_gelu_backward"]


def test_every_kernel_is_used_by_an_op_or_optimizer(monkeypatch: pytest.MonkeyPatch) -> None:
    used: set[str] = set()
    backend = emulated_cupy_backend()
    original = type(backend).fused_kernel

    def spy(self: Any, name: str, dtype: Any) -> Any:
        used.add(name)
        return original(self, name, dtype)

    monkeypatch.setattr(type(backend), "fused_kernel", spy)
    # Kernels are looked up once per backend, name and dtype: start from empty tables. The
    # bound rules' table has more names, which record_traced and the ops' common paths
    # (binary, unary) read inline: every name gets the new table (replacing one alone left
    # the others' rules, bound by an earlier test in the session, in use, and the kernels
    # they name unasked for).
    monkeypatch.setattr(sg._backend, "_kernels", {})
    fresh: dict[Any, Any] = {}
    monkeypatch.setattr(sg._backend, "_bound", fresh)
    monkeypatch.setattr(sg._backend, "bound_rules", fresh)
    monkeypatch.setattr(tensor_module, "_bound_rules", fresh)
    monkeypatch.setattr(toolkit_module, "_bound_rules", fresh)
    data = np.linspace(-2, 2, 12).reshape(3, 4)
    for _, fn in ACTIVATIONS:
        _value_and_gradient(fn, data, backend)
    with sg.use_backend(backend):
        for make in (
            lambda m: sg.optim.Adam(m),
            lambda m: sg.optim.Sgd(m, momentum=0.9),
            lambda m: sg.optim.Sgd(m, momentum=0.9, nesterov=True),
        ):
            model = sg.nn.Linear(4, 2)
            opt = make(model)
            for _ in range(2):
                grads = model.alloc_grads()
                model(sg.tensor(data, dtype="float32").trace(grads)).sum().backward()
                opt.update(model, grads)
    assert used >= set(KERNELS), f"kernels no op asks for: {sorted(set(KERNELS) - used)}"


def test_the_emulation_refuses_host_arrays_as_cupy_does() -> None:
    cp = emulated_cupy.make_module()
    device = cp.asarray(np.ones(3))
    with pytest.raises(TypeError, match="Unsupported type"):
        device + np.ones(3)
    with pytest.raises(TypeError, match="Unsupported type"):
        cp.concatenate([device, np.ones(3)])
    with pytest.raises(TypeError, match="Unsupported type"):
        cp.exp(np.ones(3))
    assert type(cp.asnumpy(device)) is np.ndarray
    assert not hasattr(cp, "vecdot") and not hasattr(cp.random.default_rng(0), "permutation")


def test_the_emulated_kernel_checks_types_and_const_inputs() -> None:
    cp = emulated_cupy.make_module()
    kernel = cp.ElementwiseKernel("T g, T x", "T dx", "dx = g * (x > 0)", "probe")
    with pytest.raises(TypeError, match="Type is mismatched"):
        kernel(cp.ones(2, dtype=np.float32), cp.ones(2, dtype=np.float64))
    with pytest.raises(TypeError, match="Wrong number of arguments"):
        kernel(cp.ones(2))
    writes_input = cp.ElementwiseKernel("T g, T x", "T dx", "x = g; dx = x", "probe")
    with pytest.raises(TypeError, match="const"):
        writes_input(cp.ones(2), cp.ones(2))
    np.testing.assert_array_equal(cp.asnumpy(kernel(cp.asarray([1.0, 2.0]), cp.asarray([-1.0, 1.0]))), [0.0, 2.0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_adam_kernels_match_adam_s_reference_math(dtype: str) -> None:
    """NumPy's in-place "adam" kernel and CuPy's "adam" ElementwiseKernel against the Adam
    optimizer's own xp math (the reference, what the strict backend runs)."""
    rng = np.random.default_rng(2)
    host = {name: rng.standard_normal(6).astype(dtype) for name in ("p", "g", "m")}
    host["v"] = np.abs(rng.standard_normal(6)).astype(dtype)

    class Plain:  # the same NumPy, without kernels: Adam runs its reference math
        xp = np

    reference = {k: v.copy() for k, v in host.items()}
    adam = sg.optim.Adam.__new__(sg.optim.Adam)
    adam.beta1, adam.beta2, adam.eps, adam.weight_decay, adam.amsgrad = 0.9, 0.999, 1e-8, 0.0, False
    state = {"exp_avg": reference["m"], "exp_avg_sq": reference["v"]}
    adam._apply(Plain(), reference["p"], reference["g"], state, 0.01, 3)
    for backend in (sg.get_backend("numpy"), emulated_cupy_backend()):
        xp = backend.xp
        arrays = {k: xp.asarray(v.copy()) for k, v in host.items()}
        state = {"exp_avg": arrays["m"], "exp_avg_sq": arrays["v"]}
        assert sg._backend.fused_kernel(backend, "adam", arrays["p"].dtype) is not None
        adam._apply(backend, arrays["p"], arrays["g"], state, 0.01, 3)
        for name in ("p", "m", "v"):
            found = np.asarray(backend.to_numpy(arrays[name]))
            np.testing.assert_allclose(found, reference[name], rtol=1e-6, err_msg=f"{backend.name} {name}")
