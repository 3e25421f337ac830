"""Integer (and boolean) tensors meeting floats take PyTorch's dtype, not NumPy's float64: the
float operand's dtype, or the default float32 where the float is a Python number or the op
divides integers. ``sg.arange(n) * 0.5`` in float64 made a PyTorch-style positional encoding
float64, then every activation it was added to (element-wise ops promote), and the next
``Linear`` raised a ``DTypeError`` about float64 data far from its cause. Products
(``matmul``, ``einsum``) of an integer and a float tensor raise, as PyTorch's do. Compared
with PyTorch where it is installed; the dtypes themselves are written out too."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import shapegrad as sg

try:
    import torch
except ImportError:  # the PyTorch comparisons skip without it
    torch = None  # type: ignore[assignment]

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is the oracle here")

INTS = np.array([[0, 1, 2], [3, -4, 5]], np.int64)
FLOATS = np.array([[0.5, -1.5, 2.0], [1.0, 0.25, -3.0]], np.float32)


def _ints(lib: Any) -> Any:
    return lib.tensor(INTS)


# (name, the expression on a library (sg or torch), the dtype expected)
CASES: list[tuple[str, Callable[[Any], Any], str]] = [
    ("int64 * 0.5", lambda lib: _ints(lib) * 0.5, "float32"),
    ("0.5 * int64", lambda lib: 0.5 * _ints(lib), "float32"),
    ("int64 + 0.5", lambda lib: _ints(lib) + 0.5, "float32"),
    ("int64 - 0.5", lambda lib: _ints(lib) - 0.5, "float32"),
    ("int64 / 2", lambda lib: _ints(lib) / 2, "float32"),
    ("int64 / int64", lambda lib: _ints(lib) / (_ints(lib) * 0 + 3), "float32"),
    ("int64 ** 0.5", lambda lib: (_ints(lib) * _ints(lib)) ** 0.5, "float32"),
    ("int64 // 2.5", lambda lib: _ints(lib) // 2.5, "float32"),
    ("int64 % 2.5", lambda lib: _ints(lib) % 2.5, "float32"),
    ("int64 + float32", lambda lib: _ints(lib) + lib.tensor(FLOATS), "float32"),
    ("float32 * int64", lambda lib: lib.tensor(FLOATS) * _ints(lib), "float32"),
    (
        "int32 + float16",
        lambda lib: lib.tensor(INTS.astype(np.int32)) + lib.tensor(FLOATS.astype(np.float16)),
        "float16",
    ),
    ("uint8 * 0.5", lambda lib: lib.tensor(np.array([0, 128, 255], np.uint8)) * 0.5, "float32"),
    ("bool * 0.5", lambda lib: lib.tensor(np.array([True, False])) * 0.5, "float32"),
    ("maximum(int64, 0.5)", lambda lib: lib.maximum(_ints(lib), lib.tensor(0.5)), "float32"),
    ("where(mask, int64, 0.5)", lambda lib: lib.where(_ints(lib) > 1, _ints(lib), 0.5), "float32"),
    ("clamp(int64, 0.5, 1.5)", lambda lib: lib.clamp(_ints(lib), 0.5, 1.5), "float32"),
    ("concat of int64 and float32", lambda lib: lib.cat([_ints(lib), lib.tensor(FLOATS)]), "float32"),
    ("arange(5.0)", lambda lib: lib.arange(5.0), "float32"),
    ("arange(0, 3, 0.5)", lambda lib: lib.arange(0, 3, 0.5), "float32"),
    # what stays: integers with integers, and a float64 tensor's own dtype
    ("int64 * 2", lambda lib: _ints(lib) * 2, "int64"),
    ("int64 // 2", lambda lib: _ints(lib) // 2, "int64"),
    ("arange(5)", lambda lib: lib.arange(5), "int64"),
    ("float64 * int64", lambda lib: lib.tensor(FLOATS.astype(np.float64)) * _ints(lib), "float64"),
]


class _SgAsTorch:
    """The few PyTorch spellings the cases use, on shapegrad."""

    tensor = staticmethod(sg.tensor)
    where = staticmethod(sg.where)
    clamp = staticmethod(sg.clamp)
    arange = staticmethod(sg.arange)
    maximum = staticmethod(sg.maximum)

    @staticmethod
    def cat(tensors: Any) -> Any:
        return sg.concat(tensors)


@pytest.mark.parametrize(("expression", "dtype"), [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_the_dtype_is_pytorchs(expression: Callable[[Any], Any], dtype: str, backend: str) -> None:
    """On NumPy and on CuPy (which promotes as NumPy: its own code, over a stand-in)."""
    if backend == "strict":
        pytest.skip("the strict Array API backend mixes no dtype kinds")
    assert expression(_SgAsTorch).backend_dtype_name() == dtype


@needs_torch
@pytest.mark.parametrize(("expression", "dtype"), [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_dtype_and_values_as_pytorch(expression: Callable[[Any], Any], dtype: str) -> None:
    found = expression(_SgAsTorch)
    expected = expression(torch)
    assert str(expected.dtype).removeprefix("torch.") == dtype  # the table above is PyTorch's
    assert found.backend_dtype_name() == dtype
    np.testing.assert_allclose(found.numpy().astype(np.float64), expected.numpy().astype(np.float64), rtol=1e-6)


@pytest.mark.parametrize("op", ["matmul", "einsum"])
def test_a_product_of_integers_and_floats_is_refused(op: str) -> None:
    ints, weights = sg.tensor(INTS), sg.tensor(FLOATS.T.copy())
    with pytest.raises(sg.DTypeError, match=r"int64 \(2, 3\).*float32 \(3, 2\).*astype\('float32'\)"):
        sg.matmul(ints, weights) if op == "matmul" else sg.einsum("ij,jk->ik", ints, weights)
    assert (ints @ sg.tensor(INTS.T.copy())).backend_dtype_name() == "int64"  # integers alone stay


def test_gradient_of_a_float_operand_times_integers() -> None:
    """The float side's gradient is float32, the integer values themselves (d(x * k)/dx = k)."""
    grads = sg.Gradients()
    x = sg.tensor(FLOATS).trace(grads)
    (x * sg.tensor(INTS)).sum().backward()
    assert grads[x].backend_dtype_name() == "float32"
    np.testing.assert_array_equal(grads[x].numpy(), INTS.astype(np.float32))


def test_a_pytorch_style_positional_encoding_stays_float32() -> None:
    """The sinusoidal table as PyTorch tutorials write it (integer positions, a float scale),
    added to float32 embeddings and fed to a Linear layer: float32 throughout."""
    seq, width = 6, 8
    position = sg.arange(seq)[:, None]
    scale = sg.exp(sg.arange(0, width, 2) * (-math.log(10000.0) / width))
    angles = position * scale
    assert angles.backend_dtype_name() == "float32"
    table = sg.concat([sg.sin(angles), sg.cos(angles)], axis=1)
    h = sg.randn(2, seq, width) + table
    out = sg.nn.Linear(width, 4)(h)
    assert h.backend_dtype_name() == out.backend_dtype_name() == "float32"


def test_a_compiled_step_gives_the_eager_dtype(numpy_backend: str) -> None:
    """sg.compile records the conversion as an array operation: a replay is float32 too."""

    def step(x: Any, k: Any) -> Any:
        return (x * k * 0.5).sum()

    compiled = sg.compile(step)
    x, k = sg.tensor(FLOATS), sg.tensor(INTS)
    eager = step(x, k)
    for _ in range(3):
        replayed = compiled(x, k)
        assert replayed.backend_dtype_name() == eager.backend_dtype_name() == "float32"
        assert replayed.item() == eager.item()
