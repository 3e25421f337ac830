"""``sg.compile`` with its fused element-wise loops against the same replay without them, in one
process, one thread, beside PyTorch eager and ``torch.compile``, on issue #26's workloads.

    python benchmarks/compile_fusion.py            # with the torch.compile column
    python benchmarks/compile_fusion.py --quick    # without it, fewer rounds

The unfused twin is recorded with the NumPy backend's loop compiler turned off, which is the
replay a machine without numba gets; everything else (the weights, the data, the checks that
both reach eager's losses) is the same. Times are medians of interleaved rounds
(``run.compare``); ratios below 1 are faster.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402
import workloads  # noqa: E402

import shapegrad as sg  # noqa: E402
from shapegrad_backends import numba_kernels  # noqa: E402


def _recordings(step: Any) -> list[Any]:
    """The recordings of the compiled step a workload's ``ours_compiled`` closes over."""
    cells = [cell.cell_contents for cell in (step.__closure__ or ())]
    return [r for c in cells if isinstance(c, sg.CompiledStep) for r in c.recordings]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="no torch.compile column, three rounds")
    args = parser.parse_args()
    number, repeat = (1, 3) if args.quick else (3, 12)
    with run.pin_threads(1):
        rate = run.sgemm_rate()
        start = time.perf_counter()
        fused = workloads.build_all(with_compile=not args.quick, sgemm_rate=rate)
        built = time.perf_counter() - start
        compile_loop = numba_kernels.loop
        numba_kernels.loop = lambda source, name: None  # as without numba: no loop compiled
        try:
            unfused = workloads.build_all(with_compile=False, sgemm_rate=rate)
        finally:
            numba_kernels.loop = compile_loop
        print(f"built and checked in {built:.0f} s (fused twin), one thread")
        print()
        print("| workload | fused loops (distinct) | fused ÷ unfused | fused ÷ torch | fused ÷ torch.compile |")
        print("| --- | --- | ---: | ---: | ---: |")
        for w, plain in zip(fused, unfused, strict=True):
            assert w.ours_compiled is not None and plain.ours_compiled is not None
            contenders = {"fused": w.ours_compiled, "unfused": plain.ours_compiled}
            if w.eager is not None:
                contenders["torch"] = w.eager
            if not isinstance(w.compiled, str):
                contenders["torch.compile"] = w.compiled
            t = run.compare(contenders, number, repeat)
            (recording,) = _recordings(w.ours_compiled)
            loops = f"{recording.fused_operations} ops in {recording.fused_loops} ({len(recording.loop_sources)})"
            cells = [run.ratio(t["fused"], t.get(peer)) for peer in ("unfused", "torch", "torch.compile")]
            print(f"| {w.name} | {loops} | {' | '.join(cells)} |")
            times = ", ".join(f"{name} {seconds * 1e3:.2f} ms" for name, seconds in t.items())
            print(f"|  | {times} | | | |")


if __name__ == "__main__":
    main()
