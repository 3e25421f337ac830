"""Mistakes that reached a foreign error (NumPy's, Python's, safetensors') now raise a
``ShapegradError`` subclass whose message says what was expected and what was found; and
DLPack exports that failed or crashed an importer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import nn


def test_einsum_output_letters_must_name_input_axes(backend: str) -> None:
    """issue #24 item 17: NumPy's "Output character k did not appear in the input"."""
    x = sg.ones(2, 3)
    with pytest.raises(
        sg.ShapeError, match=r"einsum 'ij->ik': output letter 'k' names no axis of the operands \('ij'\)"
    ):
        sg.einsum("ij->ik", x)
    with pytest.raises(sg.ShapeError, match="output letter 'i' appears 2 times"):
        sg.einsum("ij->ii", x)
    with pytest.raises(sg.ShapeError, match="subscripts are letters, found '1'"):
        sg.einsum("i1->i", x)


def test_chunk_expects_at_least_one_chunk(backend: str) -> None:
    """issue #24 item 17: chunk(x, 0) was a ZeroDivisionError."""
    with pytest.raises(sg.ShapeError, match="chunk expects a number of chunks >= 1, found 0"):
        sg.chunk(sg.ones(4), 0)
    with pytest.raises(sg.ShapeError, match="found -2"):
        sg.chunk(sg.ones(4), -2)


def test_pad_with_pytorchs_flat_widths_says_how_they_map(backend: str) -> None:
    """F.pad(x, (1, 1, 2, 2)) written as sg.pad was Python's "too many values to unpack"."""
    x = sg.ones(1, 2, 4, 4)
    with pytest.raises(
        sg.ShapeError, match=r"found \(1, 1, 2, 2\)\. PyTorch's flat F\.pad.*\(top, bottom\), \(left, right\)"
    ):
        sg.pad(x, (1, 1, 2, 2), mode="reflect")
    # NumPy's flat pair pads every axis, as documented
    assert sg.pad(x, (1, 1)).shape == (3, 4, 6, 6)
    assert sg.pad(x, ((0, 0), (0, 0), (2, 2), (1, 1))).shape == (1, 2, 8, 6)


@pytest.mark.parametrize(
    ("index", "found"),
    [
        (1.5, "entry 0 is the float 1.5"),
        ((0, 1.5), "entry 1 is the float 1.5"),
        (slice(0.5, 2), r"entry 0 is the slice slice\(0.5, 2, None\)"),
        ([1.0, 2.0], "entry 0 is an array of dtype float64"),
    ],
    ids=["float", "float in a tuple", "float slice", "float list"],
)
def test_a_float_index_is_a_dtype_error_in_at_and_getitem(backend: str, index: Any, found: str) -> None:
    """issue #24 item 17: .at[1.5] was NumPy's IndexError."""
    x = sg.zeros(3, 4)
    expected = "expected an int, a slice of ints, None, ..., or an integer or boolean tensor"
    with pytest.raises(sg.DTypeError, match=f"{found}; {expected}"):
        x.at[index].set(1.0)
    with pytest.raises(sg.DTypeError, match=found):
        x[index]
    assert x.at[1].set(1.0).tolist()[1] == [1.0] * 4  # integers still index


def test_permute_takes_the_order_as_one_tuple_as_pytorch(backend: str) -> None:
    """issue #24 item 17: x.permute((0, 2, 1)) was a TypeError; PyTorch accepts it."""
    x = sg.tensor(np.arange(24.0).reshape(2, 3, 4))
    expected = np.arange(24.0).reshape(2, 3, 4).transpose(0, 2, 1)
    for permuted in (x.permute((0, 2, 1)), x.permute([0, 2, 1]), x.permute(0, 2, 1)):
        np.testing.assert_array_equal(permuted.numpy(), expected)
    assert x.transpose((2, 1, 0)).shape == (4, 3, 2)
    with pytest.raises(sg.ShapeError, match=r"permute: \(0, 1\) is not an ordering of the 3 axes"):
        x.permute((0, 1))


def test_loading_a_directory_says_it_is_one(tmp_path: Path) -> None:
    """issue #24 item 17: safetensors said "No such device (os error 19)"."""
    model = nn.Linear(2, 1)
    with pytest.raises(sg.CheckpointError, match="is a directory; expected a checkpoint file written by sg.save"):
        sg.load(model, tmp_path)


def test_a_broadcast_too_large_to_hold_is_not_called_incompatible(numpy_backend: str) -> None:
    """issue #24 item 17: shapes that broadcast, to a result NumPy cannot index, were
    reported as "cannot broadcast"."""
    huge = (2**40, 2**40, 3)
    with pytest.raises(sg.ShapeError, match=r"\(3,\) broadcasts to .* values are more than numpy can hold") as raised:
        sg.broadcast_to(sg.ones(3), huge)
    assert "cannot broadcast" not in str(raised.value)
    with pytest.raises(sg.ShapeError, match=r"shape \(3,\) cannot broadcast to \(2, 4\)"):
        sg.broadcast_to(sg.ones(3), (2, 4))


def test_conv_transpose_names_the_channel_count_it_expects(backend: str) -> None:
    """issue #24 item 17: the wrong channel count failed inside a reshape of the weight."""
    layer = nn.ConvTranspose2d(in_channels=3, out_channels=4, kernel_size=3)
    with pytest.raises(
        sg.ShapeError,
        match=r"ConvTranspose2d\(3, 4\) expects input \(batch, 3, height, width\), found shape \(1, 5, 6, 6\)",
    ):
        layer(sg.ones(1, 5, 6, 6))
    assert layer(sg.ones(1, 3, 6, 6)).shape == (1, 4, 8, 8)


def test_a_rank_0_result_exports_by_dlpack(numpy_backend: str) -> None:
    """issue #24 item 17: a reduction's rank-0 data is a NumPy scalar, which has no __dlpack__."""
    total = sg.tensor([1.0, 2.5]).sum()
    assert np.from_dlpack(total).tolist() == 3.5
    torch = pytest.importorskip("torch", reason="pip install -e '.[dev,torch]'")
    assert torch.from_dlpack(total).item() == 3.5


def test_a_negative_stride_view_exports_a_copy(numpy_backend: str) -> None:
    """issue #24 item 17: PyTorch's DLPack importer aborts the process on a negative stride."""
    reversed_view = sg.tensor(np.arange(4.0))[::-1]
    exported = np.from_dlpack(reversed_view)
    assert all(step > 0 for step in exported.strides)
    assert exported.tolist() == [3.0, 2.0, 1.0, 0.0]
    torch = pytest.importorskip("torch", reason="pip install -e '.[dev,torch]'")
    assert torch.from_dlpack(reversed_view).tolist() == [3.0, 2.0, 1.0, 0.0]
    forward = sg.tensor(np.arange(4.0))
    assert np.shares_memory(np.from_dlpack(forward), forward.numpy())  # no copy otherwise


@pytest.mark.parametrize(
    ("compute", "found"),
    [
        (lambda a: a ** sg.tensor(np.array([[1, -1], [0, 1]], np.int32)), "a tensor of dtype int32"),
        (lambda a: a**-1, "the number -1"),
        (lambda a: a ** np.int64(-2), "the number -2"),
        (lambda a: sg.pow(a, sg.tensor(np.array([-1], np.int8))), "a tensor of dtype int8"),
    ],
    ids=["tensor exponent", "int exponent", "numpy int exponent", "broadcast exponent"],
)
def test_an_integer_to_a_negative_integer_power_is_a_dtype_error(numpy_backend: str, compute: Any, found: str) -> None:
    """NumPy's "Integers to negative integer powers are not allowed" was reported as a shape
    clash ("shapes (2, 2) and (2, 2) do not broadcast"), and with a Python int exponent it
    was an AttributeError; it is a DTypeError naming the op, both operands and the fix."""
    a = sg.tensor(np.array([[2, 3], [4, 5]], np.int32))
    with pytest.raises(sg.DTypeError) as raised:
        compute(a)
    message = str(raised.value)
    assert message.startswith("pow: integers to negative integer powers are not allowed: ")
    assert f"found a tensor of dtype int32 to the power of {found}" in message
    assert "x.astype('float32') ** y" in message
    assert "broadcast" not in message
    assert (a.astype("float32") ** -1).tolist()[0] == [0.5, pytest.approx(1 / 3)]


def test_a_number_base_to_a_negative_integer_power_is_a_dtype_error(numpy_backend: str) -> None:
    """``2 ** t`` with a negative entry in an integer ``t``: the same DTypeError, naming the number."""
    with pytest.raises(sg.DTypeError, match="found the number 2 to the power of a tensor of dtype int32"):
        2 ** sg.tensor(np.array([1, -1], np.int32))


def test_only_operands_that_do_not_broadcast_are_a_shape_clash(numpy_backend: str) -> None:
    """A binary op's forward raising a ValueError is a shape clash only where the shapes do not
    broadcast; any other ValueError is raised as it is, never called a shape clash."""
    from shapegrad.ops._toolkit import binary

    with pytest.raises(sg.ShapeError, match=r"add: shapes \(2, 3\) and \(4,\) do not broadcast.*axis -1 is 3 vs 4"):
        sg.ones(2, 3) + sg.ones(4)
    with pytest.raises(sg.ShapeError, match=r"less: shapes \(2, 3\) and \(4,\) do not broadcast"):
        sg.less(sg.ones(2, 3), sg.ones(4))

    def forward(x: Any, y: Any) -> Any:
        raise ValueError("something else")

    for other in (sg.ones(3), 2.0, 2):
        with pytest.raises(ValueError, match="^something else$") as raised:
            binary("op", sg.ones(2, 3), other, None, forward)
        assert not isinstance(raised.value, sg.ShapegradError)
