"""Tapes and gradients: the dfdx tracker's scenarios, each with a real assertion on values."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

import shapegrad as sg


def test_two_inputs_traced_with_one_grads_share_one_tape(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0, 2.0]).trace(grads)
    y = sg.tensor([3.0, 5.0]).trace(grads)
    loss = (x * y + x).sum()
    returned = loss.backward()
    assert returned is grads
    assert grads[x].tolist() == [4.0, 6.0]
    assert grads[y].tolist() == [1.0, 2.0]


def test_untraced_operand_may_be_on_either_side(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0, 2.0]).trace(grads)
    c = sg.tensor([10.0, 20.0])
    (c * x + c - x).sum().backward()
    assert grads[x].tolist() == [9.0, 19.0]


def test_two_tapes_merge_and_both_gradients_see_the_result(numpy_backend: str) -> None:
    g1, g2 = sg.Gradients(), sg.Gradients()
    x = sg.tensor([1.0, 2.0]).trace(g1)
    y = sg.tensor([3.0, 4.0]).trace(g2)
    (x * y).sum().backward()
    # dfdx left the right-hand tape empty after a merge; here both see everything.
    for grads in (g1, g2):
        assert grads[x].tolist() == [3.0, 4.0]
        assert grads[y].tolist() == [1.0, 2.0]


def test_merge_order_does_not_matter(numpy_backend: str) -> None:
    results = []
    for swap in (False, True):
        g1, g2 = sg.Gradients(), sg.Gradients()
        x = sg.tensor([1.0, 2.0]).trace(g1)
        y = sg.tensor([3.0, 4.0]).trace(g2)
        z = (y * x) if swap else (x * y)
        z.exp().sum().backward()
        results.append((g1[x].tolist(), g2[y].tolist()))
    assert results[0] == results[1]


def test_three_outputs_in_one_pass_equal_backward_of_their_sum(numpy_backend: str) -> None:
    data = np.array([0.5, -1.0, 2.0])

    def outputs(grads: sg.Gradients[None]) -> tuple[sg.AnyTensor, ...]:
        x = sg.tensor(data).trace(grads)
        h = x.tanh()
        return x, (h * h).sum(), h.exp().sum(), (h * x).mean()

    g_multi = sg.Gradients()
    x1, a, b, c = outputs(g_multi)
    sg.backward(a, b, c)
    g_sum = sg.Gradients()
    x2, a2, b2, c2 = outputs(g_sum)
    (a2 + b2 + c2).backward()
    np.testing.assert_allclose(g_multi[x1].numpy(), g_sum[x2].numpy(), rtol=1e-12)


def test_backward_on_each_output_in_turn_accumulates(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0, 2.0]).trace(grads)
    h = x * 3.0
    first = (h * h).sum()
    second = h.sum()
    first.backward()
    assert grads[x].tolist() == [18.0, 36.0]
    second.backward()
    assert grads[x].tolist() == [21.0, 39.0]


def test_non_scalar_outputs_take_an_explicit_seed(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0, 2.0]).trace(grads)
    y = x * x
    with pytest.raises(sg.TapeError, match=r"rank-0.*shape \(2,\)"):
        sg.backward(y)
    sg.backward(y, seeds=[sg.tensor([1.0, 0.5])])
    assert grads[x].tolist() == [2.0, 2.0]
    with pytest.raises(sg.ShapeError, match=r"expected shape \(2,\), found \(3,\)"):
        sg.backward(x * 2.0, seeds=[[1.0, 1.0, 1.0]])


def test_a_parameter_is_the_only_traced_leaf(numpy_backend: str) -> None:
    grads = sg.Gradients()
    constant = sg.nn.parameter(sg.tensor([2.0, -1.0]))
    traced = constant.trace(grads)
    loss = (traced * traced).sum()
    loss.backward()
    assert grads[traced].tolist() == [4.0, -2.0]
    assert grads[constant].tolist() == [4.0, -2.0]


def test_gradient_of_a_leaf_never_reached_is_a_clear_error(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0]).trace(grads)
    unused = sg.tensor([2.0]).trace(grads)
    (x * 2.0).sum().backward()
    with pytest.raises(sg.TapeError, match="no gradient reached"):
        grads[unused]
    assert grads.get(unused) is None
    assert unused not in grads and x in grads


def test_gradient_of_an_intermediate_is_refused(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0]).trace(grads)
    with pytest.raises(sg.TapeError, match="traced leaf"):
        grads[x * 2.0]


def test_backward_on_an_untraced_tensor_is_a_tape_error(numpy_backend: str) -> None:
    with pytest.raises(sg.TapeError, match="untraced"):
        sg.backward(sg.tensor(1.0))  # pyright: ignore[reportArgumentType] -- the mistake under test


def test_trace_twice_is_refused(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0]).trace(grads)
    with pytest.raises(sg.TapeError, match="already traced"):
        x.trace(grads)  # pyright: ignore[reportAttributeAccessIssue] -- the mistake under test


def test_a_tape_ends_at_zero_and_old_tensors_say_so(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0]).trace(grads)
    stale = (x * 2.0).sum()
    grads.zero()
    with pytest.raises(sg.TapeError, match="ended"):
        stale.backward()
    fresh = sg.tensor([1.0]).trace(grads)
    with pytest.raises(sg.TapeError, match="ended"):
        _ = fresh * x
    (fresh * 3.0).sum().backward()
    assert grads[fresh].tolist() == [3.0]


def test_a_tape_belongs_to_its_thread(numpy_backend: str) -> None:
    import threading

    grads = sg.Gradients()
    x = sg.tensor([1.0]).trace(grads)
    errors: list[BaseException] = []

    def misuse() -> None:
        try:
            _ = x * 2.0
        except sg.TapeError as exc:
            errors.append(exc)

    thread = threading.Thread(target=misuse)
    thread.start()
    thread.join()
    assert errors and "thread" in str(errors[0])


def test_gradients_accumulate_where_a_value_is_reused(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor(3.0).trace(grads)
    y = x * x * x + x
    y.backward()
    assert grads[x].item() == 28.0


def test_a_deep_graph_backpropagates_without_recursion(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor(1.0).trace(grads)
    y = x
    for _ in range(100_000):
        y = y + 1e-6
    y.backward()
    assert grads[x].item() == 1.0


def test_a_long_training_loop_does_not_grow_memory(numpy_backend: str) -> None:
    w = sg.nn.parameter(sg.ones(8))

    class Tiny(sg.nn.Module):
        def __init__(self) -> None:
            self.w = w

    model = Tiny()
    grads = model.alloc_grads()
    x = sg.ones(4, 8)

    def step() -> None:
        grads.zero()
        h = x.trace(grads) * model.w
        loss = (h * h).mean()
        loss.backward()

    for _ in range(200):
        step()
    gc.collect()
    tracemalloc.start()
    for _ in range(1_000):
        step()
    gc.collect()
    before, _ = tracemalloc.get_traced_memory()
    for _ in range(9_000):
        step()
    gc.collect()
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert after - before < 64 * 1024, f"memory grew by {after - before} bytes over 9,000 steps"


def test_inputs_traced_with_a_model_s_gradients_only_carry_the_tape(numpy_backend: str) -> None:
    from typing import Literal as L

    layer = sg.nn.Linear[L[3], L[2]]()
    grads = layer.alloc_grads()
    carrier = sg.ones(4, 3).trace(grads)
    kept = sg.ones(4, 3).trace(grads, keep_grad=True)
    (layer(carrier).sum() + layer(kept).sum()).backward()
    assert set(grads.received()) == {"weight", "bias"}
    with pytest.raises(sg.TapeError, match="only carries the tape.*keep_grad=True"):
        grads[carrier]
    np.testing.assert_allclose(grads[kept].numpy(), np.tile(layer.weight.numpy().sum(axis=1), (4, 1)), rtol=1e-6)


def test_free_standing_gradients_keep_input_gradients_by_default(numpy_backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0, 2.0]).trace(grads, keep_grad=False)
    y = sg.tensor([3.0, 4.0]).trace(grads)
    (x * y).sum().backward()
    assert grads[y].tolist() == [1.0, 2.0]
    with pytest.raises(sg.TapeError, match="only carries the tape"):
        grads[x]
