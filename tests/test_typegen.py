"""The typed op surface is generated from one table (shapegrad/_opspec.py): the generated
blocks are up to date, every op in the table exists in each form it names with its
overloads, and every overloaded public op is in the table."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any, get_overloads

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import _typegen
from shapegrad._opspec import HAND_KINDS, OPS

ROOT = Path(__file__).resolve().parent.parent


def test_generated_blocks_are_up_to_date() -> None:
    assert _typegen.check() == [], "run: python shapegrad/_typegen.py"


def test_the_generator_runs_as_a_script_in_check_mode() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "shapegrad" / "_typegen.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _generated_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "shapegrad"
    copy.mkdir()
    for module in {*_typegen.ALIASES, _typegen.METHODS_MODULE, _typegen.FUNCTIONS_MODULE, _typegen.CREATION_MODULE}:
        target = copy.joinpath(*module.split(".")).with_suffix(".py")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_typegen._path(module).read_text())
    monkeypatch.setattr(_typegen, "PACKAGE", copy)
    return copy


def test_a_hand_edit_of_the_generated_functions_module_is_seen_as_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edited = _generated_copy(tmp_path, monkeypatch) / "_function_ops.py"
    edited.write_text(edited.read_text().replace("def add(a: Tensor[T, *S, N]", "def add(a: Tensor[T, *S, K]", 1))
    assert _typegen.check() == ["_function_ops"]


def test_an_implementation_s_new_docstring_makes_the_generated_forms_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The generated function form copies its implementation's signature and docstring."""
    edited = _generated_copy(tmp_path, monkeypatch) / "ops" / "elementwise.py"
    edited.write_text(edited.read_text().replace("``a + b`` with broadcasting.", "``a + b``, broadcast.", 1))
    assert "_function_ops" in _typegen.check()


def test_a_hand_edit_of_the_generated_methods_module_is_seen_as_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edited = _generated_copy(tmp_path, monkeypatch) / "_tensor_ops.py"
    edited.write_text(
        edited.read_text().replace(
            "def __add__(self: Tensor[Tape_, *S, N]", "def __add__(self: Tensor[Tape_, *S, K]", 1
        )
    )
    assert _typegen.check() == ["_tensor_ops"]


def test_no_hand_written_module_holds_generated_code() -> None:
    """The method forms live in the wholly generated _tensor_ops.py, which Tensor inherits,
    and the function forms in _function_ops.py; every other module is hand-written."""
    generated = {ROOT / "shapegrad" / "_tensor_ops.py", ROOT / "shapegrad" / "_function_ops.py"}
    for path in (ROOT / "shapegrad").rglob("*.py"):
        if path not in generated and path.name != "_typegen.py":
            assert "# <generated" not in path.read_text(), path
    assert sg.Tensor.__mro__[1].__name__ == "TensorOps"


TYPED_BY_TABLE = [op for op in OPS if op.kind not in HAND_KINDS]
TYPED_BY_SIGNATURE = [op for op in OPS if op.kind in HAND_KINDS]


@pytest.mark.parametrize("op", TYPED_BY_TABLE, ids=lambda op: op.name)
def test_every_op_in_the_table_has_its_typed_forms(op: Any) -> None:
    if op.module:
        function = getattr(importlib.import_module("shapegrad._function_ops"), op.name)
        assert len(get_overloads(function)) >= 2, f"sg.{op.name} has no generated overloads"
        assert callable(getattr(importlib.import_module(f"shapegrad.{op.module}"), op.name))  # the implementation
        assert getattr(sg, op.name, function) is function, f"sg.{op.name} is not the typed function"
    if op.method:
        method = getattr(sg.Tensor, op.method)
        assert len(get_overloads(method)) >= 2, f"Tensor.{op.method} has no generated overloads"
    if op.reflected:
        assert inspect.signature(getattr(sg.Tensor, op.reflected)).parameters["other"].annotation == "float"


@pytest.mark.parametrize("op", TYPED_BY_SIGNATURE, ids=lambda op: op.name)
def test_every_hand_typed_row_is_its_function_and_method(op: Any) -> None:
    """A hand-typed row: its function is in its module, exported where the row says, its
    signature states what its kind says, and its method is generated (or written by hand
    where the row says why)."""
    function = getattr(importlib.import_module(f"shapegrad.{op.module}"), op.name)
    namespace = sg.losses if op.kind == "loss" else sg
    assert (getattr(namespace, op.name, None) is function) == (op.top_level or op.kind == "loss")
    signature = inspect.signature((get_overloads(function) or [function])[0])
    first = next(iter(signature.parameters.values()), None)
    if op.kind == "unary":
        assert first is not None
        assert (str(first.annotation), str(signature.return_annotation)) == ("Tensor[T, *S]", "Tensor[T, *S]"), op.name
    if op.kind == "untraced":
        assert str(signature.return_annotation).startswith("Tensor[NoTape"), op.name
    if op.method:
        owner = next(cls for cls in sg.Tensor.__mro__ if op.method in vars(cls))
        assert owner.__name__ == ("Tensor" if op.hand_method else "TensorOps"), op.name
    else:
        assert op.no_method, f"{op.name}: a row without a method says why"


def test_every_public_name_of_the_op_modules_is_a_row_or_says_why_not() -> None:
    """The op table and the code agree both ways: each public name of shapegrad/ops/*.py and
    shapegrad.losses is a row or in ``_opspec.NOT_OPS``; each row and NOT_OPS name exists."""
    from shapegrad._opspec import NOT_OPS

    public: set[str] = set(sg.losses.__all__)
    for info in pkgutil.iter_modules(sg.ops.__path__):
        public.update(getattr(importlib.import_module(f"shapegrad.ops.{info.name}"), "__all__", ()))
    rows = {op.name for op in OPS}
    assert public - rows - set(NOT_OPS) == set(), "give these a row in shapegrad/_opspec.py (or a NOT_OPS reason)"
    assert {op.name for op in OPS if op.module} - public == set(), "rows whose function is not public in its module"
    assert set(NOT_OPS) - public - {"cast"} == set(), "NOT_OPS names that no longer exist"
    exported_ops = {op.name for op in OPS if op.module and op.top_level and op.kind != "loss"}
    assert exported_ops <= set(sg.__all__)


def test_every_overloaded_public_op_is_in_the_table() -> None:
    """The other way round: an op with typed overloads that the table does not know would be
    hand-typed again."""
    from shapegrad._opspec import SIGNATURE_METHODS

    # The table's ops, and the hand-typed ops whose methods it generates from their signatures.
    known = {op.name for op in OPS} | {op.method for op in OPS if op.method} | {name for _, name in SIGNATURE_METHODS}
    hand_typed = {"zeros", "ones", "full", "rand", "randn", "backward"}  # creation by sizes; seeds
    loss_names = set(sg.losses.__all__)
    overloaded = {
        name for name in sg.__all__ if inspect.isfunction(getattr(sg, name)) and get_overloads(getattr(sg, name))
    }
    assert overloaded - known - hand_typed - loss_names == set()
    methods = {
        name
        for cls in sg.Tensor.__mro__[:2]  # Tensor and its generated TensorOps
        for name, value in vars(cls).items()
        if inspect.isfunction(value) and get_overloads(value)  # plain functions (not slot wrappers)
    }
    assert methods - known - {"backward"} == set()


@pytest.mark.parametrize(
    ("function", "operator"),
    [
        (sg.less, np.less),
        (sg.less_equal, np.less_equal),
        (sg.greater, np.greater),
        (sg.greater_equal, np.greater_equal),
        (sg.equal, np.equal),
        (sg.not_equal, np.not_equal),
    ],
)
def test_comparison_function_forms_match_numpy_on_either_side(function: Any, operator: Any) -> None:
    a = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]], dtype=np.float32)
    b = np.array([2.0, 2.0, 2.0], dtype=np.float32)
    out = function(sg.tensor(a), sg.tensor(b))
    assert not out.traced
    np.testing.assert_array_equal(out.numpy(), operator(a, b))
    np.testing.assert_array_equal(function(2.0, sg.tensor(a)).numpy(), operator(2.0, a))
    np.testing.assert_array_equal(function(sg.tensor(a), 2.0).numpy(), operator(a, 2.0))


def test_method_forms_call_the_function_forms() -> None:
    x = sg.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    np.testing.assert_allclose(x.mean((1, 2)).numpy(), sg.mean(x, (1, 2)).numpy())
    np.testing.assert_allclose(x.std(1, correction=1).numpy(), np.std(x.numpy(), axis=1, ddof=1), rtol=1e-6)
    assert x.permute(2, 0, 1).shape == sg.permute(x, (2, 0, 1)).shape == (4, 2, 3)
    assert x[:, 0].shape == (2, 4) and x[..., None].shape == (2, 3, 4, 1) and x[None].shape == (1, 2, 3, 4)
    assert x.expand_dims(1).squeeze(1).shape == (2, 3, 4)
    assert x.flatten().shape == (2, 12)
    assert sg.concat([x, x], any_axis=2).shape == (2, 3, 8) and sg.stack([x, x], any_axis=-1).shape == (2, 3, 4, 2)
    assert x.maximum(1.0).shape == x.minimum(x).shape == (2, 3, 4)


def test_squeeze_by_keyword_axis_checks_the_size() -> None:
    x = sg.ones(2, 1, 3)
    assert x.squeeze(any_axis=1).shape == (2, 3)
    with pytest.raises(sg.ShapeError, match="expected to have size 1"):
        x.squeeze(any_axis=2)


def test_same_conv_keeps_height_and_width_and_refuses_an_even_kernel() -> None:
    conv = sg.nn.SameConv2d(5, dilation=2, in_channels=3, out_channels=4)
    assert conv(sg.ones(2, 3, 9, 7)).shape == (2, 4, 9, 7)
    with pytest.raises(sg.ShapeError, match="odd kernel_size"):
        sg.nn.SameConv2d(4, in_channels=3, out_channels=4)


def test_prod_and_open_dims_at_run_time() -> None:
    from typing import Literal as L

    Flat = sg.Tensor[sg.NoTape, L[2], sg.Prod[L[3], L[4]]]
    assert sg.cast(sg.ones(2, 12), Flat).shape == (2, 12)
    with pytest.raises(Exception, match="12"):
        sg.cast(sg.ones(2, 11), Flat)
    assert sg.cast(sg.ones(2, 5), sg.Tensor[sg.NoTape, L[2], sg.Open]).shape == (2, 5)


def test_sum_half_and_twice_dims_are_checked_as_numbers_at_run_time() -> None:
    from typing import Literal as L

    Joined = sg.Tensor[sg.NoTape, L[2], sg.Sum[L[3], L[4]]]
    pair = sg.concat((sg.ones(2, 3), sg.ones(2, 4)), axis=-1)  # typed Sum[L[3], L[4]]
    assert sg.cast(pair, Joined).shape == (2, 7)
    with pytest.raises(Exception, match="7"):
        sg.cast(sg.ones(2, 6), Joined)
    Pooled = sg.Tensor[sg.NoTape, L[1], L[1], sg.Half[L[7]], sg.Twice[L[3]]]
    assert sg.cast(sg.ones(1, 1, 3, 6), Pooled).shape == (1, 1, 3, 6)  # 7 // 2, as PyTorch floors
    with pytest.raises(Exception, match="3"):
        sg.cast(sg.ones(1, 1, 4, 6), Pooled)


def test_a_plain_int_for_a_dim_sized_layer_is_refused() -> None:
    class Hidden(sg.Dim): ...

    with pytest.raises(sg.ShapeError, match=r"write Hidden\(64\)"):
        sg.nn.Linear[Hidden, Hidden](64, 64)
    assert sg.nn.Linear[Hidden, Hidden](Hidden(64), Hidden(64)).weight.shape == (64, 64)


def _functions_of_a_tensor() -> set[str]:
    """Public functions whose first parameter is annotated as a tensor."""
    found: set[str] = set()
    for name in sg.__all__:
        function = getattr(sg, name)
        if not inspect.isfunction(function):
            continue
        signature = inspect.signature((get_overloads(function) or [function])[0])
        parameters = list(signature.parameters.values())
        if parameters and "Tensor" in str(parameters[0].annotation):
            found.add(name)
    return found


def test_every_function_of_a_tensor_has_a_method_unless_the_table_says_why_not() -> None:
    """One rule for method forms (issue #25): ``sg.f(x, ...)`` is also ``x.f(...)``, typed
    alike, unless ``_opspec.NO_METHOD`` gives the reason; and the other way round, no reason is
    kept for a function that has a method or is gone."""
    from shapegrad._opspec import NO_METHOD

    functions = _functions_of_a_tensor()
    without = {name for name in functions if not hasattr(sg.Tensor, name)}
    assert without - set(NO_METHOD) == set(), "give these a method (_opspec.SIGNATURE_METHODS) or a reason"
    assert {name for name in NO_METHOD if hasattr(sg.Tensor, name)} == set(), "these have a method now"


@pytest.mark.parametrize(
    ("method", "call"),
    [
        ("topk", lambda x: x.topk(2)),
        ("prod", lambda x: x.prod(axis=1)),
        ("norm", lambda x: x.norm()),
        ("tril", lambda x: x.tril()),
        ("diagonal", lambda x: x.diagonal()),
        ("sort", lambda x: x.sort(descending=True)),
        ("split", lambda x: x.split(1, axis=0)),
        ("add", lambda x: x.add(x)),
        ("matmul", lambda x: x.matmul(x)),
        ("greater", lambda x: x.greater(x)),
    ],
)
def test_a_generated_method_is_its_function(method: str, call: Any) -> None:
    x = sg.tensor([[3.0, 1.0], [2.0, 4.0]])
    ours = call(x)
    theirs = call(_AsFunction(method, x))
    for a, b in zip(
        ours if isinstance(ours, tuple) else (ours,), theirs if isinstance(theirs, tuple) else (theirs,), strict=True
    ):
        assert np.array_equal(a.numpy(), b.numpy())


class _AsFunction:
    """``x`` whose method ``name`` calls ``sg.name(x, ...)`` instead."""

    def __init__(self, name: str, x: Any) -> None:
        self._name, self._x = name, x

    def __getattr__(self, attribute: str) -> Any:
        if attribute != self._name:
            raise AttributeError(attribute)
        function = getattr(sg, attribute)
        return lambda *args, **kwargs: function(
            self._x, *[a._x if isinstance(a, _AsFunction) else a for a in args], **kwargs
        )
