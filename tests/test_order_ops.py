"""Ordering ops (``sort``, ``argsort``, ``topk``) on every dtype, against PyTorch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import shapegrad as sg

torch = pytest.importorskip("torch", reason="pip install -e '.[dev,torch]'")

# Values whose negation is wrong or refused: unsigned 0 (-0 is 0, and -1 wraps to the
# largest), int64's minimum (its own negation), booleans (NumPy refuses -x); with ties, so
# that stability shows, and for floats NaN and the infinities (NaN sorts as the largest).
CASES: dict[str, Any] = {
    "uint8": np.array([[0, 5, 255, 0, 1], [3, 0, 0, 200, 3]], dtype=np.uint8),
    "uint64": np.array([[0, 2**63 + 5, 7, 0, 2**64 - 1], [1, 0, 1, 2**63, 9]], dtype=np.uint64),
    "int64": np.array([[np.iinfo(np.int64).min, 3, -1, np.iinfo(np.int64).min, 0], [5, 5, -7, 0, 1]]),
    "bool": np.array([[True, False, True, False, False], [False, True, True, False, True]]),
    "float32": np.array([[1.0, np.nan, -np.inf, 1.0, 3.0], [np.inf, -0.0, 2.0, np.nan, 2.0]], dtype=np.float32),
}


def _torch(values: np.ndarray) -> Any:
    if values.dtype == np.uint64:  # PyTorch's uint64 sorts on CPU; from int64 bits, reinterpreted
        return torch.from_numpy(values.view(np.int64).copy()).view(torch.uint64)
    return torch.from_numpy(values.copy())


def _array(values: Any) -> np.ndarray:
    if values.dtype == torch.uint64:
        return values.view(torch.int64).numpy().view(np.uint64)
    return values.numpy()


def _tensor_or_skip(backend: str, values: np.ndarray) -> Any:
    if backend == "strict" and values.dtype == np.uint64:
        pytest.skip("the strict backend has no uint64")
    return sg.tensor(values)


@pytest.mark.parametrize("axis", [-1, 0])
@pytest.mark.parametrize("name", list(CASES))
def test_descending_sort_and_argsort_match_pytorch(backend: str, name: str, axis: int) -> None:
    """issue #24 item 8: descending order sorted -x, wrong for unsigned 0 and int64's
    minimum and refused for booleans."""
    values = CASES[name]
    x = _tensor_or_skip(backend, values)
    expected = torch.sort(_torch(values), dim=axis, descending=True, stable=True)
    np.testing.assert_array_equal(sg.argsort(x, axis, descending=True).numpy(), expected.indices.numpy())
    found = sg.sort(x, axis, descending=True)
    assert found.backend_dtype_name() == name
    np.testing.assert_array_equal(found.numpy(), _array(expected.values))


@pytest.mark.parametrize("name", list(CASES))
def test_topk_matches_pytorch_on_every_dtype(backend: str, name: str) -> None:
    """issue #24 item 8: topk is the descending argsort's first k: PyTorch's values, and
    among ties the first indices (PyTorch's topk leaves their order open, and has no
    boolean or uint64 topk on the CPU)."""
    values = CASES[name]
    x = _tensor_or_skip(backend, values)
    source = _torch(values)
    expected = torch.sort(source, descending=True, stable=True)
    top, indices = sg.topk(x, 3)
    np.testing.assert_array_equal(top.numpy(), _array(expected.values)[..., :3])
    np.testing.assert_array_equal(indices.numpy(), expected.indices.numpy()[..., :3])
    if name not in ("bool", "uint64"):
        np.testing.assert_array_equal(top.numpy(), _array(torch.topk(source, 3).values))


def test_descending_sort_keeps_its_gradient_path(backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([2.0, np.nan, 5.0, 2.0]).trace(grads)
    (sg.sort(x, descending=True) * sg.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    np.testing.assert_array_equal(grads[x].numpy(), [3.0, 1.0, 2.0, 4.0])  # NaN first, ties in order
