"""sg.compile's rewrites of a recording's array operations, each kept only where it gives
eager's values: a sum of arrays that are zero but for one slice each (the gradient of an
input read through slices: a GRU's gates, a fused q/k/v projection) written slice by slice
into one array; a matrix that many products read transposed (a recurrent weight) transposed
once into contiguous memory. A GRU step with both: test_compile.py."""

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


def _products(x: Any, w: Any, write_between: bool) -> Any:
    total = x @ w.T
    for i in range(9):
        if write_between and i == 4:
            w[0, 0] = 5.0  # the products after it read another matrix
        total = total + x @ w.T
    return total


def _replays_as_eager(write_between: bool, rows: int, inner: int, outer: int) -> Any:
    compiled = sg.compile(lambda x, w: _products(x, w, write_between))
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = sg.tensor(rng.standard_normal((rows, inner)).astype(np.float32))
        w = rng.standard_normal((outer, inner)).astype(np.float32)
        np.testing.assert_array_equal(
            compiled(x, sg.tensor(w.copy())).numpy(), _products(x, sg.tensor(w.copy()), write_between).numpy()
        )
    assert compiled.eager_reason is None
    (recording,) = compiled.recordings
    return recording


@pytest.mark.usefixtures("direct_products")  # the rewrite of the direct a @ b.T
@pytest.mark.parametrize("write_between", [False, True])
def test_a_matrix_many_products_read_transposed_is_transposed_once_unless_written_between(
    write_between: bool,
) -> None:
    recording = _replays_as_eager(write_between, 32, 384, 128)
    assert recording.transposed_once == (0 if write_between else 10), recording


@pytest.mark.usefixtures("direct_products")  # the rewrite of the direct a @ b.T
def test_a_matrix_whose_products_read_few_rows_is_left_as_it_is() -> None:
    # ten products of 16 rows, or of one (a decoding loop's, with a tied embedding's
    # transpose): the copy would move the whole matrix to save next to nothing
    for rows in (16, 1):
        assert _replays_as_eager(False, rows, 384, 128).transposed_once == 0


@pytest.mark.usefixtures("direct_products")  # the rewrite of the direct a @ b.T
def test_products_whose_bits_the_copy_would_change_keep_the_transposed_view() -> None:
    # at odd shapes a BLAS may take another path for a contiguous matrix: a different
    # rounding, which the rewrite must not bring in (on OpenBLAS here, 30×33 by 33×65)
    for shape in ((30, 33, 65), (26, 100, 31), (40, 129, 9)):
        _replays_as_eager(False, *shape)


@pytest.mark.usefixtures("direct_products")  # the rewrite of the direct a @ b.T
def test_a_matrix_read_transposed_by_few_products_is_left_as_it_is() -> None:
    def few(x: Any, w: Any) -> Any:
        return x @ w.T + (x * 2.0) @ w.T

    compiled = sg.compile(few)
    x, w = _x(0, (4, 12)), _x(1, (6, 12))
    for _ in range(3):
        np.testing.assert_array_equal(compiled(x, w).numpy(), few(x, w).numpy())
    assert compiled.recordings[0].transposed_once == 0


def _hoisted(x: Any, w: Any, write_between: bool = False) -> Any:
    wt = w.T  # transposed once by the step itself, read by every product
    total = x @ wt
    for i in range(9):
        if write_between and i == 4:
            w[0, 0] = 5.0  # seen through wt, a view of w, by the products after it
        total = total + x @ wt
    return total, wt


@pytest.mark.usefixtures("direct_products")  # the rewrite of the direct a @ b.T
def test_a_transpose_many_products_read_is_made_contiguous_unless_given_back() -> None:
    rng = np.random.default_rng(0)
    x = sg.tensor(rng.standard_normal((32, 384)).astype(np.float32))
    w = sg.tensor(rng.standard_normal((128, 384)).astype(np.float32))
    total_only = sg.compile(lambda x, w: _hoisted(x, w)[0])
    both = sg.compile(_hoisted)
    for _ in range(3):
        np.testing.assert_array_equal(total_only(x, w).numpy(), _hoisted(x, w)[0].numpy())
        total, transposed = both(x, w)
        np.testing.assert_array_equal(total.numpy(), _hoisted(x, w)[0].numpy())
        assert np.shares_memory(transposed.numpy(), w.numpy())  # a view of w, as eager's w.T
    assert total_only.recordings[0].transposed_once == 10
    assert both.recordings[0].transposed_once == 0


@pytest.mark.usefixtures("direct_products")  # the rewrite of the direct a @ b.T
def test_a_transpose_whose_matrix_is_written_between_its_products_stays_a_view() -> None:
    compiled = sg.compile(lambda x, w: _hoisted(x, w, True)[0])
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = sg.tensor(rng.standard_normal((32, 384)).astype(np.float32))
        w = rng.standard_normal((128, 384)).astype(np.float32)
        np.testing.assert_array_equal(
            compiled(x, sg.tensor(w.copy())).numpy(), _hoisted(x, sg.tensor(w.copy()), True)[0].numpy()
        )
    assert compiled.recordings[0].transposed_once == 0
