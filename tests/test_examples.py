"""The README's demo and the scenario examples run, and the demo reaches its accuracy floor."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _run(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=EXAMPLES.parent, timeout=600, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_digits_demo_reaches_the_accuracy_floor() -> None:
    out = _run(str(EXAMPLES / "train_digits.py"), "--quick", "--floor", "0.95")
    assert "MLP" in out and "CNN" in out
    assert (EXAMPLES / "output" / "training.png").stat().st_size > 10_000
    assert (EXAMPLES / "output" / "cnn.safetensors").exists()


@pytest.mark.parametrize("name", ["multi_input", "multi_output_dag", "learned_constant", "unused_parameter"])
def test_scenario_example_runs(name: str) -> None:
    out = _run(str(EXAMPLES / f"{name}.py"))
    assert out.strip()


def test_readme_first_model_runs_and_learns() -> None:
    import re

    readme = (EXAMPLES.parent / "README.md").read_text()
    code = re.search(r"## A first model\n\n```python\n(.*?)```", readme, re.S)
    assert code is not None, "README lost its first-model example"
    namespace: dict[str, object] = {}
    exec(compile(code.group(1), "README.md", "exec"), namespace)
    loss = namespace["loss"]
    assert loss.item() < 0.1  # type: ignore[attr-defined] -- a Tensor from the README's code


def test_digits_demo_runs_unchanged_on_the_cupy_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same script, not a line changed, with the CuPy backend's code active (over the
    emulated CuPy): what a user does with ``SHAPEGRAD_BACKEND=cupy`` on a GPU machine."""
    import runpy

    from conftest import emulated_cupy_backend

    import shapegrad as sg

    monkeypatch.setattr(sys, "argv", ["train_digits.py", "--quick", "--floor", "0.95"])
    with sg.use_backend(emulated_cupy_backend()):
        runpy.run_path(str(EXAMPLES / "train_digits.py"), run_name="__main__")


def test_distributed_digits_example_trains_on_two_ranks() -> None:
    """The README's distributed command, at 2 ranks, to its accuracy floor."""
    import shutil

    pytest.importorskip("mpi4py", reason="needs mpi4py: pip install -e '.[dev]' (or '.[mpi]')")
    mpiexec = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("no mpiexec found (pip install mpich)")
    result = subprocess.run(
        [mpiexec, "-n", "2", sys.executable, str(EXAMPLES / "train_digits_distributed.py"), "--quick"],
        capture_output=True,
        text=True,
        cwd=EXAMPLES.parent,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "ranks 2, global batch 64" in result.stdout
    assert (EXAMPLES / "output" / "cnn_distributed.safetensors").exists()


def test_gpt_example_beats_the_unigram_baseline() -> None:
    out = _run(str(EXAMPLES / "gpt.py"), "--quick")
    assert "| parameters | steps |" in out and "sample (temperature 0.8, top-k 8)" in out
    assert (EXAMPLES / "output" / "gpt.safetensors").exists()


def test_resnet_example_reaches_its_floor() -> None:
    out = _run(str(EXAMPLES / "resnet.py"), "--quick")
    assert "| parameters | epochs |" in out
    assert (EXAMPLES / "output" / "resnet.safetensors").exists()


def test_vae_example_learns_and_draws_its_grid() -> None:
    out = _run(str(EXAMPLES / "vae.py"), "--quick")
    assert "test -ELBO at end" in out
    assert (EXAMPLES / "output" / "vae.png").stat().st_size > 5_000
