"""The benchmark runs in quick mode so that it cannot rot; no test asserts a time."""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _benchmark_module(name: str) -> ModuleType:
    """A module of benchmarks/ (``run``, ``gpu``), imported as the scripts import each other."""
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module(name)


def _run_benchmark(script: str, *args: str, timeout: int) -> subprocess.CompletedProcess[str]:
    """``python benchmarks/<script> <args>`` from the repository root; fails the test unless it
    exits cleanly."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_benchmark_quick_mode_runs_and_checks_losses_agree() -> None:
    result = _run_benchmark("run.py", "--quick", "--threads", "1", timeout=900)
    assert "same initialisation, same batches, final loss" in result.stdout
    cases = (
        "MLP step",
        "CNN step",
        "1,000-op chain",
        "Per-op cost, 1 thread",
        "untraced (PyTorch: no_grad)",
        "peak resident memory",
        "first step",
        "further steps",
        "whole process",
        "Workloads of issue #26",
    )
    for case in cases:
        assert case in result.stdout
    if importlib.util.find_spec("torch") is not None:  # each workload is checked against its twin
        workloads = ("CIFAR CNN", "GRU cell", "tiny ViT", "wide MLP 1024", "greedy decoding", "batch 8, 16 tokens")
        for case in (*workloads, "torch.compile column: skipped in --quick", "GRU cell × 24 steps (the workload)"):
            assert case in result.stdout


@pytest.mark.parametrize("n", range(1, 8))
def test_benchmark_rounds_let_every_contender_follow_every_other_equally_often(n: int) -> None:
    run = _benchmark_module("run")
    orders = run.balanced_orders(n)
    follows: dict[tuple[int, int], int] = {}
    for order in orders:
        assert sorted(order) == list(range(n))
        for before, after in itertools.pairwise(order):
            follows[before, after] = follows.get((before, after), 0) + 1
    assert len(follows) == n * (n - 1)
    assert len(set(follows.values())) <= 1


def test_a_ratio_over_whole_runs_is_the_median_of_each_runs_own_ratio() -> None:
    run = _benchmark_module("run")
    # Three runs at different machine speeds: the ratio is 1.0, 1.1 and 0.9 run by run, while
    # the medians of the times alone (20 ÷ 22) would say 0.91.
    runs = [[("case", 10.0, 10.0)], [("case", 22.0, 20.0)], [("case", 27.0, 30.0)]]
    assert run.median_ratio(runs, (0, 1), (0, 2)) == "1.00"
    assert run.median_time(runs, 0, 1) == 22.0
    assert run.median_ratio([[("case", 1.0, None)]], (0, 1), (0, 2)) == "–"


def test_the_gpu_fused_kernel_comparison_runs_on_the_emulated_cupy() -> None:
    gpu = _benchmark_module("gpu")
    from conftest import emulated_cupy_backend

    speedups = gpu.fused_speedups(emulated_cupy_backend(), lambda: None, shape=(16, 8), number=1, repeat=1)
    assert set(speedups) == {f"{name} forward+backward" for name in gpu.ACTIVATIONS} | {"Adam update"}
    assert all(value > 0 for value in speedups.values())


def test_the_gpu_compile_row_runs_on_the_emulated_cupy() -> None:
    gpu = _benchmark_module("gpu")
    from conftest import emulated_cupy_backend

    row = gpu.compiled_row(emulated_cupy_backend(), lambda: None, batch=8, number=1, repeat=1)
    assert row["eager"] > 0 and row["compiled"] > 0
    # No CuPy replay yet: the row says the compiled step ran eagerly, and why.
    assert row["reason"] is not None and "NumPy backend only" in row["reason"]


def test_the_gpu_check_script_parses() -> None:
    result = subprocess.run(
        ["bash", "-n", str(ROOT / "benchmarks" / "gpu_check.sh")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_the_distributed_benchmark_runs_at_two_ranks() -> None:
    import shutil

    pytest.importorskip("mpi4py", reason="needs mpi4py: pip install -e '.[dev]'")
    mpiexec = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("no mpiexec found (pip install mpich)")
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "distributed.py"
    result = subprocess.run(
        [mpiexec, "-n", "2", sys.executable, str(script), "--quick"], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "Allreduce" in result.stdout and "overlap" in result.stdout and "| 256 |" in result.stdout


def test_the_gpt_phase_breakdown_runs() -> None:
    pytest.importorskip("torch")
    result = _run_benchmark("gpt_phases.py", "--quick", timeout=600)
    for row in ("forward + loss", "backward", "update", "whole step", "exact GELU", "cross-entropy"):
        assert row in result.stdout


def test_the_cifar_ab_runs() -> None:
    """benchmarks/cifar_ab.py: the CIFAR CNN step, sg.compile and PyTorch eager, and the phases."""
    pytest.importorskip("torch")
    result = _run_benchmark("cifar_ab.py", "--rounds", "2", "--phases", timeout=600)
    for row in ("shapegrad", "sg.compile ÷ shapegrad eager", "÷ PyTorch eager", "forward + loss"):
        assert row in result.stdout


def test_the_decoding_profile_runs() -> None:
    """benchmarks/decode_profile.py: the compiled decoding replay by array function, and its
    products on NumPy (and XLA where JAX is installed)."""
    result = _run_benchmark("decode_profile.py", "--quick", timeout=600)
    for row in ("compiled decoding step", "narrowed to the last position", "matmul", "the replay's products", "NumPy"):
        assert row in result.stdout


def test_the_wide_mlp_floor_split_runs() -> None:
    """benchmarks/wide_mlp_floor.py: the compiled wide MLP step, its products alone, Adam's update
    against its memory traffic, and the floor."""
    result = _run_benchmark("wide_mlp_floor.py", "--quick", timeout=600)
    for row in ("BLAS floor", "sg.compile step", "its products alone", "everything else", "Adam's update"):
        assert row in result.stdout


def test_the_transposed_products_comparison_runs() -> None:
    """benchmarks/transposed_products.py: g @ Wᵀ against (W @ gᵀ)ᵀ per shape, with the call this
    process's measurement took (the result checked to be the direct call's bits)."""
    result = _run_benchmark("transposed_products.py", "--quick", timeout=300)
    assert "| 128×384 | 16 |" in result.stdout and "(W @ gᵀ)ᵀ" in result.stdout


def test_the_tape_floor_runs() -> None:
    """benchmarks/tape_floor.py: the 1,000-op chain in shapegrad against a bare tape calling the
    same rules (its gradients checked equal first), the NumPy arithmetic alone and PyTorch."""
    result = _run_benchmark("tape_floor.py", "--quick", timeout=600)
    for row in ("shapegrad:", "bare tape (no checks):", "NumPy arithmetic alone:", "÷ the bare tape's"):
        assert row in result.stdout


def test_the_gru_op_cost_runs() -> None:
    """benchmarks/gru_op_cost.py: the hand-written GRU step in shapegrad, PyTorch and NumPy with
    its backward pass written out (the same losses checked first), per recorded op."""
    result = _run_benchmark("gru_op_cost.py", "--quick", timeout=600)
    for row in ("hidden 8, batch 4", "hidden 128, batch 32", "beyond it per op: shapegrad"):
        assert row in result.stdout


def test_lstm_benchmark_quick_mode_runs_and_reports_the_ratio() -> None:
    """issue #25: benchmarks/lstm.py times sg.nn.LSTM against torch.nn.LSTM and reports the ratio."""
    pytest.importorskip("torch")
    result = _run_benchmark("lstm.py", "--quick", timeout=600)
    assert "same weights and input" in result.stdout
    assert "ratio shapegrad / torch:" in result.stdout


def test_lstm_benchmark_profile_splits_the_step_into_products_and_kernels() -> None:
    """issue #25: ``benchmarks/lstm.py --profile`` says where the step's time goes (the matrix
    products alone, the recurrences' element-wise work, the rest) before the ratio."""
    pytest.importorskip("torch")
    pytest.importorskip("numba")
    result = _run_benchmark("lstm.py", "--quick", "--profile", timeout=600)
    for row in ("recurrence forward", "its W_hh gradient", "matrix products together", "element-wise", "the rest"):
        assert row in result.stdout
    assert "ratio shapegrad / torch:" in result.stdout
