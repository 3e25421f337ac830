"""sg.no_grad(): ops in a block or a decorated function record nothing, in that thread only."""

from __future__ import annotations

import contextvars
import gc
import threading
import weakref
from typing import Any

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import nn


def _layer() -> nn.Linear[Any, Any]:
    return nn.Linear(3, 2, generator=sg.Generator(0))


def test_an_untraced_forward_pass_through_parameters_records_nothing_inside(numpy_backend: str) -> None:
    """Outside the block an op on a parameter records a node (its gradient must reach it if the
    result meets a traced tensor later); inside, none: the same values, no graph."""
    layer = _layer()
    x = sg.ones(4, 3)
    outside = layer(x).tanh()
    with sg.no_grad():
        inside = layer(x).tanh()
    assert outside._node is not None  # pyright: ignore[reportPrivateUsage] -- the graph kept
    assert inside._node is None  # pyright: ignore[reportPrivateUsage]
    np.testing.assert_array_equal(inside.numpy(), outside.numpy())


def test_activations_are_not_kept_alive_by_the_output(numpy_backend: str) -> None:
    """An untraced forward pass otherwise keeps every activation a backward rule would read,
    through the output's graph, until the output is dropped; inside the block, none."""
    layer = _layer()

    def hidden_survives() -> bool:
        h = layer(sg.ones(4, 3))
        ref = weakref.ref(h._data)  # pyright: ignore[reportPrivateUsage] -- the activation's array
        out = h * h
        del h
        gc.collect()
        alive = ref() is not None
        del out
        return alive

    assert hidden_survives()  # the product's node holds h, which its rule reads
    with sg.no_grad():
        assert not hidden_survives()


def test_a_traced_input_gives_an_untraced_result_whose_backward_raises(numpy_backend: str) -> None:
    layer = _layer()
    grads = layer.alloc_grads()
    with sg.no_grad():
        loss = layer(sg.ones(4, 3).trace(grads)).sum()
    assert not loss.traced
    with pytest.raises(sg.TapeError, match="untraced"):
        loss.backward()  # pyright: ignore[reportDeprecated] -- untraced at run time, as the test means


def test_the_decorator_and_nesting_and_an_exception_restore_recording(numpy_backend: str) -> None:
    layer = _layer()
    grads = layer.alloc_grads()

    @sg.no_grad()
    def predict(x: Any) -> Any:
        with sg.no_grad():  # nested: leaving it keeps the outer block's switch
            pass
        return layer(x)

    assert not predict(sg.ones(2, 3).trace(grads)).traced
    with pytest.raises(ValueError, match="inside"), sg.no_grad():
        raise ValueError("inside")
    loss = layer(sg.ones(2, 3).trace(grads)).sum()
    assert loss.traced
    loss.backward()
    assert grads[layer.weight].shape == layer.weight.shape


def test_another_thread_keeps_recording(numpy_backend: str) -> None:
    """The switch is per thread: a block open in one thread leaves another's ops recorded."""
    layer = _layer()
    inside, done = threading.Event(), threading.Event()
    found: list[bool] = []

    def worker() -> None:
        inside.wait()
        grads = layer.alloc_grads()
        found.append(layer(sg.ones(2, 3).trace(grads)).traced)
        done.set()

    # Started in a copy of this context, as the backend's docs say, so that it makes its
    # tensors on the layer's backend whatever SHAPEGRAD_BACKEND names.
    thread = threading.Thread(target=contextvars.copy_context().run, args=(worker,))
    thread.start()
    with sg.no_grad():
        inside.set()
        done.wait()
        assert not layer(sg.ones(2, 3).trace(layer.alloc_grads())).traced
    thread.join()
    assert found == [True]


def test_a_compiled_training_step_inside_the_block_raises_as_eager(numpy_backend: str) -> None:
    """A compiled step's recordings are kept apart for calls inside the block: there eager
    gives an untraced loss, whose backward raises, and so does the compiled step (a replay
    of the recording made outside would have trained)."""
    layer = _layer()
    grads, opt = layer.alloc_grads(), sg.optim.SGD(layer, lr=0.1)

    def step(x: Any) -> Any:
        grads.zero()
        loss = (layer(x.trace(grads)) ** 2).sum()
        loss.backward()
        opt.update(layer, grads)
        return loss.detach()

    compiled = sg.compile(step)
    for _ in range(3):
        compiled(sg.ones(2, 3))
    before = layer.weight.numpy().copy()
    for run in (step, compiled):
        with sg.no_grad(), pytest.raises(sg.TapeError, match="untraced"):
            run(sg.ones(2, 3))
    np.testing.assert_array_equal(layer.weight.numpy(), before)


def test_a_decorated_generator_runs_each_item_inside_and_its_caller_outside(numpy_backend: str) -> None:
    """A generator function's body runs when it is iterated, after the call that made it has
    returned: it runs inside a block from each resumption to its next item, and the caller's
    code between items records as usual."""
    layer = _layer()
    x = sg.ones(2, 3)

    @sg.no_grad()
    def outputs(n: int) -> Any:
        total = 0
        for _ in range(n):
            y = layer(x)
            got = yield y._node is None  # pyright: ignore[reportPrivateUsage] -- recorded or not
            total += got or 0
        return total

    items = outputs(3)
    found = [next(items)]
    caller: list[bool] = []
    try:
        while True:
            caller.append(layer(x)._node is None)  # pyright: ignore[reportPrivateUsage]
            found.append(items.send(1))
    except StopIteration as stop:
        assert stop.value == 3
    assert found == [True, True, True]
    assert caller == [False, False, False]


def test_the_bare_decorator_works_as_pytorch_s(numpy_backend: str) -> None:
    """``@sg.no_grad`` without parentheses, as ``@torch.no_grad`` (PyTorch 2), decorates."""
    layer = _layer()

    @sg.no_grad
    def predict(x: Any) -> Any:
        return layer(x)

    assert predict(sg.ones(2, 3))._node is None  # pyright: ignore[reportPrivateUsage] -- nothing recorded
    assert layer(sg.ones(2, 3))._node is not None  # pyright: ignore[reportPrivateUsage]


def test_a_closed_generator_runs_its_finally_clause_inside_the_block(numpy_backend: str) -> None:
    """Closing a decorated generator (break out of a loop over it, or dropping it) runs its
    ``finally`` clauses inside a block, as PyTorch's wrapper does."""
    layer = _layer()
    found: list[bool] = []

    @sg.no_grad()
    def items() -> Any:
        try:
            while True:
                yield layer(sg.ones(1, 3))._node is None  # pyright: ignore[reportPrivateUsage]
        finally:
            found.append(layer(sg.ones(1, 3))._node is None)  # pyright: ignore[reportPrivateUsage]

    iterator = items()
    assert next(iterator)
    iterator.close()
    assert found == [True]


def test_a_function_checked_for_traced_tensors_runs_inside(numpy_backend: str) -> None:
    """Types do not follow the switch: a model annotated for training (OwnedTape in, OwnedTape
    out) gives untraced results inside the block, which its run-time check accepts there (and
    only there), instead of a TypeCheckError naming no cause."""
    from typing import Literal as L

    from shapegrad import OwnedTape, Tensor

    @sg.checked
    def double(x: Tensor[OwnedTape[Any], L[2], L[3]]) -> Tensor[OwnedTape[Any], L[2], L[3]]:
        return x * 2.0

    traced = sg.ones(2, 3).trace(sg.Gradients())
    with sg.no_grad():
        assert not double(traced).traced
    with pytest.raises(Exception, match="traced"):
        double(sg.ones(2, 3))  # outside: an untraced argument is refused as before
