"""``sg.summary``: every sub-module's path, class, output shape with its dims named as the
types name them, and parameter count (issue #25)."""

from __future__ import annotations

from typing import Any, Literal as L, TypeVar

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import Tensor
from shapegrad.nn import BatchNorm1d, Dropout, Linear, Module, ReLU, Sequential, T


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


B = TypeVar("B")


class MLP(Module):
    def __init__(self) -> None:
        self.encoder = Sequential(Linear[L[16], L[128]](), ReLU(), Linear[L[128], L[32]]())
        self.head = Linear[L[32], L[10]]()

    def __call__(self, x: Tensor[T, Batch, L[16]]) -> Tensor[T, Batch, L[10]]:
        return self.head(self.encoder(x))


def outputs(summary: sg.Summary) -> dict[str, str]:
    return {row.path: row.output for row in summary.rows}


def test_mlp_shows_its_dims_by_name(backend: str) -> None:
    """issue #25: the output shapes read ``(Batch, 128)``, a layer's sizes from its type."""
    report = sg.summary(MLP(), sg.zeros(4, 16))
    assert outputs(report) == {
        "": "(Batch, 10)",
        "encoder": "(Batch, 32)",
        "encoder.0": "(Batch, 128)",
        "encoder.1": "(Batch, 128)",
        "encoder.2": "(Batch, 32)",
        "head": "(Batch, 10)",
    }
    assert [row.shape for row in report.rows] == [(4, 10), (4, 32), (4, 128), (4, 128), (4, 32), (4, 10)]
    assert "(Batch, 128)" in str(report)


def test_nested_paths_and_classes_in_the_table() -> None:
    """issue #25: nested Sequential layers appear at their dotted paths (``encoder.0``)."""
    report = sg.summary(MLP(), sg.zeros(2, 16))
    assert [(row.path, row.class_name) for row in report.rows] == [
        ("", "MLP"),
        ("encoder", "Sequential"),
        ("encoder.0", "Linear[16, 128]"),
        ("encoder.1", "ReLU"),
        ("encoder.2", "Linear[128, 32]"),
        ("head", "Linear[32, 10]"),
    ]
    lines = str(report).splitlines()
    assert lines[0].split() == ["Module", "Class", "Output", "Parameters"]
    assert lines[3].split() == ["encoder", "Sequential", "(Batch,", "32)", "6,304"]
    assert lines[4].split() == ["encoder.0", "Linear[16,", "128]", "(Batch,", "128)", "2,176"]
    assert repr(report) == str(report)


def test_parameter_counts_total_num_parameters() -> None:
    """issue #25: each row counts its sub-tree's parameters; the total is
    ``model.num_parameters()``, split into trainable and frozen."""
    model = MLP().freeze("head")
    report = sg.summary(model, sg.zeros(2, 16))
    counts = {row.path: row.parameters for row in report.rows}
    assert counts == {
        "": 6634,
        "encoder": 6304,
        "encoder.0": 16 * 128 + 128,
        "encoder.1": 0,
        "encoder.2": 128 * 32 + 32,
        "head": 330,
    }
    assert report.total_parameters == model.num_parameters() == 6634
    assert report.trainable_parameters == model.num_parameters(trainable_only=True) == 6304
    assert report.frozen_parameters == 330
    assert str(report).splitlines()[-1] == "Total parameters: 6,634 (trainable 6,304, frozen 330)"


def test_a_tuple_output_shows_each_shape() -> None:
    """issue #25: a module returning a tuple shows each tensor's shape; an unannotated one
    in numbers."""

    class Heads(Module):
        def __init__(self) -> None:
            self.mean = Linear[L[8], L[2]]()
            self.log_var = Linear[L[8], L[2]]()

        def __call__(self, x: Tensor[T, Batch, L[8]]) -> tuple[Tensor[T, Batch, L[2]], Tensor[T, Batch, L[2]]]:
            return self.mean(x), self.log_var(x)

    class Unannotated(Module):
        def __init__(self) -> None:
            self.heads = Heads()

        def __call__(self, x: Any) -> Any:
            mean, log_var = self.heads(x)
            return mean, log_var.sum(axis=-1)

    report = sg.summary(Unannotated(), sg.zeros(3, 8))
    rows = {row.path: row for row in report.rows}
    assert rows["heads"].output == "(Batch, 2), (Batch, 2)"
    assert rows["heads"].shape == ((3, 2), (3, 2))
    # The mean is the tensor the heads named; the sum is a new one no annotation names.
    assert rows[""].output == "(Batch, 2), (3,)"
    assert rows[""].shape == ((3, 2), (3,))


def test_typevars_literals_and_unnamed_dims() -> None:
    """issue #25: a TypeVar of the user's annotation prints its name where nothing names the
    dim better; a dim computed by an op inside the forward pass prints its size."""

    class Block(Module):
        def __init__(self) -> None:
            self.inner = Linear[L[8], L[8]]()
            self.after = Linear[L[8], L[4]]()

        def __call__(self, x: Tensor[T, B, Seq, L[8]]) -> Tensor[T, B, Seq, L[4]]:
            return self.after(self.inner(x).relu())

    block = Block()
    report = sg.summary(block, sg.zeros(2, 5, 8))
    assert outputs(report) == {"": "(B, Seq, 4)", "inner": "(B, Seq, 8)", "after": "(2, 5, 4)"}

    class Outer(Module):
        def __init__(self) -> None:
            self.block = block

        def __call__(self, x: Tensor[T, Batch, Seq, L[8]]) -> Tensor[T, Batch, Seq, L[4]]:
            return self.block(x)

    # The enclosing annotation's Batch is the name the TypeVar is bound to.
    assert outputs(sg.summary(Outer(), sg.zeros(2, 5, 8)))["block.inner"] == "(Batch, Seq, 8)"


def test_dims_defined_inside_a_function_are_named() -> None:
    """issue #25: string annotations naming a dim defined in the enclosing function resolve
    where the run-time check resolves them."""

    class Tokens(sg.Dim): ...

    class Local(Module):
        def __init__(self) -> None:
            self.proj = Linear[L[6], L[3]]()

        def __call__(self, x: Tensor[T, Tokens, L[6]]) -> Tensor[T, Tokens, L[3]]:
            return self.proj(x)

    assert outputs(sg.summary(Local(), sg.zeros(7, 6))) == {"": "(Tokens, 3)", "proj": "(Tokens, 3)"}


def test_unannotated_model_prints_numbers_and_counts_calls() -> None:
    """issue #25: without annotations the shapes are numbers; a module called twice shows
    its first output and the count; one never called shows ``-``."""

    class Twice(Module):
        def __init__(self) -> None:
            self.layer = Linear(6, 6)
            self.unused = Linear(6, 1)

        def __call__(self, x: Any) -> Any:
            return self.layer(self.layer(x))

    report = sg.summary(Twice(), sg.zeros(3, 6))
    rows = {row.path: row for row in report.rows}
    assert (rows["layer"].output, rows["layer"].calls) == ("(3, 6)", 2)
    assert (rows["unused"].output, rows["unused"].shape, rows["unused"].calls) == ("-", None, 0)
    assert "(3, 6) x2" in str(report)


def snapshot(model: Module) -> dict[str, Any]:
    modules = [m for _, m in model.named_modules()]
    classes = {cls for m in modules for cls in type(m).__mro__}
    return {
        "calls": {cls: vars(cls).get("__call__") for cls in classes},
        "attributes": [dict(vars(m)) for m in modules],
        "modes": [m.training for m in modules],
        "tensors": {path: t.numpy().copy() for path, t in model.named_tensors()},
    }


def assert_unchanged(model: Module, before: dict[str, Any]) -> None:
    after = snapshot(model)
    assert after["calls"] == before["calls"]
    assert after["attributes"] == before["attributes"]
    assert after["modes"] == before["modes"]
    assert after["tensors"].keys() == before["tensors"].keys()
    for path, values in before["tensors"].items():
        np.testing.assert_array_equal(after["tensors"][path], values, err_msg=path)


class Normed(Module):
    def __init__(self) -> None:
        self.body = Sequential(Linear[L[4], L[3]](), BatchNorm1d[L[3]](), Dropout(0.5))

    def __call__(self, x: Tensor[T, Batch, L[4]]) -> Tensor[T, Batch, L[3]]:
        return self.body(x)


def test_the_model_is_unchanged_after_a_summary(backend: str) -> None:
    """issue #25: the classes' ``__call__``, every module's mode and attributes, and the
    batch-norm statistics are as before (the run is in eval mode), and so is the output."""
    model = Normed()
    x = sg.randn(6, 4, generator=sg.Generator(0))
    expected = model.eval()(x).numpy()
    model.train()
    model.body[2].eval()  # a mix of modes, each restored as it was
    before = snapshot(model)
    report = sg.summary(model, x)
    assert outputs(report)["body.1"] == "(Batch, 3)"
    assert_unchanged(model, before)
    np.testing.assert_array_equal(model.eval()(x).numpy(), expected)


def test_the_model_is_unchanged_after_an_exception_in_the_forward_pass() -> None:
    """issue #25: a forward pass that raises half-way leaves the model as it was, and the
    error reaches the caller, saying it came from the summary's run."""

    class Broken(Module):
        def __init__(self) -> None:
            self.first = Normed()
            self.second = Linear[L[5], L[2]]()

        def __call__(self, x: Tensor[T, Batch, L[4]]) -> Tensor[T, Batch, L[2]]:
            return self.second(self.first(x))  # 3 features into a 5-feature layer

    model = Broken()
    before = snapshot(model)
    with pytest.raises(sg.ShapeError) as caught:
        sg.summary(model, sg.zeros(6, 4))
    assert any("sg.summary ran Broken" in note for note in getattr(caught.value, "__notes__", []))
    assert_unchanged(model, before)
    # The classes are their own again: a call records nothing and runs as before.
    assert model.first(sg.zeros(6, 4)).shape == (6, 3)


def test_untraced_example_inputs_suffice() -> None:
    """issue #25: untraced inputs run the model, recording nothing on any tape: a training
    step afterwards sees only its own forward pass."""
    model = MLP()
    grads = model.alloc_grads()
    sg.summary(model, sg.zeros(2, 16))
    loss = model(sg.ones(2, 16).trace(grads)).sum()
    grads = loss.backward()
    assert grads[model.head.bias].tolist() == [2.0] * 10


def test_other_instances_of_a_class_run_unrecorded() -> None:
    """issue #25: a layer outside the model, of a class the model uses, is neither listed
    nor recorded while the summary runs."""
    outside = Linear[L[10], L[10]]()

    class Uses(Module):
        def __init__(self) -> None:
            self.inner = MLP()

        def __call__(self, x: Tensor[T, Batch, L[16]]) -> Tensor[T, Batch, L[10]]:
            return outside(self.inner(x))

    report = sg.summary(Uses(), sg.zeros(2, 16))
    assert [row.path for row in report.rows][:2] == ["", "inner"]
    assert all(row.calls == 1 for row in report.rows)


def test_a_non_module_is_refused() -> None:
    """issue #25: ``sg.summary`` of a plain function raises ShapegradError naming it."""

    def forward(x: Any) -> Any:
        return x

    with pytest.raises(sg.ShapegradError, match="expects a Module, found function"):
        sg.summary(forward, sg.zeros(2))
