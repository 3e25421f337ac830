"""sg.compile writes a sum of arrays that are zero but for one slice each (the gradient of an
input read through slices: a GRU's gates, a fused q/k/v projection) slice by slice into one
array, and keeps the sums wherever that could change a value (a GRU step: test_compile.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import shapegrad as sg


@pytest.fixture(autouse=True)
def _records_on_numpy(numpy_backend: str) -> None:
    """sg.compile records on the NumPy backend only."""


def _x(seed: int, shape: tuple[int, ...] = (4, 12)) -> Any:
    return sg.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _same_every_call(step: Any, shape: tuple[int, ...] = (4, 12)) -> Any:
    compiled = sg.compile(step)
    for s in range(4):
        got, want = compiled(_x(s, shape)), step(_x(s, shape))
        for g, w in zip(
            got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,), strict=True
        ):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    assert compiled.eager_reason is None
    (recording,) = compiled.recordings
    return recording


def test_slices_that_do_not_overlap_are_written_into_one_array_with_no_sums() -> None:
    def gates(x: Any) -> Any:
        a = sg.zeros(4, 12)
        a[:, :4] = x[:, :4]
        z = sg.zeros(4, 12)
        z[:, 4:8] = x[:, 4:8] * 2.0
        s = a + z
        z2 = sg.zeros(4, 12)
        z2[:, 8:] = x[:, 8:] - 1.0
        return (z2 + s) * 3.0  # the new slice on the left of the sum too

    recording = _same_every_call(gates)
    assert recording.scattered_operations == 2, recording
    assert "2 sums written slice by slice" in repr(recording)


def test_overlapping_slices_are_summed() -> None:
    def overlapping(x: Any) -> Any:
        a = sg.zeros(4, 12)
        a[:, :6] = x[:, :6]
        z = sg.zeros(4, 12)
        z[:, 4:] = x[:, 4:] * 2.0  # columns 4 and 5 are in both
        return (a + z) * 3.0

    assert _same_every_call(overlapping).scattered_operations == 0


def test_a_sum_whose_operand_is_read_elsewhere_is_kept() -> None:
    def read_again(x: Any) -> Any:
        a = sg.zeros(4, 12)
        a[:, :4] = x[:, :4]
        z = sg.zeros(4, 12)
        z[:, 4:8] = x[:, 4:8]
        s = (a + z) * 3.0
        return s, a * 1.0, z.sum()  # both operands still read after the sum

    def given_back(x: Any) -> Any:
        a = sg.zeros(4, 12)
        a[:, :4] = x[:, :4]
        z = sg.zeros(4, 12)
        z[:, 4:8] = x[:, 4:8]
        return (a + z) * 3.0, a

    def written_twice(x: Any) -> Any:
        a = sg.zeros(4, 12)
        a[:, :4] = x[:, :4]
        z = sg.zeros(4, 12)
        z[:, 4:8] = x[:, 4:8]
        z[:, 0:1] = x[:, 0:1]  # a second write, into a's slice
        return (a + z) * 3.0

    for step in (read_again, given_back, written_twice):
        assert _same_every_call(step).scattered_operations == 0, step.__name__
