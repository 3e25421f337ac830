"""PyTorch's spellings that shapegrad spells otherwise (``x.view``, ``x.unsqueeze``,
``x.float()``, ``p.add_(g)``, ``sg.cat``, ``x.gather(1, idx)``, ``x.to("cuda")``): the error
names shapegrad's spelling, and stays the error Python gives (``AttributeError``, so
``hasattr`` and ``getattr(..., default)`` behave as before). The checker still reports them:
typecheck/fail/torch_spellings.py."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import _torch_names
from shapegrad._tensor_ops import TensorOps


def _x() -> Any:
    return sg.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))


@pytest.mark.parametrize(
    ("name", "spelling"),
    [
        ("view", "x.reshape(...)"),
        ("view_as", "x.reshape(other.shape)"),
        ("unsqueeze", "x.expand_dims(axis)"),
        ("contiguous", "drop the call"),
        ("dim", "x.ndim"),
        ("numel", "x.size here; a property, no call"),
        ("float", 'x.astype("float32")'),
        ("double", 'x.astype("float64")'),
        ("half", 'x.astype("float16")'),
        ("long", 'x.astype("int64")'),
        ("int", 'x.astype("int32")'),
        ("bool", 'x.astype("bool")'),
        ("cuda", 'x.to("cupy")'),
        ("cpu", 'x.to("numpy")'),
        ("device", "x.backend"),
        ("grad", "grads[x]"),
        ("requires_grad_", "x = x.trace(grads)"),
        ("add_", "x += y"),
        ("sub_", "x -= y"),
        ("mul_", "x *= y"),
        ("div_", "x /= y"),
        ("zero_", "x[...] = 0"),
        ("fill_", "x[...] = value"),
        ("copy_", "x[...] = source"),
        ("masked_fill_", "x[mask] = value"),
        ("relu_", "x[...] = x.relu(...)"),  # every op method's in-place form
        ("clamp_", "x[...] = x.clamp(...)"),
        ("exp_", "x[...] = x.exp(...)"),
        ("expand", "x.broadcast_to(*sizes)"),
        ("t", "x.T"),
        ("where", "sg.where(condition, x, y)"),
    ],
)
def test_a_pytorch_tensor_spelling_names_shapegrad_s(name: str, spelling: str) -> None:
    x = _x()
    with pytest.raises(AttributeError) as info:
        getattr(x, name)
    message = str(info.value)
    assert message.startswith(f"'Tensor' object has no attribute '{name}': PyTorch's x.{name}"), message
    assert spelling in message, message
    assert info.value.name == name and info.value.obj is x
    assert not hasattr(x, name) and getattr(x, name, "default") == "default"
    assert not hasattr(sg.Tensor, name)


def test_the_suggested_tensor_spellings_run(numpy_backend: str) -> None:
    x = _x()
    assert x.reshape(3, 2).shape == (3, 2) and x.expand_dims(0).shape == (1, 2, 3)
    assert x.ndim == 2 and x.size == 6
    assert x.astype("float64").backend_dtype_name() == "float64"
    assert x.astype("int64").backend_dtype_name() == "int64"
    y = x.clone()
    with sg.no_grad():
        y += 1.0
        y[...] = y.clamp(0.0, 3.0)
    assert y.tolist() == [[1.0, 2.0, 3.0], [3.0, 3.0, 3.0]]
    y[y > 2.0] = 0.0  # masked_fill_
    assert y.tolist() == [[1.0, 2.0, 0.0], [0.0, 0.0, 0.0]]
    assert x.backend == "numpy" and x.broadcast_to(4, 2, 3).shape == (4, 2, 3)


def test_every_row_is_installed_and_shadows_no_attribute_shapegrad_has() -> None:
    """A row whose name became a real attribute (a new op) is left out by the install, and
    stale here."""
    installed = {name for name, value in vars(sg.Tensor).items() if isinstance(value, _torch_names._TorchName)}
    assert set(_torch_names.TENSOR_NAMES) <= installed
    real = {name for klass in sg.Tensor.__mro__[1:] for name in vars(klass)}
    assert installed & real == set()
    assert [name for name in _torch_names.MODULE_NAMES if name in vars(sg)] == []


def test_the_attributes_shapegrad_has_are_unaffected_and_read_as_fast() -> None:
    x = _x()
    # no __getattr__ or __getattribute__ of its own: CPython's plain attribute lookup, as before
    assert "__getattr__" not in vars(sg.Tensor) and "__getattr__" not in vars(TensorOps)
    assert type(x).__getattribute__ is object.__getattribute__
    methods = [name for name, value in vars(TensorOps).items() if callable(value) and not name.startswith("_")]
    assert len(methods) > 100
    for name in methods:
        assert callable(getattr(x, name)), name
    assert x.shape == (2, 3) and x.T.shape == (3, 2) and x.dtype == np.float32 and not x.traced
    assert x.sum().item() == 15.0 and x.reshape(-1).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'$"):
        getattr(x, "no_such_name")  # any other name: Python's own message


def test_copy_and_pickle_protocols_are_unchanged() -> None:
    x = _x()
    twin = copy.deepcopy(x)
    assert twin.tolist() == x.tolist() and twin is not x
    with pytest.raises(TypeError, match="Tensors are not pickled"):
        pickle.dumps(x)
    assert getattr(x, "__getstate__", None) is not None  # object's, as before
    assert not hasattr(x, "__deepcopy_not__")


@pytest.mark.parametrize(
    ("name", "spelling"),
    [
        ("cat", "sg.concat(tensors, axis=dim)"),
        ("unsqueeze", "sg.expand_dims(x, axis)"),
        ("clip", "sg.clamp(x, min, max)"),
        ("manual_seed", "sg.seed(n)"),
        ("transpose", "sg.swapaxes(x, d0, d1)"),
        ("as_tensor", "sg.asarray(data)"),
        ("float32", '"float32"'),
        ("long", '"int64"'),
        ("cuda", '"cupy"'),
    ],
)
def test_a_pytorch_module_spelling_names_shapegrad_s(name: str, spelling: str) -> None:
    with pytest.raises(AttributeError) as info:
        getattr(sg, name)
    message = str(info.value)
    assert message.startswith(f"module 'shapegrad' has no attribute '{name}': PyTorch's torch.{name}"), message
    assert spelling in message, message
    assert not hasattr(sg, name) and getattr(sg, name, None) is None


def test_other_module_names_keep_python_s_message() -> None:
    with pytest.raises(AttributeError, match=r"^module 'shapegrad' has no attribute 'no_such_name'$"):
        getattr(sg, "no_such_name")
    assert getattr(sg, "__wrapped__", None) is None
    assert sg.concat is not None and sg.clamp is not None and sg.from_numpy is not None
    namespace: dict[str, Any] = {}
    exec("from shapegrad import *", namespace)
    assert "concat" in namespace and "cat" not in namespace


@pytest.mark.parametrize(
    "call",
    [
        lambda x, idx: x.gather(1, idx),
        lambda x, idx: x.gather(dim=1, index=idx),
        lambda x, idx: sg.gather(x, 1, idx),
    ],
    ids=["method", "keywords", "function"],
)
def test_gather_called_as_pytorch_s_names_take_along_axis(call: Any) -> None:
    x, idx = _x(), sg.tensor(np.array([[2, 0], [1, 1]]))
    with pytest.raises(TypeError, match=r"PyTorch's x.gather\(dim, index\).*sg.take_along_axis\(x, index, axis=1\)"):
        call(x, idx)


def test_the_take_along_axis_gather_names_is_pytorch_s_gather() -> None:
    torch = pytest.importorskip("torch")
    values, ids = np.arange(6.0).reshape(2, 3), np.array([[2, 0], [1, 1]])
    expected = torch.gather(torch.tensor(values), 1, torch.tensor(ids)).numpy()
    np.testing.assert_array_equal(sg.take_along_axis(sg.tensor(values), sg.tensor(ids), axis=1).numpy(), expected)
    assert sg.gather(sg.tensor(values), sg.tensor(np.array([1]))).tolist() == [[3.0, 4.0, 5.0]]  # rows, as before


def test_to_with_a_pytorch_device_or_dtype_names_the_backend_or_astype(numpy_backend: str) -> None:
    torch = pytest.importorskip("torch")
    x, model = _x(), sg.nn.Linear(2, 2)
    with pytest.raises(sg.BackendError, match=r"PyTorch's \"cuda\" device is the \"cupy\" backend"):
        x.to("cuda")
    with pytest.raises(sg.BackendError, match=r"PyTorch's \"cuda\" device is the \"cupy\" backend"):
        x.to(torch.device("cuda:0"))  # pyright: ignore[reportArgumentType] -- the error under test
    with pytest.raises(sg.BackendError, match=r"\"cpu\" device is the \"numpy\" backend"):
        model.to("cpu")
    with pytest.raises(sg.BackendError, match=r"torch.float64 is a dtype.*x.astype\(\"float64\"\)"):
        x.to(torch.float64)  # pyright: ignore[reportArgumentType] -- the error under test
    with pytest.raises(sg.BackendError, match=r"model.to\(dtype=\"float64\"\)"):
        model.to(torch.double)
    with pytest.raises(sg.BackendError, match=r"x.astype\(\"float32\"\)"):
        x.to("float32")
    assert x.to("numpy") is x and model.to(dtype="float64").weight.backend_dtype_name() == "float64"


def test_pytorch_layer_names_missing_from_sg_nn_name_ours() -> None:
    """``sg.nn.ReLU6()`` (MobileNetV2), ``sg.nn.AdaptiveAvgPool2d(1)`` and ``sg.relu6`` were a
    bare ``AttributeError``; each names shapegrad's layer now, and the rows name no layer
    ``sg.nn`` has."""
    with pytest.raises(AttributeError, match=r"'ReLU6': PyTorch's nn\.ReLU6\(\) is sg\.nn\.Hardtanh\(0\.0, 6\.0\)"):
        _ = sg.nn.ReLU6
    with pytest.raises(AttributeError, match=r"AdaptiveAvgPool2d\(1\) is sg\.nn\.GlobalAvgPool2d\(\)"):
        _ = sg.nn.AdaptiveAvgPool2d
    with pytest.raises(AttributeError, match=r"F\.relu6\(x\) is sg\.clamp\(x, 0\.0, 6\.0\)"):
        _ = sg.relu6
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchLayer'$"):
        _ = sg.nn.NoSuchLayer
    assert not hasattr(sg.nn, "ReLU6") and hasattr(sg.nn, "GlobalAvgPool2d")
    assert [name for name in _torch_names.NN_NAMES if name in vars(sg.nn)] == []
    x = sg.tensor([-1.0, 3.0, 8.0])
    assert sg.clamp(x, 0.0, 6.0).tolist() == sg.nn.Hardtanh(0.0, 6.0)(x).tolist() == [0.0, 3.0, 6.0]


# --------------------------------------------------------------------------- a PyTorch training script's names
@pytest.mark.parametrize(
    ("module", "name", "spelling"),
    [
        (sg.nn, "functional", "sg.losses.cross_entropy"),
        (sg.nn, "utils", "sg.optim.clip_grad_norm(grads, max_norm)"),
        (sg.nn, "ModuleList", "a plain list of layers"),
        (sg.nn, "ModuleDict", "a plain dict of layers"),
        (sg.nn, "Parameter", "sg.nn.parameter(tensor)"),
        (sg.nn, "MultiheadAttention", "sg.nn.MultiHeadAttention(num_heads, embed_dim=...)"),
        (sg.nn, "TransformerEncoderLayer", "sg.nn.TransformerEncoderBlock(num_heads, ff_dim, embed_dim=d_model)"),
        (sg.nn, "Softmax", "x.softmax(axis=dim)"),
        (sg.nn, "CrossEntropyLoss", "sg.losses.cross_entropy(input, target)"),
        (sg.nn, "MSELoss", "sg.losses.mse(input, target)"),
        (sg.nn, "BCEWithLogitsLoss", "sg.losses.binary_cross_entropy_with_logits(input, target)"),
        (sg.losses, "mse_loss", "sg.losses.mse(input, target)"),
        (sg.losses, "l1_loss", "sg.losses.mae(input, target)"),
        (sg.optim, "lr_scheduler", "sg.optim.schedules"),
        (sg.optim, "CosineAnnealingLR", "lr=sg.optim.schedules.cosine(lr, total_steps=T_max)"),
        (sg.optim, "StepLR", "lr=sg.optim.schedules.step(lr, step_size)"),
    ],
)
def test_pytorch_training_script_names_name_ours(module: Any, name: str, spelling: str) -> None:
    """What a PyTorch training script reaches for (``F``, ``nn.ModuleList``,
    ``nn.CrossEntropyLoss()``, ``F.mse_loss``, ``lr_scheduler``): a bare ``AttributeError``
    before; now one naming shapegrad's spelling, in ``sg.nn``, ``sg.losses`` and ``sg.optim``."""
    with pytest.raises(AttributeError) as info:
        getattr(module, name)
    message = str(info.value)
    assert message.startswith(f"module {module.__name__!r} has no attribute {name!r}: PyTorch's "), message
    assert spelling in message, message
    assert not hasattr(module, name)


def test_the_name_tables_name_nothing_the_modules_have_and_their_spellings_exist() -> None:
    for module, table in ((sg.losses, _torch_names.LOSS_NAMES), (sg.optim, _torch_names.OPTIM_NAMES)):
        assert [name for name in table if name in vars(module)] == []
    for _, ours, _ in _torch_names.LOSS_NAMES.values():
        assert callable(getattr(sg.losses, ours.removeprefix("sg.losses.").partition("(")[0]))
    losses = [e[1] for n, e in _torch_names.NN_NAMES.items() if n.endswith("Loss")]
    for ours in losses:
        assert callable(getattr(sg.losses, ours.removeprefix("sg.losses.").partition("(")[0])), ours
    assert (
        callable(sg.optim.schedules.cosine) and callable(sg.optim.schedules.step) and callable(sg.optim.clip_grad_norm)
    )
    with pytest.raises(AttributeError, match=r"^module 'shapegrad.losses' has no attribute 'no_such_loss'$"):
        getattr(sg.losses, "no_such_loss")


class _Net(sg.nn.Module):
    def __init__(self) -> None:
        self.layer = sg.nn.Linear(4, 2)

    def __call__(self, x: Any) -> Any:
        return self.layer(x)


@pytest.mark.parametrize(
    ("call", "spelling"),
    [
        (lambda m: m.zero_grad(), "grads.zero()"),
        (lambda m: m.requires_grad_(False), "model.freeze()"),
        (lambda m: m.children(), "model.named_children()"),
        (lambda m: m.register_buffer("mask", sg.ones(2)), "self.name = tensor"),
        (lambda m: m.cuda(), 'model.to("cupy")'),
        (lambda m: m.double(), 'model.to(dtype="float64")'),
        (lambda m: m.named_buffers(), "model.named_tensors()"),
    ],
)
def test_pytorch_module_methods_name_ours(call: Callable[[Any], Any], spelling: str) -> None:
    """``model.zero_grad()``, ``model.cuda()``, ``self.register_buffer(...)``: "'Net' object
    has no attribute ..." naming shapegrad's spelling, for every module (a layer too)."""
    for model, owner in ((_Net(), "_Net"), (sg.nn.Linear(4, 2), "Linear")):
        with pytest.raises(AttributeError, match=rf"^'{owner}' object has no attribute '[a-z_]+': PyTorch's ") as info:
            call(model)
        assert spelling in str(info.value)


def test_module_names_leave_what_a_module_defines_alone() -> None:
    class Custom(sg.nn.Module):
        def __init__(self) -> None:
            self.children = [sg.nn.Linear(2, 2)]  # an attribute of PyTorch's method name

        def half(self) -> str:
            return "its own"

        def __call__(self, x: Any) -> Any:
            return self.children[0](x)

    model = Custom()
    assert model.half() == "its own" and len(model.children) == 1
    assert [name for name, _ in model.named_parameters()] == ["children.0.weight", "children.0.bias"]
    assert not hasattr(model, "zero_grad")
    assert [name for name in _torch_names.MODULE_METHOD_NAMES if name in vars(sg.nn.Module)] == list(
        _torch_names.MODULE_METHOD_NAMES
    )


def test_a_module_with_pytorch_s_forward_names___call__() -> None:
    """A port that keeps ``def forward(self, x)`` was "'Net' object is not callable"; now the
    message says to rename it. A module that defines ``__call__`` (calling its ``forward`` or
    not) is unchanged."""

    class Net(sg.nn.Module):
        def __init__(self) -> None:
            self.layer = sg.nn.Linear(4, 2)

        def forward(self, x: Any) -> Any:
            return self.layer(x)

    with pytest.raises(TypeError, match=r"'Net' object is not callable: .*rename Net.forward to __call__"):
        Net()(sg.ones(3, 4))  # pyright: ignore[reportCallIssue]

    class Both(Net):
        def __call__(self, x: Any) -> Any:
            return self.forward(x)

    assert Both()(sg.ones(3, 4)).shape == (3, 2)


def test_an_optimizer_given_parameters_names_the_model() -> None:
    model = sg.nn.Linear(4, 2)
    with pytest.raises(TypeError, match=r"AdamW takes the model .*found list.*AdamW\(model, lr=...\)"):
        sg.optim.AdamW(model.parameters(), lr=1e-3)  # pyright: ignore[reportArgumentType]
    assert isinstance(sg.optim.AdamW(model, lr=1e-3), sg.optim.Optimizer)
