"""sg.compile and what a step's own Python decides around the recorded work: an error it catches,
an ``np.errstate`` or a warnings filter it enters. A replay runs none of that Python, so such a
step runs eagerly (with one CompileWarning) rather than replay what the recording took."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Literal as L

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import nn


@pytest.fixture(autouse=True)
def _records_on_numpy(numpy_backend: str) -> None:
    """sg.compile records on the NumPy backend only (see test_compile.py)."""


def _x() -> sg.Tensor[Any, Any, Any]:
    return sg.tensor(np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32))


def _labels_step(
    catch: bool,
) -> tuple[Callable[[Any, Any], Any], nn.Linear[L[4], L[3]]]:
    model = nn.Linear[L[4], L[3]](generator=sg.Generator(0))
    opt, grads = sg.optim.SGD(model, lr=0.1), model.alloc_grads()

    def step(x: Any, y: Any) -> Any:
        grads.zero()
        out = model(x.trace(grads))
        if catch:
            try:
                loss = sg.losses.cross_entropy(out, y)
            except sg.ShapeError:  # a batch with a bad label: another loss
                loss = (out**2).mean()
        else:
            loss = sg.losses.cross_entropy(out, y)
        loss.backward()
        opt.update(model, grads)
        return loss.detach()

    return step, model


def _run(step: Callable[[Any, Any], Any], label_rows: list[list[int]]) -> list[Any]:
    x, found = _x(), []
    for row in label_rows:
        try:
            found.append(step(x, sg.tensor(np.array(row))).numpy().copy())
        except sg.ShapeError as error:
            found.append(str(error))
    return found


def _same(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(
        np.array_equal(p, q) if isinstance(p, np.ndarray) else p == q for p, q in zip(a, b, strict=True)
    )


def _catching_like_eager(rows: list[list[int]], warning: str) -> Any:
    """The step that catches the range check's error, compiled, run over ``rows`` with the
    warning ``warning``: the same results and weights as eager; the compiled step."""
    eager_step, eager_model = _labels_step(catch=True)
    expected = _run(eager_step, rows)
    step, model = _labels_step(catch=True)
    compiled = sg.compile(step)
    with pytest.warns(sg.CompileWarning, match=warning):
        found = _run(compiled, rows)
    assert _same(found, expected)
    assert np.array_equal(model.weight.numpy(), eager_model.weight.numpy())
    return compiled


def test_a_range_check_the_step_catches_while_recording_runs_it_eagerly() -> None:
    rows = [[0, 5, 1], [0, 1, 2], [1, 2, 0]]  # recorded on the except path
    compiled = _catching_like_eager(rows, r"the step caught ShapeError: cross_entropy: labels must lie")
    assert compiled.eager_reason is not None and not compiled.recordings


def test_a_try_except_around_a_range_check_runs_eagerly_though_recorded_on_the_normal_path() -> None:
    rows = [[0, 1, 2], [0, 5, 1], [1, 2, 0]]  # a replay would raise where eager catches
    _catching_like_eager(rows, r"inside a try with an except \(at .*test_compile_caught.py")


def test_a_range_check_raising_out_of_the_step_still_raises_and_the_step_replays() -> None:
    step, _ = _labels_step(catch=False)
    compiled = sg.compile(step)
    x = _x()
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        with pytest.raises(sg.ShapeError, match="labels must lie"):
            compiled(x, sg.tensor(np.array([0, 5, 1])))  # recording: raises, nothing kept
        for row in ([0, 1, 2], [1, 2, 0], [2, 0, 1]):
            compiled(x, sg.tensor(np.array(row)))
        with pytest.raises(sg.ShapeError, match="labels must lie"):
            compiled(x, sg.tensor(np.array([7, 0, 0])))  # a replay raising, as eager does
    assert compiled.eager_reason is None
    assert len(compiled.recordings) == 1 and compiled.recordings[0].replays == 3


def _schedule(t: int) -> float:
    if t > 2:
        raise ValueError("schedule finished")
    return 0.1


@pytest.mark.parametrize("first_raises", [False, True])
def test_an_optimizer_update_raising_the_step_catches_runs_it_eagerly(first_raises: bool) -> None:
    def run(compiled: bool) -> tuple[list[Any], Any]:
        model = nn.Linear[L[4], L[3]](generator=sg.Generator(0))
        opt, grads = sg.optim.SGD(model, lr=_schedule), model.alloc_grads()
        if first_raises:
            opt.step_count = 5
        x = _x()

        def step(scale: Any) -> Any:
            grads.zero()
            loss = (model(x.trace(grads) * scale) ** 2).mean()
            loss.backward()
            try:
                opt.update(model, grads)
            except ValueError:
                loss = loss * 0.0
            return loss.detach()

        f = sg.compile(step) if compiled else step
        found = [f(sg.tensor(np.float32(i + 1))).numpy().copy() for i in range(5)]
        return found, model.weight.numpy().copy()

    expected, weight = run(False)
    caught = "the step caught ValueError: schedule finished" if first_raises else "inside a try with an except"
    with pytest.warns(sg.CompileWarning, match=caught):
        found, found_weight = run(True)
    assert _same(found, expected) and np.array_equal(found_weight, weight)


def test_an_operation_raising_the_step_catches_runs_it_eagerly() -> None:
    def step(x: Any, z: Any) -> Any:
        try:
            y = x / z
        except FloatingPointError:
            y = x * 0.0
        return y * 2.0 + 1.0

    compiled = sg.compile(step)
    x = sg.tensor(np.array([1.0, 2.0, 3.0], np.float32))
    with np.errstate(divide="raise"), pytest.warns(sg.CompileWarning, match="FloatingPointError"):
        for zs in ([1.0, 0.0, 3.0], [1.0, 2.0, 3.0]):
            z = sg.tensor(np.array(zs, np.float32))
            assert np.array_equal(compiled(x, z).numpy(), step(x, z).numpy())


def test_with_and_finally_blocks_still_replay() -> None:
    model = nn.Linear[L[4], L[3]](generator=sg.Generator(0))

    def step(x: Any, y: Any) -> Any:
        try:
            with sg.no_grad():
                loss = sg.losses.cross_entropy(model(x), y)
        finally:
            pass
        return loss

    compiled = sg.compile(step)
    x = _x()
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for row in ([0, 1, 2], [1, 2, 0], [2, 0, 1]):
            y = sg.tensor(np.array(row))
            assert np.array_equal(compiled(x, y).numpy(), step(x, y).numpy())
        with pytest.raises(sg.ShapeError, match="labels must lie"):
            compiled(x, sg.tensor(np.array([0, 9, 1])))
    assert compiled.eager_reason is None and compiled.recordings[0].replays == 3


def _ratio(x: Any, z: Any) -> Any:
    with np.errstate(divide="raise"):
        return (x / z) * 2.0 + 1.0


def test_an_errstate_entered_inside_the_step_runs_it_eagerly() -> None:
    compiled = sg.compile(_ratio)
    x = sg.tensor(np.array([1.0, 2.0, 3.0], np.float32))
    with pytest.warns(sg.CompileWarning, match=r"another NumPy error state \(divide='raise'"):
        compiled(x, sg.tensor(np.array([1.0, 2.0, 3.0], np.float32)))
    compiled(x, sg.tensor(np.array([2.0, 2.0, 2.0], np.float32)))
    with pytest.raises(FloatingPointError):  # as eager does; a replay gave inf
        compiled(x, sg.tensor(np.array([1.0, 0.0, 3.0], np.float32)))


def test_an_errstate_inside_the_step_of_the_settings_around_it_replays() -> None:
    def step(x: Any, z: Any) -> Any:
        with np.errstate(divide="warn"):  # NumPy's default: the same settings
            return (x / z) * 2.0 + 1.0

    compiled = sg.compile(step)
    x = sg.tensor(np.array([1.0, 2.0, 3.0], np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for _ in range(3):
            compiled(x, sg.tensor(np.array([1.0, 2.0, 3.0], np.float32)))
    assert compiled.eager_reason is None and compiled.recordings[0].replays == 2


def test_np_seterr_left_set_by_the_step_runs_it_eagerly() -> None:
    def step(x: Any) -> Any:
        y = x * 2.0
        np.seterr(divide="raise")
        return y

    before = np.geterr()
    try:
        compiled = sg.compile(step)
        with pytest.warns(sg.CompileWarning, match="another NumPy error state"):
            compiled(sg.ones(3))
    finally:
        np.seterr(**before)


class _TwoLayers(nn.Module):
    def __init__(self) -> None:
        g = sg.Generator(0)
        self.a = nn.Linear[L[3], L[2]](generator=g)
        self.b = nn.Linear[L[3], L[2]](generator=g)  # unused: the update warns

    def __call__(self, x: Any) -> Any:
        return self.a(x)


def test_a_warnings_filter_set_inside_the_step_runs_it_eagerly() -> None:
    model = _TwoLayers()
    opt, grads = sg.optim.SGD(model, lr=0.1, unused="warn"), model.alloc_grads()

    def step(x: Any) -> Any:
        grads.zero()
        loss = (model(x.trace(grads)) ** 2).mean()
        loss.backward()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt.update(model, grads)
        return loss.detach()

    compiled = sg.compile(step)
    with pytest.warns(sg.CompileWarning, match="other warnings filters"):
        compiled(sg.ones(2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a replay's update warned here, outside the step's filter
        for i in range(3):
            compiled(sg.ones(2, 3) * (i + 2))
