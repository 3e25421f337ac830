"""``g @ Wᵀ`` through BLAS's direct call against its swapped twin ``(W @ gᵀ)ᵀ`` (made C-ordered),
one thread, at the shapes of a layer's input gradient, with what ``shapegrad._products``
decided for each shape in this process (it takes the swapped call where it measures it at
most 0.9× the direct one and the two give the same bits).

    python benchmarks/transposed_products.py            # about 20 s
    python benchmarks/transposed_products.py --quick    # a few shapes (CI)

Which call is faster depends on the BLAS build and the CPU: OpenBLAS's SkylakeX kernels (an
AVX-512 CPU) are several times slower for ``g @ Wᵀ`` at a few rows, its Haswell kernels are
not (``OPENBLAS_CORETYPE=Haswell python benchmarks/transposed_products.py`` on such a CPU).
"""

from __future__ import annotations

import argparse
import os
import timeit
from typing import Any

for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(name, "1")

import numpy as np  # noqa: E402

import shapegrad._products as products  # noqa: E402

WEIGHTS = ((128, 384), (384, 128), (256, 256), (1024, 1024), (4096, 1024))
ROWS = (8, 16, 32, 64, 128)


def _best(fn: Any, repeat: int) -> float:
    """The best time of one call, in µs, over ``repeat`` rounds of enough calls for 20 ms."""
    once = min(timeit.repeat(fn, number=1, repeat=3))
    number = max(1, int(0.02 / max(once, 1e-7)))
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few shapes, fewer rounds (CI)")
    args = parser.parse_args()
    weights, rows, repeat = (WEIGHTS[:2], ROWS[1:3], 3) if args.quick else (WEIGHTS, ROWS, 7)
    rng = np.random.default_rng(0)
    print("| weight (out × in) | rows | g @ Wᵀ | (W @ gᵀ)ᵀ | ratio | same bits | taken |")
    print("| --- | ---: | ---: | ---: | ---: | --- | --- |")
    for columns, inner in weights:
        w = rng.standard_normal((columns, inner)).astype(np.float32)
        for m in rows:
            g = rng.standard_normal((m, inner)).astype(np.float32)
            direct = _best(lambda g=g, w=w: g @ w.T, repeat)
            swapped = _best(lambda g=g, w=w: np.ascontiguousarray((w @ g.T).T), repeat)
            same = bool(np.array_equal(g @ w.T, (w @ g.T).T))
            found = products.times_transposed(np, g, w)
            np.testing.assert_array_equal(found, g @ w.T)  # whichever call it took: the direct call's bits
            taken = [v for k, v in products._decided.items() if k[:3] == (m, inner, columns)]  # noqa: SLF001
            print(
                f"| {columns}×{inner} | {m} | {direct:.1f} µs | {swapped:.1f} µs | {swapped / direct:.2f} | "
                f"{'yes' if same else 'no'} | {('swapped' if taken[0] else 'direct') if taken else 'not measured'} |"
            )


if __name__ == "__main__":
    main()
