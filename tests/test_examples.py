"""The README's demo and the scenario examples run, and the demo reaches its accuracy floor.
The example models write to a temporary folder (``--output``), never to ``examples/output/``,
where a user's own runs are."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MODELS = ["train_digits", "gpt", "char_rnn", "resnet", "vae", "train_digits_distributed"]


def _run(*args: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=EXAMPLES.parent, timeout=600, check=False, env=env
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_digits_demo_reaches_the_accuracy_floor(tmp_path: Path) -> None:
    """issue #24 item 19: the suite wrote over a user's plot in examples/output/."""
    out = _run(str(EXAMPLES / "train_digits.py"), "--quick", "--floor", "0.95", "--output", str(tmp_path))
    assert "MLP" in out and "CNN" in out
    assert (tmp_path / "training.png").stat().st_size > 10_000
    assert (tmp_path / "cnn.safetensors").exists()


@pytest.mark.parametrize("name", MODELS)
def test_an_example_help_shows_its_docstring_as_written(name: str) -> None:
    """issue #24 item 19: four examples' ``--help`` reflowed their docstring into one paragraph."""
    out = _run(str(EXAMPLES / f"{name}.py"), "--help")
    source = (EXAMPLES / f"{name}.py").read_text()
    commands = [line for line in source.split('"""')[1].splitlines() if line.lstrip().startswith(("python", "mpiexec"))]
    assert commands and all(line in out.splitlines() for line in commands), out
    assert "--output" in out and "--threads" in out


@pytest.mark.parametrize(
    ("args", "environment", "threads"),
    [([], {}, 1), (["--threads", "2"], {}, 2), ([], {"OPENBLAS_NUM_THREADS": "2"}, 2)],
    ids=["default", "flag", "environment"],
)
def test_the_examples_blas_threads(args: list[str], environment: dict[str, str], threads: int) -> None:
    """issue #24 item 19: the examples ran one spinning BLAS thread per core, 5-20x slower
    beside busy processes; now one by default, ``--threads N``, or what the environment says."""
    code = (
        "import sys; sys.path.insert(0, 'examples')\n"
        f"sys.argv = ['example', *{args!r}]\n"
        "import numpy, _cli\n"
        "from threadpoolctl import threadpool_info\n"
        "_cli.parse(_cli.example_parser(None))\n"
        "print(sorted({pool['num_threads'] for pool in threadpool_info() if pool['user_api'] == 'blas'}))\n"
    )
    base = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    }
    assert _run("-c", code, env={**base, **environment}).strip() == str([threads])


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


def test_digits_demo_runs_unchanged_on_the_cupy_backend(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The same script, not a line changed, with the CuPy backend's code active (over the
    emulated CuPy): what a user does with ``SHAPEGRAD_BACKEND=cupy`` on a GPU machine."""
    import runpy

    from conftest import emulated_cupy_backend

    import shapegrad as sg

    monkeypatch.setattr(sys, "argv", ["train_digits.py", "--quick", "--floor", "0.95", "--output", str(tmp_path)])
    monkeypatch.syspath_prepend(str(EXAMPLES))  # as running the script puts its folder first
    with sg.use_backend(emulated_cupy_backend()):
        runpy.run_path(str(EXAMPLES / "train_digits.py"), run_name="__main__")


def test_distributed_digits_example_trains_on_two_ranks(tmp_path: Path) -> None:
    """The README's distributed command, at 2 ranks, to its accuracy floor."""
    import shutil

    pytest.importorskip("mpi4py", reason="needs mpi4py: pip install -e '.[dev]' (or '.[mpi]')")
    mpiexec = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("no mpiexec found (pip install mpich)")
    result = subprocess.run(
        [
            mpiexec,
            "-n",
            "2",
            sys.executable,
            str(EXAMPLES / "train_digits_distributed.py"),
            "--quick",
            "--output",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=EXAMPLES.parent,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "ranks 2, global batch 64" in result.stdout
    assert (tmp_path / "cnn_distributed.safetensors").exists()


def test_gpt_example_beats_the_unigram_baseline(tmp_path: Path) -> None:
    out = _run(str(EXAMPLES / "gpt.py"), "--quick", "--output", str(tmp_path))
    assert "| parameters | steps |" in out and "sample (temperature 0.8, top-k 8)" in out
    assert (tmp_path / "gpt.safetensors").exists()


def test_char_rnn_example_beats_the_unigram_baseline(tmp_path: Path) -> None:
    """issue #25: the character-level LSTM's --quick run beats the unigram baseline (it asserts so)."""
    out = _run(str(EXAMPLES / "char_rnn.py"), "--quick", "--output", str(tmp_path))
    assert "| parameters | steps |" in out and "sample (temperature 0.8)" in out
    assert (tmp_path / "char_rnn.safetensors").exists()


def test_resnet_example_reaches_its_floor(tmp_path: Path) -> None:
    out = _run(str(EXAMPLES / "resnet.py"), "--quick", "--output", str(tmp_path))
    assert "| parameters | epochs |" in out
    assert (tmp_path / "resnet.safetensors").exists()


def test_vae_example_learns_and_draws_its_grid(tmp_path: Path) -> None:
    out = _run(str(EXAMPLES / "vae.py"), "--quick", "--output", str(tmp_path))
    assert "test -ELBO at end" in out
    assert (tmp_path / "vae.png").stat().st_size > 5_000
