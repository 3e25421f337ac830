#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and CuPy: the test suite with the CuPy backend active (the
# backend-parametrised tests then run on the real CuPy too, unchanged), then the GPU
# training benchmark and the fused-kernel comparison.
#
# The lent H200 machine has CuPy, PyTorch, jaxtyping, safetensors, hypothesis, scikit-learn
# and setuptools but no network, beartype or array-api-strict: fetch those as wheels first
# (here, in the repository root; .whl/ is ignored by git):
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#       --implementation cp --platform manylinux2014_x86_64 -d .whl beartype array-api-strict
# and carry .whl with the run. Output also goes to $OUT/gpu_check.log when $OUT is set.
set -euo pipefail
cd "$(dirname "$0")/.."
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
{
    python3 -c "import shapegrad as sg; info = sg.backend_info(); print(info); assert info['backends']['cupy'] == 'available'"
    status=0
    SHAPEGRAD_BACKEND=cupy python3 -m pytest -q -rfE --maxfail=25 -p no:cacheprovider tests \
        --ignore=tests/test_typecheck.py --ignore=tests/test_lint.py --ignore=tests/test_benchmarks.py || status=$?
    SHAPEGRAD_BACKEND=cupy python3 benchmarks/gpu.py || status=$?
    exit "$status"
} 2>&1 | tee "$log"
