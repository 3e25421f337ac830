"""The command line every example model shares: its docstring as ``--help``, line breaks
kept; ``--output``, where it writes checkpoints and plots; ``--threads``, NumPy's BLAS threads.

Why one BLAS thread by default: the examples' matrices are small, so extra BLAS threads
gain little, and OpenBLAS's threads spin while they wait for work; beside other busy
processes they take the cores the run needs (measured on a 2-core machine shared with
other busy processes: ``gpt.py --quick`` trained in 5 s with one thread, 72 s with
OpenBLAS's two).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

OUTPUT = Path(__file__).resolve().parent / "output"
# A thread count given to the BLAS in the environment is the user's choice: it wins.
_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def example_parser(doc: str | None) -> argparse.ArgumentParser:
    """A parser whose ``--help`` shows ``doc`` as written, with ``--output`` and ``--threads``."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--output", type=Path, default=OUTPUT, help="folder for checkpoints and plots (default: examples/output)"
    )
    from_environment = any(os.environ.get(name) for name in _THREAD_VARIABLES)
    parser.add_argument(
        "--threads",
        type=int,
        default=0 if from_environment else 1,
        help="BLAS threads for NumPy's matrix products; 0 leaves the BLAS its own count "
        "(OPENBLAS_NUM_THREADS or OMP_NUM_THREADS if set, else one per core). "
        f"Default: {'0, as the environment sets it' if from_environment else '1'}",
    )
    return parser


def parse(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The parsed arguments, with the BLAS thread count applied and the output folder made."""
    args = parser.parse_args()
    if args.threads > 0:
        import numpy  # noqa: F401 -- threadpoolctl limits only the BLAS libraries already loaded
        from threadpoolctl import threadpool_limits  # pyright: ignore[reportMissingTypeStubs] -- threadpoolctl ships no stubs

        threadpool_limits(limits=args.threads, user_api="blas")
    args.output.mkdir(parents=True, exist_ok=True)
    return args
