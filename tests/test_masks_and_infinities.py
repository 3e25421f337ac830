"""Values and gradients through masks, infinities and singular points, against PyTorch on
every backend: a rule or forward that keeps values by a 0/1 mask selects them (``inf · 0``
would be NaN where PyTorch gives 0), and the compositions ``norm`` and ``std`` have rules
of their own that are 0 at a zero norm or deviation (issue #24 items 4 and 5)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import shapegrad as sg
from shapegrad.ops.conv import max_pool2d

torch = pytest.importorskip("torch", reason="PyTorch is the oracle here: pip install -e '.[dev,torch]' (torch==2.13.0)")
F = torch.nn.functional

INF = np.inf
DTYPES = ["float64", "float32"]  # float32 on NumPy runs the numba kernels where they exist


def against_torch(
    arrays: list[np.ndarray], ours: Callable[..., Any], theirs: Callable[..., Any], dtype: str = "float64"
) -> None:
    """``ours`` and ``theirs`` agree in value and in the gradient of ``sum(w · f(inputs))``,
    NaN for NaN and infinity for infinity (so a NaN where PyTorch has a number fails)."""
    with np.errstate(all="ignore"):  # inf - inf in the weighted sums; inf · 0 where PyTorch has it too
        _against_torch([a.astype(dtype) for a in arrays], ours, theirs, dtype)


def _against_torch(arrays: list[np.ndarray], ours: Callable[..., Any], theirs: Callable[..., Any], dtype: str) -> None:
    grads = sg.Gradients()
    traced = [sg.tensor(a).trace(grads) for a in arrays]
    out = ours(*traced)
    t_inputs = [torch.tensor(a, requires_grad=True) for a in arrays]
    t_out = theirs(*t_inputs)
    rtol = 1e-12 if dtype == "float64" else 1e-6
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=rtol, err_msg="forward")
    weights = np.random.default_rng(7).uniform(0.5, 1.5, tuple(t_out.shape)).astype(dtype)
    (out * sg.tensor(weights)).sum().backward()
    (t_out * torch.tensor(weights)).sum().backward()
    for i, (t_in, tensor) in enumerate(zip(t_inputs, traced, strict=True)):
        expected = t_in.grad.numpy() if t_in.grad is not None else np.zeros(t_in.shape, dtype)
        found = grads[tensor].numpy() if tensor in grads else np.zeros(tensor.shape, dtype)
        np.testing.assert_allclose(found, expected, rtol=rtol, err_msg=f"gradient of input {i}")


# Squared distances as a Gram-matrix formula gives them: slightly negative for equal points.
D2 = np.array([[-1e-7, 0.25, 4.0], [2.0, -3e-9, 9.0]])


@pytest.mark.parametrize("dtype", DTYPES)
def test_sqrt_of_clamped_squared_distances_has_gradient_0_below_zero(backend: str, dtype: str) -> None:
    """issue #24 item 4: sqrt(clamp(d2, min=0)) at a slightly negative d2: clamp's rule
    selects, so sqrt's infinite derivative at 0 gives 0 there, not NaN."""
    against_torch([D2], lambda d: sg.sqrt(sg.clamp(d, min=0.0)), lambda d: torch.sqrt(torch.clamp(d, min=0.0)), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sqrt_of_relu_has_gradient_0_below_zero(backend: str, dtype: str) -> None:
    """issue #24 item 4: the same through relu: its xp rule, the numba kernel (NumPy,
    float32) and the CuPy kernel (emulated) all select."""
    against_torch([D2], lambda d: sg.sqrt(sg.relu(d)), lambda d: torch.sqrt(torch.relu(d)), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sqrt_of_maximum_with_0_has_gradient_0_below_zero(backend: str, dtype: str) -> None:
    """issue #24 item 4: maximum(x, 0) (and minimum, its mirror) send the gradient by selection."""
    against_torch([D2], lambda d: sg.sqrt(sg.maximum(d, 0.0)), lambda d: torch.sqrt(torch.clamp_min(d, 0.0)), dtype)
    against_torch([-D2], lambda d: sg.sqrt(-sg.minimum(d, 0.0)), lambda d: torch.sqrt(-torch.clamp_max(d, 0.0)), dtype)


def test_tril_and_triu_of_infinities_are_zero_outside_the_triangle(backend: str) -> None:
    """issue #24 item 4: tril/triu select (a product with the 0/1 triangle made NaN of an
    infinite value outside it), and their rules send sqrt's infinite derivative at the
    zeros nowhere."""
    scores = np.array([[1.0, INF, -INF], [2.0, 3.0, INF], [-INF, 4.0, 5.0]])
    against_torch([scores], sg.tril, torch.tril)
    against_torch([scores], lambda x: sg.triu(x, 1), lambda x: torch.triu(x, 1))
    positive = np.abs(scores) + 1.0
    against_torch([positive], lambda x: sg.sqrt(sg.tril(x)), lambda x: torch.sqrt(torch.tril(x)))


@pytest.mark.parametrize("k", [sg.tensor(np.array(1)), 1.0, "1"])
@pytest.mark.parametrize("triangle", [sg.tril, sg.triu])
def test_tril_and_triu_refuse_a_diagonal_offset_that_is_not_an_integer(backend: str, k: Any, triangle: Any) -> None:
    """A 0-d tensor k failed with an AttributeError from deep inside NumPy (and sg.compile
    recorded a triangle at its first call); a float k drew a triangle. PyTorch refuses both,
    as these do, naming k; a NumPy integer is an integer."""
    x = sg.ones(3, 3)
    with pytest.raises(sg.DTypeError, match="integer diagonal offset k"):
        triangle(x, k)
    with warnings.catch_warnings(), pytest.raises(sg.DTypeError, match="integer diagonal offset k"):
        warnings.simplefilter("ignore", sg.CompileWarning)  # backends sg.compile runs eagerly
        sg.compile(lambda x: triangle(x, k).sum())(x)
    assert triangle(x, np.int64(1)).numpy().tolist() == triangle(x, 1).numpy().tolist()


@pytest.mark.parametrize("offset", [-1, 0, 1, 2, 5])
def test_diagonal_of_causal_scores_holding_minus_infinity(backend: str, offset: int) -> None:
    """issue #24 item 4: diagonal picks its values (it summed x times an identity mask,
    so a -inf anywhere in a row made that row's diagonal value NaN)."""
    causal = np.triu(np.full((2, 3, 4), -INF), 1) + np.arange(24.0).reshape(2, 3, 4)
    against_torch([causal], lambda x: sg.diagonal(x, offset), lambda x: torch.diagonal(x, offset, -2, -1))


def test_diag_of_a_vector_holding_infinities(backend: str) -> None:
    """issue #24 item 4: diag places v on the diagonal by selection (v · eye made NaN of
    every off-diagonal 0 in an infinite value's column)."""
    against_torch([np.array([INF, -2.0, -INF])], sg.diag, torch.diag)


def test_elu_at_plus_infinity(backend: str) -> None:
    """issue #24 item 4: elu's rule selects each branch after its product: at x = +inf the
    negative branch's factor is inf, which times the 0 mask was NaN."""
    x = np.array([INF, -INF, 2.0, -1.0, 0.0])
    against_torch([x], sg.elu, F.elu)
    against_torch([x], sg.selu, F.selu)


def test_max_pool_sends_an_infinite_gradient_only_to_the_maximum(backend: str) -> None:
    """issue #24 item 4: pooling's rule selects the winner of each window: sqrt's
    infinite derivative at a window's maximum 0 gives 0 to the other values, not NaN."""
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    x[0, 0, 2:, 2:] = [[-3.0, 0.0], [-1.0, -2.0]]  # the last window's maximum is 0
    against_torch(
        [x],
        lambda a: sg.sqrt(max_pool2d(a, (2, 2), (2, 2))),
        lambda a: torch.sqrt(F.max_pool2d(a, 2, 2)),
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_norm_of_a_zero_vector_has_gradient_0(backend: str, dtype: str) -> None:
    """issue #24 item 5: the 2-norm has a rule of its own, x / norm and 0 at a zero vector
    (sqrt's inf times the squares' 0 was NaN); PyTorch's vector_norm gives 0."""
    x = np.array([[0.0, 0.0, 0.0], [3.0, -4.0, 0.0]])
    against_torch([x], lambda a: sg.norm(a, axis=-1), lambda a: torch.linalg.vector_norm(a, dim=-1), dtype)
    against_torch([np.zeros((2, 3))], sg.norm, torch.linalg.vector_norm, dtype)
    against_torch(
        [x], lambda a: sg.norm(a, axis=0, keepdims=True), lambda a: torch.linalg.vector_norm(a, dim=0, keepdim=True)
    )


@pytest.mark.parametrize("correction", [0.0, 1.0])
def test_std_of_a_constant_slice_has_gradient_0(backend: str, correction: float) -> None:
    """issue #24 item 5: std has a rule of its own, (x - mean) / ((n - correction) std)
    and 0 where the std is 0 (a constant slice); PyTorch's std gives 0 there."""
    x = np.array([[2.0, 2.0, 2.0, 2.0], [1.0, -1.0, 3.0, 0.5]])
    against_torch(
        [x],
        lambda a: sg.std(a, axis=-1, correction=correction),
        lambda a: torch.std(a, dim=-1, correction=correction),
    )
    against_torch(
        [x.T],
        lambda a: sg.std(a, axis=0, keepdims=True, correction=correction),
        lambda a: torch.std(a, dim=0, keepdim=True, correction=correction),
    )
    against_torch([np.full((2, 3), 5.0)], lambda a: sg.std(a), lambda a: torch.std(a, correction=0))


@pytest.mark.filterwarnings(
    "ignore:var\\(\\). degrees of freedom:UserWarning", "ignore:std\\(\\). degrees of freedom:UserWarning"
)
def test_var_and_std_with_as_many_values_as_the_correction_are_pytorch_s(backend: str) -> None:
    """n - correction = 0: PyTorch (and NumPy's ddof) divide by 0, inf for a slice whose
    values differ and NaN for a constant one (0/0); here every such slice was NaN. (var's
    gradient there stays NaN, where PyTorch's own rule gives ±inf: var is composite.)"""
    x = np.array([[1.0, 2.0, 7.0], [3.0, 2.0, 7.0]])  # a column that differs, two constant ones
    with np.errstate(all="ignore"):
        value = sg.var(sg.tensor(x), axis=0, correction=2).numpy()
    np.testing.assert_array_equal(value, torch.var(torch.tensor(x), dim=0, correction=2).numpy())
    against_torch([x], lambda a: sg.std(a, axis=0, correction=2), lambda a: torch.std(a, dim=0, correction=2))


# Every masking op changed for items 4 and 5, with ±inf among its inputs: PyTorch's value
# and gradient, NaN only where PyTorch has NaN.
SWEEP: list[tuple[str, Callable[..., Any], Callable[..., Any]]] = [
    ("relu", sg.relu, torch.relu),
    ("leaky_relu", lambda x: sg.leaky_relu(x, 0.1), lambda x: F.leaky_relu(x, 0.1)),
    ("clamp", lambda x: sg.clamp(x, -1.0, 2.0), lambda x: torch.clamp(x, -1.0, 2.0)),
    ("hardtanh", sg.hardtanh, F.hardtanh),
    ("maximum", lambda x: sg.maximum(x, 0.5), lambda x: torch.clamp_min(x, 0.5)),
    ("minimum", lambda x: sg.minimum(x, 0.5), lambda x: torch.clamp_max(x, 0.5)),
    ("elu", sg.elu, F.elu),
    ("selu", sg.selu, F.selu),
    ("tril", sg.tril, torch.tril),
    ("triu", lambda x: sg.triu(x, 1), lambda x: torch.triu(x, 1)),
    ("diagonal", sg.diagonal, lambda x: torch.diagonal(x, 0, -2, -1)),
    ("diagonal_offset", lambda x: sg.diagonal(x, -1), lambda x: torch.diagonal(x, -1, -2, -1)),
    ("diag", lambda x: sg.diag(x.reshape(-1)), lambda x: torch.diag(x.reshape(-1))),
    (
        "max_pool2d",
        lambda x: max_pool2d(x.reshape(1, 1, 4, 4), (2, 2), (2, 2)),
        lambda x: F.max_pool2d(x.reshape(1, 1, 4, 4), 2, 2),
    ),
    (
        "masked_fill",
        lambda x: sg.masked_fill(x, sg.tril(sg.ones(4, 4)) == 0, -INF),
        lambda x: x.masked_fill(torch.tril(torch.ones(4, 4)) == 0, -INF),
    ),
    ("norm", lambda x: sg.norm(x, axis=-1), lambda x: torch.linalg.vector_norm(x, dim=-1)),
]


@pytest.mark.parametrize(("name", "ours", "theirs"), SWEEP, ids=[row[0] for row in SWEEP])
def test_masking_ops_with_infinite_inputs(backend: str, name: str, ours: Any, theirs: Any) -> None:
    """issue #24 item 4: ±inf in the inputs of each op that keeps values by a mask."""
    x = np.random.default_rng(len(name)).uniform(-3.0, 3.0, (4, 4))
    x[0, 1], x[1, 0], x[2, 3], x[3, 3] = INF, -INF, -INF, INF
    against_torch([x], ours, theirs)


# Rows a cross-entropy ignores, holding a masked (-inf) logit: 0, not -inf · 0 = NaN.
MASKED_LOGITS = np.array([[-INF, 1.0, 2.0], [0.0, -INF, 1.0], [3.0, 3.0, 3.0], [1.0, 2.0, -INF]])
MASKED_LABELS = np.array([-100, 2, 0, 1])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize(
    "options",
    [{}, {"weight": [0.5, 1.0, 2.0]}, {"label_smoothing": 0.1}, {"weight": [0.5, 1.0, 2.0], "label_smoothing": 0.2}],
    ids=["plain", "weight", "smoothing", "weight-smoothing"],
)
def test_cross_entropy_ignores_a_row_holding_minus_infinity(
    backend: str, dtype: str, reduction: str, options: dict[str, Any]
) -> None:
    def kwargs(make: Callable[[Any], Any]) -> dict[str, Any]:
        return {k: make(np.array(v, dtype)) if k == "weight" else v for k, v in options.items()}

    labels = MASKED_LABELS
    if options.get("label_smoothing"):  # smoothing reads every logit of a counted row: no -inf there
        logits = np.where(np.arange(4)[:, None] == 0, MASKED_LOGITS, np.nan_to_num(MASKED_LOGITS, neginf=-3.0))
    else:
        logits = MASKED_LOGITS
    against_torch(
        [logits],
        lambda x: sg.losses.cross_entropy(x, sg.tensor(labels), reduction=reduction, **kwargs(sg.tensor)),  # type: ignore[arg-type]
        lambda x: F.cross_entropy(x, torch.tensor(labels), reduction=reduction, **kwargs(torch.tensor)),
        dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_nll_loss_ignores_a_row_holding_minus_infinity(backend: str, dtype: str) -> None:
    against_torch(
        [MASKED_LOGITS],
        lambda x: sg.losses.nll_loss(x, sg.tensor(MASKED_LABELS), reduction="sum"),
        lambda x: F.nll_loss(x, torch.tensor(MASKED_LABELS), reduction="sum"),
        dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_and_min_over_a_slice_holding_nan_have_a_nan_gradient(backend: str, dtype: str, name: str) -> None:
    """A NaN extremum equals no value of its slice: torch.amax's gradient there is NaN (0/0),
    not the 0 that would pass a NaN loss off as a minimum."""
    if backend == "strict":
        pytest.skip("NaN comparisons are the same on every backend; one array API run suffices")
    data = np.array([[np.nan, 1.0, 2.0], [1.0, 3.0, 3.0]])
    ours, theirs = (sg.max, torch.amax) if name == "max" else (sg.min, torch.amin)
    against_torch([data], lambda x: ours(x, axis=-1), lambda x: theirs(x, -1), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_arctan2_at_the_origin_has_gradient_0(backend: str, dtype: str) -> None:
    """PyTorch's gradient of atan2 at (0, 0) is 0; x/(x² + y²) there is 0/0 = NaN."""
    y = np.array([0.0, -0.0, 0.0, 1.0, 0.0])
    x = np.array([0.0, 0.0, -0.0, 0.0, -2.0])
    against_torch([y, x], sg.arctan2, torch.atan2, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("kernel", "stride", "padding"), [(2, 2, 1), (2, 1, 1), (3, 1, 1), (3, 3, 1)])
def test_max_pool_window_at_minus_infinity_sends_its_gradient_inside_the_image(
    backend: str, dtype: str, kernel: int, stride: int, padding: int
) -> None:
    """A window whose values are all -inf took its first tap, padding (also -inf), and its
    gradient was lost; PyTorch's goes to the window's first element inside the image."""
    image = np.array([[[[-INF, -INF, 1.0], [-INF, -INF, 1.0], [2.0, 2.0, 2.0]]]])
    against_torch(
        [image],
        lambda x: max_pool2d(x, (kernel, kernel), (stride, stride), (padding, padding)),
        lambda x: F.max_pool2d(x, kernel, stride, padding),
        dtype,
    )


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool", "float16", "float32", "float64"])
def test_diag_keeps_the_dtype_of_its_vector_as_torch(backend: str, dtype: str) -> None:
    """``sg.diag`` of an integer or boolean vector was float64 (its 0.0 off the diagonal
    promoted it); ``torch.diag`` keeps the vector's dtype."""
    if backend == "strict" and dtype == "float16":
        pytest.skip("the strict backend has no float16")
    v = np.array([1, 0, 3]).astype(dtype)
    ours = sg.diag(sg.tensor(v))
    expected = torch.diag(torch.from_numpy(v))
    assert ours.backend_dtype_name() == str(expected.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(ours.numpy(), expected.numpy())


@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        ("int64", 2.0),
        ("int64", 7),
        ("int32", np.float64(3.0)),
        ("int8", -1),
        ("uint8", True),
        ("bool", False),
        ("bool", True),
        ("bool", 1.0),
        ("float32", np.float64(0.5)),
        ("float32", 2),
    ],
    ids=str,
)
def test_masked_fill_keeps_the_dtype_of_x_as_torch(backend: str, dtype: str, value: Any) -> None:
    """``masked_fill`` of an integer or boolean tensor with a float value was float64 (the
    value promoted it), and a NumPy float64 promoted a float32 tensor; PyTorch keeps x's dtype."""
    x = np.array([1, 0, 3]).astype(dtype)
    mask = np.array([True, False, True])
    ours = sg.masked_fill(sg.tensor(x), sg.tensor(mask), value)
    expected = torch.from_numpy(x).masked_fill(torch.from_numpy(mask), value)
    assert ours.backend_dtype_name() == str(expected.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(ours.numpy(), expected.numpy())


@pytest.mark.parametrize(
    ("dtype", "value", "match"),
    [
        ("int64", 2.5, r"the value 2.5 is not an integer, and x is a tensor of dtype int64"),
        ("int32", float("nan"), r"the value nan is not an integer"),
        ("int8", 300, r"the value 300 is out of range for x, a tensor of dtype int8 .* -128 to 127"),
        ("uint8", -1, r"the value -1 is out of range for x, a tensor of dtype uint8"),
        ("bool", 2.0, r"the value 2.0 is not a boolean, and x is a tensor of dtype bool"),
    ],
    ids=str,
)
def test_masked_fill_refuses_a_value_the_dtype_of_x_cannot_hold(
    backend: str, dtype: str, value: Any, match: str
) -> None:
    """Where PyTorch would change the value silently (2.5 truncated to 2, -1 wrapped to 255
    in uint8, 2.0 read as True) or raise, a ``DTypeError`` names the fix: convert x first."""
    x = sg.tensor(np.array([1, 0, 3]).astype(dtype))
    with pytest.raises(sg.DTypeError, match=match + r".*convert x first"):
        sg.masked_fill(x, sg.tensor([True, False, True]), value)


_ATAN2_DTYPES = ["bool", "int64", "int8", "uint8", "float16", "float32", "float64"]


@pytest.mark.parametrize("x_dtype", _ATAN2_DTYPES)
@pytest.mark.parametrize("y_dtype", _ATAN2_DTYPES)
def test_arctan2_of_integers_and_booleans_is_float32_as_torch(backend: str, y_dtype: str, x_dtype: str) -> None:
    """``arctan2`` of two booleans was float16 and of integers float64 (NumPy's smallest
    float for the inputs); PyTorch reads integers and booleans as float32, or as the other
    operand's float dtype."""
    if backend == "strict" and "float16" in (y_dtype, x_dtype):
        pytest.skip("the strict backend has no float16")
    y = np.array([1, 0, 2, 0]).astype(y_dtype)
    x = np.array([1, 1, 0, 0]).astype(x_dtype)
    expected = torch.atan2(torch.from_numpy(y), torch.from_numpy(x))
    ours = sg.arctan2(sg.tensor(y), sg.tensor(x))
    assert ours.backend_dtype_name() == str(expected.dtype).removeprefix("torch.")
    np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=1e-3)
    for number in (2, 2.5):
        expected = torch.atan2(torch.from_numpy(y), torch.tensor(number))
        assert sg.arctan2(sg.tensor(y), number).backend_dtype_name() == str(expected.dtype).removeprefix("torch.")
