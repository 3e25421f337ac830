"""The backend registry, the SHAPEGRAD_BACKEND switch, plugins and moving data."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import shapegrad as sg


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``code`` run in a fresh interpreter with ``env`` added; the default backend is NumPy's
    unless ``env`` names one (the GPU check runs this file with ``SHAPEGRAD_BACKEND=cupy``)."""
    inherited = {name: value for name, value in os.environ.items() if name != "SHAPEGRAD_BACKEND"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**inherited, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_environment_variable_selects_the_backend() -> None:
    result = _python(
        "import shapegrad as sg; print(sg.zeros(2).backend, sg.backend_info()['active'])", SHAPEGRAD_BACKEND="strict"
    )
    assert result.stdout.split() == ["strict", "strict"], result.stderr


def test_unknown_backend_lists_the_registered_ones() -> None:
    with pytest.raises(sg.BackendError, match=r"unknown backend 'tpu'; registered backends: cupy, numpy, strict"):
        sg.set_backend("tpu")
    result = _python("import shapegrad as sg; sg.zeros(1)", SHAPEGRAD_BACKEND="tpu")
    assert "BackendError: unknown backend 'tpu'" in result.stderr


def test_cupy_without_a_gpu_says_which_is_missing() -> None:
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(sg.BackendError, match=r"backend 'cupy' is not usable here: CuPy is not installed"):
            sg.get_backend("cupy")
        return
    try:
        sg.get_backend("cupy")
    except sg.BackendError as exc:
        assert "no CUDA device" in str(exc)


def test_import_does_not_import_cupy_or_strict() -> None:
    result = _python(
        "import sys, shapegrad as sg; sg.zeros(1); print('cupy' in sys.modules, 'array_api_strict' in sys.modules)"
    )
    assert result.stdout.split() == ["False", "False"], result.stderr


def test_use_backend_is_scoped() -> None:
    with sg.use_backend("numpy"):
        with sg.use_backend("strict") as inner:
            assert inner.name == "strict" and sg.ones(1).backend == "strict"
        assert sg.ones(1).backend == "numpy"


def test_set_backend_reaches_the_calling_thread_and_a_copied_context_only() -> None:
    """issue #24 item 11: the README says how ``set_backend`` reaches threads; this holds it to that."""
    import contextvars
    import threading

    seen: list[str] = []

    def work() -> None:
        seen.append(sg.zeros(1).backend)

    with sg.use_backend("numpy"):
        sg.set_backend("strict")
        for thread in (
            threading.Thread(target=work),
            threading.Thread(target=contextvars.copy_context().run, args=(work,)),
        ):
            thread.start()
            thread.join()
        assert sg.zeros(1).backend == "strict"
    from conftest import default_backend_for_tests

    # A new thread begins on the process's default: SHAPEGRAD_BACKEND's, or the emulated CuPy
    # where the suite runs on it as a GPU run does on the real one.
    default = os.environ.get("SHAPEGRAD_BACKEND", "numpy").strip() or "numpy"
    if default_backend_for_tests() == "emulated-cupy":
        default = "cupy"
    assert seen == [default, "strict"]


def test_mixing_backends_in_one_op_is_a_clear_error() -> None:
    a = sg.ones(3, backend="numpy")
    b = sg.ones(3, backend="strict")
    with pytest.raises(sg.BackendError, match=r"two backends: 'numpy' and 'strict'.*\.to\('numpy'\)"):
        a + b
    with pytest.raises(sg.BackendError):
        sg.matmul(sg.ones(2, 2, backend="numpy"), sg.ones(2, 2, backend="strict"))


def test_moving_between_backends_keeps_gradients() -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0, 2.0, 3.0], backend="numpy").trace(grads)
    moved = x.to("strict")
    assert moved.backend == "strict" and moved.traced
    loss = (moved * moved).sum()
    loss.backward()
    assert grads[x].backend == "numpy"
    np.testing.assert_allclose(grads[x].numpy(), [2.0, 4.0, 6.0])


def test_moving_to_and_from_the_cupy_backend_keeps_gradients() -> None:
    from conftest import emulated_cupy_backend
    from support import emulated_cupy

    device = emulated_cupy_backend()
    grads = sg.Gradients()
    x = sg.tensor([1.0, -2.0, 3.0], backend="numpy").trace(grads)
    on_device = x.to(device)
    assert on_device.backend == "cupy" and isinstance(on_device._data, emulated_cupy.ndarray)
    with pytest.raises(sg.BackendError, match="two backends: 'cupy' and 'numpy'"):
        on_device + sg.ones(3, backend="numpy")
    back = sg.relu(on_device * 2.0).to("numpy")
    (back * back).sum().backward()
    assert grads[x].backend == "numpy"
    np.testing.assert_allclose(grads[x].numpy(), [8.0, 0.0, 24.0])


def test_backend_info_reports_every_registered_backend() -> None:
    info = sg.backend_info()
    assert set(info["backends"]) >= {"numpy", "strict", "cupy"}
    assert info["backends"]["numpy"] == "available"


def test_a_plugin_registered_by_entry_point(tmp_path: Path) -> None:
    """A small distribution declares a backend under the entry-point group; shapegrad
    finds it by name with no other registration."""
    (tmp_path / "toy_backend.py").write_text(
        textwrap.dedent("""
        from shapegrad_backends.numpy_backend import NumpyBackend

        class ToyBackend(NumpyBackend):
            name = "toy"
    """)
    )
    dist = tmp_path / "toy_backend-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-backend\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[shapegrad.backends]\ntoy = toy_backend:ToyBackend\n")
    code = """
        import shapegrad as sg
        print(sorted(sg.backend_info()['backends']))
        with sg.use_backend('toy'):
            grads = sg.Gradients()
            x = sg.tensor([1.0, 2.0]).trace(grads)
            (x * x).sum().backward()
            print(x.backend, grads[x].tolist())
    """
    result = _python(code, PYTHONPATH=f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "toy" in lines[0]
    assert lines[1] == "toy [2.0, 4.0]"


def test_a_plugin_without_the_interface_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad_backend.py").write_text("class Bad:\n    name = 'bad'\n")
    dist = tmp_path / "bad_backend-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: bad-backend\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[shapegrad.backends]\nbad = bad_backend:Bad\n")
    result = _python("import shapegrad as sg; sg.set_backend('bad')", PYTHONPATH=str(tmp_path))
    assert "lacks the Backend interface" in result.stderr


def test_random_numbers_are_seeded_per_generator(backend: str) -> None:
    a = sg.randn(3, 3, generator=sg.Generator(5)).numpy()
    b = sg.randn(3, 3, generator=sg.Generator(5)).numpy()
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert sg.randn(2, generator=sg.Generator(5)).backend == backend


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_same_seed_draws_the_same_values_on_numpy_and_strict(dtype: str) -> None:
    """issue #24 item 19: ``sg.rand`` in float32 drew other values on the strict backend
    (float64 draws rounded) than on NumPy (float32 draws) for the same seed."""

    def draws(name: str) -> list[np.ndarray]:
        gen = sg.Generator(7, backend=name)
        return [
            sg.rand(3, 4, dtype=dtype, generator=gen).numpy(),
            sg.randn(5, dtype=dtype, generator=gen).numpy(),
            np.asarray(gen.backend.to_numpy(gen.uniform((6,), -2.0, 3.0, dtype=dtype))),  # dropout's draws
            sg.randint(0, 10, (8,), generator=gen).numpy(),
            sg.randperm(9, generator=gen).numpy(),
        ]

    for ours, theirs in zip(draws("numpy"), draws("strict"), strict=True):
        assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)


def test_a_generator_permutes_on_every_backend(backend: str) -> None:
    first = sg.Generator(7).permutation(50)
    assert isinstance(first, np.ndarray)
    assert sorted(first.tolist()) == list(range(50))
    np.testing.assert_array_equal(first, sg.Generator(7).permutation(50))
    assert first.tolist() != list(range(50))


def test_a_whole_training_step_runs_on_every_backend(backend: str) -> None:
    from typing import Literal as L

    model = sg.nn.Sequential(
        sg.nn.Linear[L[4], L[8]](generator=sg.Generator(0)),
        sg.nn.ReLU(),
        sg.nn.Linear[L[8], L[3]](generator=sg.Generator(1)),
    )
    grads = model.alloc_grads()
    opt = sg.optim.AdamW(model, lr=0.05)
    x = sg.randn(16, 4, generator=sg.Generator(2))
    y = sg.tensor([0, 1, 2, 0] * 4)
    losses = []
    for _ in range(30):
        grads.zero()
        loss = sg.losses.cross_entropy(model(x.trace(grads)), y)
        loss.backward()
        opt.update(model, grads)
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_layers_built_under_a_second_backend_object_live_on_it() -> None:
    from shapegrad_backends.numpy_backend import NumpyBackend

    other = NumpyBackend()
    with sg.use_backend(other):
        layer = sg.nn.Linear(2, 1)
        out = layer(sg.ones(3, 2))
    assert layer.weight._backend is other and out.shape == (3, 1)
    with pytest.raises(sg.BackendError, match="two backend objects both named 'numpy'"):
        sg.ones(2, backend="numpy") + out.reshape(3)[:2]


def test_a_device_array_given_to_another_backend_is_a_backend_error(numpy_backend: str) -> None:
    class DeviceArray:
        """Refuses host conversion the way a CuPy array does."""

        shape = (3,)

        def __array__(self, *args: object, **kwargs: object) -> None:
            raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()`")

    with pytest.raises(sg.BackendError, match=r"tensor\(\) for backend 'numpy' got a .*DeviceArray it cannot read"):
        sg.tensor(DeviceArray())


ALLOCATION_CHURN = """
import resource
import numpy as np
import shapegrad as sg
from shapegrad_backends import _allocator
sg.zeros(2)  # the NumPy backend is created
def step():  # a training step's pattern: a burst of activation-sized arrays, then all freed
    arrays = [np.ones(2_000_000, dtype=np.float32) for _ in range(6)]
    del arrays
step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    step()
print(_allocator.tune_malloc(), (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) // 20)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the allocator tuning is glibc's")
def test_the_numpy_backend_keeps_freed_arrays_instead_of_page_faulting_them_in_again() -> None:
    tuned = _python(ALLOCATION_CHURN)
    untuned = _python(ALLOCATION_CHURN, SHAPEGRAD_MALLOC_TUNING="0")
    state, faults = tuned.stdout.split()
    if state == "not glibc":
        pytest.skip("not glibc")
    untuned_state, untuned_faults = untuned.stdout.split()
    assert (state, untuned_state) == ("tuned", "disabled"), tuned.stderr + untuned.stderr
    # 48 MB allocated and freed per step: without the tuning each step maps fresh memory and
    # faults it in (thousands of 4 KiB pages, or some 24 where transparent huge pages back it,
    # as CI saw once: 34); with it the freed arrays are reused and nothing faults.
    tuned_count, untuned_count = int(faults), int(untuned_faults)
    assert untuned_count >= 20 and tuned_count * 4 < untuned_count and tuned_count < 100, (faults, untuned_faults)


def test_shapegrad_numba_0_runs_the_reference_passes_without_importing_numba() -> None:
    code = """
    import sys
    import numpy as np
    import shapegrad as sg
    grads = sg.Gradients()
    x = sg.tensor(np.arange(12.0, dtype=np.float32).reshape(1, 1, 3, 4)).trace(grads)
    sg.nn.MaxPool2d(2)(x).relu().sum().backward()
    print("numba" in sys.modules, grads[x].numpy().sum())
    """
    off = _python(code, SHAPEGRAD_NUMBA="0")
    assert off.stdout.split() == ["False", "2.0"], off.stderr
    if importlib.util.find_spec("numba") is not None:  # the same program with the kernels
        on = _python(code)
        assert on.stdout.split() == ["True", "2.0"], on.stderr
