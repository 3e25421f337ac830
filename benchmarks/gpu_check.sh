#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and CuPy: the GPU training benchmark and the fused-kernel
# comparison, then the whole test suite with the CuPy backend as the default (every test, not
# only the backend-parametrised ones, runs on the real CuPy; CPU CI proves the suite is
# backend-correct by running it on the emulated CuPy the same way). Every failure is listed:
# the run does not stop early.
#
# The lent H200 machine has CuPy and PyTorch but no network, and lacks some of our
# dependencies. First, here (with network), in the repository root:
#   bash benchmarks/gpu_check.sh --fetch-wheels
# which downloads them as Python 3.12 x86-64 wheels into .whl/ (ignored by git), then run
# this script there with .whl carried. Output also goes to $OUT/gpu_check.log when $OUT is set.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--fetch-wheels" ]; then
    platforms=()
    for tag in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
        platforms+=(--platform "$tag")
    done
    rm -rf .whl && mkdir -p .whl
    # What shapegrad and its tests import that the device machine may lack; one version each.
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        "${platforms[@]}" -d .whl jaxtyping wadler_lindig beartype safetensors array-api-strict
    ls .whl
    exit 0
fi
log="${OUT:-/tmp}/gpu_check.log"
if compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
# Offline: build with the machine's own setuptools, so that the entry points are registered;
# where that cannot build, register them by hand beside the carried wheels.
if ! python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . > /tmp/editable.log 2>&1; then
    echo "editable install failed (/tmp/editable.log); registering the entry points by hand" >&2
    python3 - <<'PY'
import pathlib
import tomllib

site = pathlib.Path("/tmp/site")
project = tomllib.loads(pathlib.Path("pyproject.toml").read_text())["project"]
info = site / f"shapegrad-{project['version']}.dist-info"
info.mkdir(parents=True, exist_ok=True)
(info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: shapegrad\nVersion: {project['version']}\n")
points = project["entry-points"]["shapegrad.backends"]
(info / "entry_points.txt").write_text(
    "[shapegrad.backends]\n" + "".join(f"{name} = {target}\n" for name, target in points.items())
)
link = site / "shapegrad_backends"
if not link.exists():
    link.symlink_to(pathlib.Path("backends").resolve())
PY
    export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONUNBUFFERED=1
# The device machine runs commands as root, where Open MPI's mpiexec refuses to start unless
# told; and pytest-benchmark there refuses to load beside xdist, in the tests' own nested
# pytest runs too.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PYTEST_ADDOPTS="-p no:benchmark${PYTEST_ADDOPTS:+ $PYTEST_ADDOPTS}"
{
    python3 -c "import shapegrad as sg; info = sg.backend_info(); print(info); assert info['backends']['cupy'] == 'available'"
    status=0
    # The figures first: a device lease is short, and the suite takes longer.
    SHAPEGRAD_BACKEND=cupy python3 benchmarks/gpu.py || status=$?
    # The device machine has pytest-xdist and pytest-timeout: the suite spread over its cores,
    # a file to a worker (their compile caches are per file), and no test allowed to hang it.
    parallel=()
    if python3 -c "import xdist, pytest_timeout" 2> /dev/null; then
        parallel=(-n "${SHAPEGRAD_GPU_WORKERS:-12}" --dist loadfile --timeout 120)
    fi
    # The static-typing suites run pyright and friends, which the device machine lacks and
    # which do not touch a backend.
    SHAPEGRAD_BACKEND=cupy python3 -m pytest -q -rfE -p no:cacheprovider "${parallel[@]}" --durations 15 tests \
        --ignore=tests/test_typecheck.py --ignore=tests/test_lint.py --ignore=tests/test_benchmarks.py \
        --ignore=tests/test_typegen.py --ignore=tests/test_typing_speed.py --ignore=tests/test_checkers.py \
        --ignore=tests/test_pyrefly_sizes.py || status=$?
    exit "$status"
} 2>&1 | tee "$log"
