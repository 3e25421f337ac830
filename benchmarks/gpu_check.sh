#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and CuPy: the whole test suite with the CuPy backend
# active (the backend-parametrised tests then run on cupy too, unchanged), then the GPU
# training benchmark. Wheels carried in .whl/ (beartype, safetensors, ...) are installed
# first where the machine cannot reach a registry.
set -euo pipefail
cd "$(dirname "$0")/.."
if compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
    export PYTHONPATH="/tmp/site:$PWD:$PWD/backends/..${PYTHONPATH:+:$PYTHONPATH}"
fi
python3 -m pip install -q --no-deps -e . 2>/dev/null || true
python3 -c "import shapegrad as sg; print(sg.backend_info())"
SHAPEGRAD_BACKEND=cupy python3 -m pytest -q -x -p no:cacheprovider tests --ignore=tests/test_typecheck.py --ignore=tests/test_benchmarks.py
SHAPEGRAD_BACKEND=cupy python3 benchmarks/gpu.py
