"""Mistakes that reached a foreign error (NumPy's, Python's, safetensors') now raise a
``ShapegradError`` subclass whose message says what was expected and what was found; and
DLPack exports that failed or crashed an importer."""

from __future__ import annotations

import re
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


_BINARY_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "pow": lambda a, b: a**b,
    "maximum": sg.maximum,
    "minimum": sg.minimum,
    "div": lambda a, b: a / b,
    "less": lambda a, b: a < b,
    "equal": sg.equal,
}
_EXACT = ("div", "less", "equal")  # NumPy divides (in float64) and compares any integer number


@pytest.mark.parametrize(
    ("dtype", "number", "holds", "fix", "also"),
    [
        ("int32", 2**40, "expected a number int32 holds, -2147483648 to 2147483647", "x.astype('int64')", ()),
        ("uint8", -1, "expected a number uint8 holds, 0 to 255", "x.astype('int64')", ()),
        ("uint8", 300, "expected a number uint8 holds, 0 to 255", "x.astype('int64')", ()),
        ("int8", 2**40, "expected a number int8 holds, -128 to 127", "x.astype('int64')", ()),
        ("int16", 2**40, "expected a number int16 holds, -32768 to 32767", "x.astype('int64')", ()),
        ("int64", 2**70, "expected a number int64 holds", "x.astype('float64')", ()),
        ("bool", 2**70, "(a bool tensor meets a Python int as int64)", "x.astype('float64')", ("less", "equal")),
        ("float32", 2**2000, "expected a number a float64 holds", "No dtype holds it", _EXACT),
    ],
    ids=["int32", "uint8-negative", "uint8", "int8", "int16", "int64", "bool", "float32"],
)
def test_a_python_int_out_of_the_tensor_dtype_s_range_is_a_dtype_error(
    numpy_backend: str, dtype: str, number: int, holds: str, fix: str, also: tuple[str, ...]
) -> None:
    """NumPy's bare OverflowError ("Python integer 1099511627776 out of bounds for int32",
    "Python int too large to convert to C long", "int too large to convert to float") leaked
    from the binary ops with a Python int on either side (a NumPy integer too, made a Python
    int), and from comparisons and division where NumPy converts the number to the tensor's
    dtype or to a float; it is a DTypeError naming the op, the tensor's dtype and shape, the
    number and the fix. Division and comparisons that NumPy does exactly are left working."""
    t = sg.tensor(np.array([1, 2], dtype))
    shown = str(number) if len(str(number)) <= 40 else str(number)[:12] + "..."
    raising = [op for op in _BINARY_OPS if op not in _EXACT or op in also]
    for op in raising:
        for left, right in ((t, number), (number, t), (t, np.int64(number) if dtype == "int32" else number)):
            with pytest.raises(sg.DTypeError) as raised:
                _BINARY_OPS[op](left, right)
            message = str(raised.value)
            named = "greater" if op == "less" and left is number else op  # number < t is t > number
            assert message.startswith(f"{named}: a Python int out of range for the tensor's dtype: ")
            assert f"found the number {shown}" in message
            assert f"a tensor of dtype {dtype} and shape (2,)" in message
            assert holds in message and fix in message
    for op in set(_EXACT) - set(also):
        assert _BINARY_OPS[op](t, number).shape == _BINARY_OPS[op](number, t).shape == (2,)
    if fix == "x.astype('int64')":
        assert (t.astype("int64") + number).tolist() == [number + 1, number + 2]


def test_a_python_int_out_of_range_written_in_place_is_a_dtype_error(numpy_backend: str) -> None:
    """The in-place forms raised NumPy's OverflowError too: ``x[i] = n``, ``x.at[i].set(n)``,
    ``x.at[i].add(n)`` (with basic and repeated indices), and ``x += n`` (an add)."""
    t = sg.tensor(np.array([1, 2], np.int32))
    cases = {
        "x[index] = value": lambda: t.__setitem__(0, 2**40),
        "at[...].set": lambda: t.at[0].set(2**40),
        "at[...].add": lambda: t.at[0].add(2**40),
        "at[...].add ": lambda: t.at[np.array([0, 0])].add(2**40),
    }
    for op, compute in cases.items():
        with pytest.raises(sg.DTypeError, match=rf"^{re.escape(op.strip())}: a Python int out of range .* int32"):
            compute()
    with pytest.raises(sg.DTypeError, match=r"^add: .*found the number 1099511627776 with a tensor of dtype int32"):
        t += 2**40
    assert t.tolist() == [1, 2]


def test_a_boolean_subtraction_is_a_dtype_error(numpy_backend: str) -> None:
    """NumPy's TypeError ("numpy boolean subtract, the `-` operator, is not supported") leaked
    from a boolean minus a boolean: tensors, a Python or NumPy boolean on either side, a NumPy
    boolean array. It is a DTypeError naming both operands and the fixes."""
    b = sg.tensor(np.array([True, False]))
    cases = [
        (lambda: b - b, "a tensor of dtype bool and shape (2,) minus a tensor of dtype bool and shape (2,)"),
        (lambda: sg.sub(b, True), "a tensor of dtype bool and shape (2,) minus the number True"),
        (lambda: False - b, "the number False minus a tensor of dtype bool and shape (2,)"),
        (lambda: b - np.bool_(True), "minus the number True"),
        (lambda: np.array([True, False]) - b, "minus a tensor of dtype bool"),
    ]
    for compute, found in cases:
        with pytest.raises(sg.DTypeError) as raised:
            compute()
        message = str(raised.value)
        assert message.startswith("sub: subtraction is not defined for booleans: found ")
        assert found in message
        assert "sg.logical_xor(a, b)" in message and "a.astype('int64') - b" in message
    assert sg.logical_xor(b, b).tolist() == [False, False]
    assert (b - 1).tolist() == [0, -1]  # a boolean with a number of another kind is arithmetic


def test_a_boolean_negative_sign_or_unbounded_clamp_is_a_dtype_error(numpy_backend: str) -> None:
    """``-t``, ``neg``, ``sign`` and ``clamp`` without bounds leaked NumPy's TypeError on a
    boolean tensor ("The numpy boolean negative ... is not supported", no ``sign`` or
    ``positive`` loop for booleans); each is a DTypeError naming the op, dtype, shape and fix."""
    b = sg.tensor(np.array([[True, False]]))
    cases = [
        ("neg", lambda: -b, "sg.logical_not(x)"),
        ("neg", lambda: sg.neg(b), "-x.astype('int64')"),
        ("sign", lambda: sg.sign(b), "x.astype('int64') is its sign"),
        ("clamp", lambda: sg.clamp(b), "give it bounds"),
        ("round", lambda: sg.round(b), "x.astype('float32')"),  # was float16 (NumPy's); PyTorch refuses it
    ]
    for op, compute, fix in cases:
        with pytest.raises(sg.DTypeError) as raised:
            compute()
        message = str(raised.value)
        assert message.startswith(f"{op}: not defined for booleans: found a tensor of dtype bool and shape (1, 2); ")
        assert fix in message
    assert sg.logical_not(b).tolist() == [[False, True]]
    assert (-b.astype("int64")).tolist() == [[-1, 0]]


def test_a_compiled_step_raises_eager_s_dtype_errors(numpy_backend: str) -> None:
    """sg.compile records on NumPy (the autouse ``_records_on_numpy`` of test_compile.py): a
    compiled step given a number out of its tensor's range, or booleans to subtract, raises
    the DTypeError the eager step raises. A number is a constant of the recording, so a new
    one records again (raising as eagerly); the next valid call replays."""

    def step(x: Any, n: Any) -> Any:
        return (x + n).sum()

    compiled = sg.compile(step)
    t = sg.tensor(np.array([1, 2], np.int32))
    assert compiled(t, 1).item() == compiled(t, 1).item() == 5
    for n in (2**40, np.int64(2**40)):
        with pytest.raises(sg.DTypeError) as eager:
            step(t, n)
        with pytest.raises(sg.DTypeError) as replayed:
            compiled(t, n)
        assert str(replayed.value) == str(eager.value)
        assert "found the number 1099511627776 with a tensor of dtype int32" in str(eager.value)
    assert compiled(t, 1).item() == 5
    assert len(compiled.recordings) == 1 and compiled.recordings[0].replays == 2

    def masks(a: Any, b: Any) -> Any:
        return a - b, -a

    compiled_masks = sg.compile(masks)
    b = sg.tensor(np.array([True, False]))
    for _ in range(2):
        with pytest.raises(sg.DTypeError, match="^sub: subtraction is not defined for booleans"):
            compiled_masks(b, b)
