"""Loud, harmless failures: anomaly detection, hostile input, threads."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from typing import Any, Literal as L

import numpy as np
import pytest
from support.op_table import OPS

import shapegrad as sg


# --------------------------------------------------------------------------- anomalies
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_anomaly_in_forward_names_op_shapes_and_user_line(numpy_backend: str) -> None:
    x = sg.tensor([[1.0, -1.0]])
    with sg.detect_anomaly(), pytest.raises(sg.NumericalAnomalyError) as info:
        sg.log(x)  # the line the message must name
    message = str(info.value)
    assert "op 'log'" in message and "forward" in message
    assert "(1, 2)" in message
    assert f"{__file__}:" in message and "test_anomaly_in_forward" in message


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("op", ["div", "log"])
def test_anomaly_in_a_traced_forward_is_caught_too(numpy_backend: str, op: str) -> None:
    # Traced binary and unary ops record on a path of their own when no hook is set: turning
    # detection on must still reach them.
    grads = sg.Gradients()
    x = sg.tensor([[1.0, -1.0]]).trace(grads)
    with sg.detect_anomaly(), pytest.raises(sg.NumericalAnomalyError, match=f"op '{op}'"):
        x / 0.0 if op == "div" else sg.log(x)
    assert np.isinf((x / 0.0).numpy()).all()  # and off again after the block


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_anomaly_in_backward_names_the_op(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([0.0, 4.0]).trace(grads)
    with sg.detect_anomaly():
        y = x.sqrt().sum()  # finite forward, infinite gradient at 0
        with pytest.raises(
            sg.NumericalAnomalyError, match=r"op 'sqrt' produced NaN or Inf in the gradient of input 0 during backward"
        ):
            y.backward()


def test_anomaly_detection_is_off_by_default_and_scoped(numpy_backend: str) -> None:
    with np.errstate(divide="ignore"):
        assert np.isinf(sg.log(sg.tensor([0.0])).item())
        with sg.detect_anomaly():
            with pytest.raises(sg.NumericalAnomalyError):
                sg.log(sg.tensor([0.0]))
        assert np.isinf(sg.log(sg.tensor([0.0])).item())


def test_anomaly_detection_by_environment_variable() -> None:
    code = "import numpy as np, shapegrad as sg\nnp.seterr(all='ignore')\nsg.tensor([1.0]) / 0.0\n"
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "SHAPEGRAD_DETECT_ANOMALY": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert "NumericalAnomalyError: op 'div' produced NaN or Inf" in result.stderr


# --------------------------------------------------------------------------- hostile input
@pytest.mark.parametrize("op", [op.fn for op in OPS if op.float_only], ids=[op.name for op in OPS if op.float_only])
@pytest.mark.parametrize("data", [[1, 2, 3], [True, False, True]], ids=["int", "bool"])
def test_float_only_ops_refuse_integer_and_boolean_data(op: Any, data: list[Any], backend: str) -> None:
    with pytest.raises(sg.DTypeError, match="expects a floating-point tensor"):
        op(sg.tensor(data))


def test_object_string_and_ragged_data_are_refused(numpy_backend: str) -> None:
    with pytest.raises(sg.DTypeError, match="numeric or boolean"):
        sg.tensor(np.array([object(), object()]))
    with pytest.raises(sg.DTypeError, match="numeric or boolean"):
        sg.tensor(["a", "b"])
    with pytest.raises(sg.ShapeError, match="ragged"):
        sg.tensor([[1.0, 2.0], [3.0]])


def test_tracing_boolean_data_is_refused(numpy_backend: str) -> None:
    with pytest.raises(sg.DTypeError, match="trace"):
        sg.tensor([True]).trace(sg.Gradients())


def test_non_contiguous_and_negatively_strided_arrays_just_work(numpy_backend: str) -> None:
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    for view in (base[::-1], base[:, ::-2], base.T, base[1:, 2:][::2]):
        grads = sg.Gradients()
        x = sg.tensor(view).trace(grads)
        w = sg.tensor(np.ones((view.shape[1], 2)))
        ((x @ w).exp() * 1e-6).sum().backward()
        expected = (np.exp(view @ np.ones((view.shape[1], 2))) * 1e-6) @ np.ones((2, view.shape[1]))
        np.testing.assert_allclose(grads[x].numpy(), expected, rtol=1e-10)


def test_a_scalar_of_the_wrong_kind_is_refused(numpy_backend: str) -> None:
    with pytest.raises(sg.DTypeError, match="found str"):
        sg.ones(2) * "3"  # pyright: ignore[reportOperatorIssue] -- the mistake under test
    with pytest.raises(sg.DTypeError, match="at least one Tensor"):
        sg.add(1.0, 2.0)  # pyright: ignore[reportCallIssue, reportArgumentType] -- the mistake under test


def test_out_of_range_indices_are_shape_errors(numpy_backend: str) -> None:
    with pytest.raises(sg.ShapeError, match=r"\[0, 3\)"):
        sg.gather(sg.ones(3, 2), sg.tensor([0, 3]))
    with pytest.raises(sg.ShapeError, match="does not fit shape"):
        sg.ones(3, 2)[5]
    with pytest.raises(sg.DTypeError, match="integer indices"):
        sg.gather(sg.ones(3, 2), sg.tensor([0.0, 1.0]))


def test_reshape_and_creation_errors_name_the_shapes(numpy_backend: str) -> None:
    with pytest.raises(sg.ShapeError, match=r"cannot view shape \(2, 3\) \(6 elements\) as \(4, 2\)"):
        sg.ones(2, 3).reshape(4, 2)
    with pytest.raises(sg.ShapeError, match="non-negative"):
        sg.zeros(-1)
    with pytest.raises(sg.ShapeError, match="concat along axis 0: tensor 1 has shape"):
        sg.concat([sg.ones(2, 3), sg.ones(2, 4)])


# --------------------------------------------------------------------------- threads
class Small(sg.nn.Module):
    def __init__(self, seed: int) -> None:
        gen = sg.Generator(seed)
        self.l1 = sg.nn.Linear[L[8], L[16]](generator=gen)
        self.l2 = sg.nn.Linear[L[16], L[3]](generator=gen)

    def __call__(self, x: Any) -> Any:
        return self.l2(self.l1(x).tanh())


def train(seed: int, steps: int = 40) -> list[np.ndarray]:
    with sg.use_backend("numpy"):
        model = Small(seed)
        grads = model.alloc_grads()
        opt = sg.optim.Adam(model, lr=0.01)
        data = np.random.default_rng(seed)
        x = sg.tensor(data.standard_normal((32, 8)).astype(np.float32))
        y = sg.tensor(data.integers(0, 3, 32))
        for _ in range(steps):
            grads.zero()
            sg.losses.cross_entropy(model(x.trace(grads)), y).backward()
            opt.update(model, grads)
        return [t.numpy().copy() for t in model.parameters()]


def test_two_threads_train_bit_identically_to_one_after_the_other() -> None:
    sequential = [train(1), train(2)]
    results: dict[int, list[np.ndarray]] = {}
    threads = [threading.Thread(target=lambda s=s: results.__setitem__(s, train(s))) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for seed, expected in zip((1, 2), sequential, strict=False):
        for found, want in zip(results[seed], expected, strict=False):
            np.testing.assert_array_equal(found, want)


def test_backward_from_another_thread_is_refused(numpy_backend: str) -> None:
    grads = sg.Gradients()
    loss = (sg.tensor([1.0]).trace(grads) * 2.0).sum()
    errors: list[str] = []

    def other() -> None:
        try:
            loss.backward()
        except sg.TapeError as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert errors and "used from thread" in errors[0]
