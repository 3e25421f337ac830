"""A good citizen of the array ecosystem: DLPack both ways, Python numbers and formatting,
in-place writes and functional updates, moving a model between backends, batching."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.gradcheck import assert_gradients_match

import shapegrad as sg


def test_dlpack_round_trips_with_numpy_without_a_copy(numpy_backend: str) -> None:
    source = np.arange(4.0)
    ours = sg.from_dlpack(source)
    source[0] = 9.0
    assert ours.tolist()[0] == 9.0  # shared memory
    back = np.from_dlpack(ours)
    assert back.tolist() == ours.tolist()


def test_dlpack_round_trips_with_pytorch_without_a_copy(numpy_backend: str) -> None:
    torch = pytest.importorskip("torch", reason="pip install -e '.[dev,torch]'")
    t = torch.arange(3, dtype=torch.float32)
    ours = sg.from_dlpack(t)
    t[1] = 7.0
    assert ours.tolist() == [0.0, 7.0, 2.0]
    theirs = torch.from_dlpack(sg.tensor([1.0, 2.0]))
    assert theirs.tolist() == [1.0, 2.0]


def test_a_traced_tensor_refuses_dlpack_export_and_implicit_numpy(numpy_backend: str) -> None:
    traced = sg.tensor([1.0]).trace(sg.Gradients())
    with pytest.raises(sg.TapeError, match="DLPack export of a traced tensor.*detach"):
        np.from_dlpack(traced)
    with pytest.raises(sg.TapeError, match="implicit conversion"):
        np.asarray(traced)
    assert np.from_dlpack(traced.detach()).tolist() == [1.0]


def test_a_new_tensor_from_a_traced_one_is_refused_not_silently_untraced(numpy_backend: str) -> None:
    """sg.tensor(t), sg.asarray(t) and sg.Tensor(t) of a traced t gave an untraced tensor: the
    gradient stopped there with no error (torch.as_tensor keeps the graph; torch.tensor warns)."""
    traced = sg.tensor([1.0, 2.0]).trace(sg.Gradients())
    for make in (sg.tensor, sg.asarray, sg.Tensor):
        with pytest.raises(sg.TapeError, match="traced tensor.*drop its tape.*detach"):
            make(traced)
    with pytest.raises(sg.TapeError):
        sg.tensor([traced, traced])  # nested: through __array__
    assert sg.tensor(traced.detach()).tolist() == [1.0, 2.0]


def test_dlpack_on_the_emulated_cupy_backend() -> None:
    from conftest import emulated_cupy_backend

    backend = emulated_cupy_backend()
    with sg.use_backend(backend):
        device = sg.tensor([1.0, 2.0])
        again = sg.from_dlpack(device)
        assert again.backend == "cupy" and again.tolist() == [1.0, 2.0]


def test_np_asarray_honours_copy(numpy_backend: str) -> None:
    t = sg.tensor([1.0, 2.0])
    copied = np.asarray(t, copy=True)
    copied[0] = 5.0
    assert t.tolist() == [1.0, 2.0]
    assert not np.asarray(t).flags.writeable


def test_python_numbers_and_formatting_of_rank_0_tensors(numpy_backend: str) -> None:
    loss = sg.tensor(0.123456)
    assert f"{loss:.4f}" == "0.1235"
    assert float(loss) == pytest.approx(0.123456) and int(sg.tensor(3.7)) == 3 and bool(sg.tensor(1.0))
    assert f"{sg.ones(2)}" == "Tensor([1., 1.], shape=(2,), dtype=float32)"
    with pytest.raises(TypeError, match="one-element tensor"):
        f"{sg.ones(2):.2f}"


def test_setitem_writes_untraced_tensors_and_refuses_traced_ones(backend: str) -> None:
    x = sg.zeros(3)
    x[1] = 5.0
    x[sg.tensor([0, 2])] = sg.tensor([1.0, 2.0])
    assert x.tolist() == [1.0, 5.0, 2.0]
    traced = sg.zeros(3).trace(sg.Gradients())
    with pytest.raises(sg.TapeError, match=r"in-place assignment into a traced tensor.*x.at\[index\].set"):
        traced[0] = 1.0


def test_writing_a_parameter_between_forward_and_backward_is_detected(numpy_backend: str) -> None:
    layer = sg.nn.Linear(2, 1)
    grads = layer.alloc_grads()
    loss = layer(sg.ones(3, 2).trace(grads)).sum()
    layer.weight[0, 0] = 1.0
    with pytest.raises(sg.TapeError, match="modified in place"):
        loss.backward()


@pytest.mark.parametrize("add", [False, True], ids=["set", "add"])
def test_at_updates_are_functional_and_differentiable(backend: str, add: bool) -> None:
    x = sg.tensor([1.0, 2.0, 3.0, 4.0])
    updated = x.at[1:3].add(10.0) if add else x.at[1:3].set(10.0)
    assert x.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert updated.tolist() == ([1.0, 12.0, 13.0, 4.0] if add else [1.0, 10.0, 10.0, 4.0])

    def fn(a: Any, v: Any) -> Any:
        return (a.at[sg.tensor([0, 2])].add(v) if add else a.at[sg.tensor([0, 2])].set(v)).exp()

    rng = np.random.default_rng(0)
    assert_gradients_match(fn, [rng.standard_normal((4, 3)), rng.standard_normal((2, 3))])


def test_a_model_moves_between_backends_and_keeps_its_parameters() -> None:
    from conftest import emulated_cupy_backend

    device = emulated_cupy_backend()
    model = sg.nn.Linear(2, 1, generator=sg.Generator(0))
    opt = sg.optim.Sgd(model, lr=0.1)
    with pytest.raises(sg.ShapegradError, match="build the optimizer again"):
        model.to(device)
    del opt
    before = model.weight.numpy().copy()
    model.to(device)
    assert model.weight.backend == "cupy" and [p for p, _ in model.named_parameters()] == ["weight", "bias"]
    np.testing.assert_array_equal(model.weight.numpy(), before)
    with sg.use_backend(device):
        grads = model.alloc_grads()
        opt = sg.optim.Sgd(model, lr=0.1)
        model(sg.ones(3, 2).trace(grads)).sum().backward()
        opt.update(model, grads)
    assert not np.array_equal(model.weight.numpy(), before)


def test_batches_cover_the_data_and_count_themselves(numpy_backend: str) -> None:
    x, y = np.arange(10.0).reshape(10, 1), np.arange(10)
    loader = sg.data.batches(x, y, batch_size=4, shuffle=True, generator=sg.Generator(0))
    assert len(loader) == 3
    seen = sorted(v for _, yb in loader for v in yb.tolist())
    assert seen == list(range(10))
    first, second = ([yb.tolist() for _, yb in loader] for _ in range(2))
    assert first != second  # a new order every epoch
    assert len(sg.data.batches(x, y, batch_size=4, drop_last=True)) == 2
    with pytest.raises(sg.ShapeError, match="x has 10 samples but y has 9"):
        sg.data.batches(x, y[:9], batch_size=2)


def test_creation_helpers(numpy_backend: str) -> None:
    assert sg.eye(2, 3).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    assert sg.linspace(0.0, 1.0, 5).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    draws = sg.randint(2, 5, (1000,), generator=sg.Generator(0)).numpy()
    assert draws.dtype == np.int64 and set(draws.tolist()) == {2, 3, 4}
    assert sorted(sg.randperm(6, generator=sg.Generator(1)).tolist()) == list(range(6))


def test_einsum_names_the_letter_bound_to_two_sizes(numpy_backend: str) -> None:
    with pytest.raises(sg.ShapeError, match=r"letter 'j' is 4 in operand 0 but 5 in operand 1"):
        sg.einsum("ij,jk->ik", sg.ones(3, 4), sg.ones(5, 2))


def test_repr_shows_values_of_small_tensors_and_print_summarises_large_ones(numpy_backend: str) -> None:
    assert repr(sg.tensor([1.5, -2.0])) == "Tensor([ 1.5, -2. ], shape=(2,), dtype=float32)"
    assert repr(sg.zeros(32, 784)) == "Tensor(shape=(32, 784), dtype=float32)"  # errors stay short
    printed = str(sg.arange(2000, dtype="float32"))
    assert printed.endswith("], shape=(2000,), dtype=float32)") and ", ..., " in printed and "\n" not in printed
    assert len(printed) < 120  # NumPy's summary: the first and last three values


def test_numpy_refuses_to_read_a_device_tensor_implicitly() -> None:
    from conftest import emulated_cupy_backend

    with sg.use_backend(emulated_cupy_backend()):
        t = sg.tensor([1.0, 2.0])
        with pytest.raises(TypeError, match="implicit conversion of a cupy tensor.*t.numpy"):
            np.asarray(t)
        with pytest.raises(TypeError, match="implicit conversion"):
            np.exp(t)
        assert t.numpy().tolist() == [1.0, 2.0]


TORCH_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"]
TORCH_DTYPES += ["float16", "float32", "float64"]


@pytest.mark.parametrize("name", TORCH_DTYPES)
def test_tensor_of_a_torch_tensor_copies_and_keeps_its_dtype(backend: str, name: str) -> None:
    """issue #24 item 16: integer tensors shared memory with PyTorch's, float64 became float32."""
    torch = pytest.importorskip("torch", reason="pip install -e '.[dev,torch]'")
    source = torch.tensor([1, 0, 1]).to(getattr(torch, name))
    if backend == "strict" and name in ("uint16", "uint32", "uint64", "float16"):
        pytest.skip(f"the strict backend has no {name}")
    ours = sg.tensor(source)
    source[0] = 0  # PyTorch's tensor changes; ours does not
    assert ours.backend_dtype_name() == name
    assert ours.tolist() == [1, 0, 1]
    assert ours.backend == backend
    rank_0 = sg.tensor(torch.tensor(2.5, dtype=torch.float64))
    assert rank_0.shape == () and rank_0.backend_dtype_name() == "float64"


class _ArrayLike:
    """A foreign array with ``__array__`` only (no DLPack)."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.values


def test_tensor_of_any_foreign_array_copies_and_keeps_its_dtype(backend: str) -> None:
    """issue #24 item 16: by ``__dlpack__`` or ``__array__``, as a NumPy array is."""
    held = np.array([1.0, 2.0])  # float64, which Python floats would not give
    ours = sg.tensor(_ArrayLike(held))
    held[0] = 9.0
    assert ours.backend_dtype_name() == "float64"
    assert ours.tolist() == [1.0, 2.0]


@pytest.mark.parametrize(
    "data",
    [
        np.float64(1.1),
        [np.float64(1.1)],
        np.float16(3),
        np.float32(2),
        [1.1, np.float64(2.2)],
        [[1.0], [np.float64(2.0)]],
        (1.0, np.float64(2.0)),
        [np.float16(1), 2],
        [np.float16(1), 2.5],
        [np.int64(1), 2.5],
        1.5,
        [[1.5, 2.0]],
        [1, 2],
        [],
    ],
    ids=repr,
)
def test_tensor_of_numpy_scalars_keeps_their_dtype_as_torch(backend: str, data: Any) -> None:
    """``sg.tensor(np.float64(1.1))`` was float32 (1.1 rounded), where ``torch.tensor``
    keeps a NumPy scalar's dtype; a Python float is float32, the widest float present wins,
    and integers among floats do not widen them (``[np.float16(1), 2]`` is float16)."""
    torch = pytest.importorskip("torch", reason="pip install -e '.[dev,torch]'")
    expected = str(torch.tensor(data).dtype).removeprefix("torch.")
    if backend == "strict" and expected == "float16":
        pytest.skip("the strict backend has no float16")
    for made in (sg.tensor(data), sg.asarray(data)):
        assert made.backend_dtype_name() == expected
    if expected == "float64":
        assert np.asarray(sg.tensor(data).numpy()).flat[-1] == np.asarray(torch.tensor(data)).flat[-1]


def test_tensor_of_a_torch_tensor_it_cannot_read_names_why(numpy_backend: str) -> None:
    torch = pytest.importorskip("torch", reason="pip install -e '.[dev,torch]'")
    with pytest.raises(sg.BackendError, match=r"got a torch\.Tensor it cannot read.*require.*expects"):
        sg.tensor(torch.zeros(2, requires_grad=True))
    with pytest.raises(sg.BackendError, match=r"cannot read \(dtype torch.bfloat16, device cpu: Unsupported"):
        sg.tensor(torch.zeros(2, dtype=torch.bfloat16))
    with pytest.raises(sg.DTypeError, match="complex64"):
        sg.tensor(torch.zeros(2, dtype=torch.complex64))


def test_asarray_of_a_torch_cpu_tensor_shares_its_memory(numpy_backend: str) -> None:
    torch = pytest.importorskip("torch", reason="pip install -e '.[dev,torch]'")
    source = torch.arange(3)
    shared = sg.asarray(source)
    source[0] = 7
    assert shared.tolist() == [7, 1, 2]
