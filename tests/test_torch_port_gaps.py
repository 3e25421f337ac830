"""What PyTorch ports met as gaps: ``MaxPool2d``'s ``dilation`` and ``return_indices`` (and
``MaxUnpool2d``), nearest up-sampling to any size, ``layer_norm`` with a weight or a bias
alone, and PyTorch's ``dim=`` keyword. Each against PyTorch in float64 (outputs and
gradients) and against finite differences, and its refusals by name."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.gradcheck import assert_gradients_match

import shapegrad as sg
from shapegrad import nn

torch = pytest.importorskip("torch", reason="PyTorch is the oracle here: pip install -e '.[dev,torch]' (torch==2.13.0)")
tnn = torch.nn
F = torch.nn.functional


def _input(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape) * 2.0 + 0.5


def _both(ours: Any, theirs: Any, x: np.ndarray) -> tuple[Any, Any, Any, Any, Any]:
    """``ours`` on a traced ``x`` and ``theirs`` on a torch ``x`` that wants a gradient:
    ``(grads, traced x, our output, torch's x, torch's output)``."""
    grads = sg.Gradients()
    xt = sg.tensor(x).trace(grads, keep_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    return grads, xt, ours(xt), tx, theirs(tx)


def _grad_of_weighted_sum(out: Any, tout: Any, seed: int = 5) -> None:
    w = np.random.default_rng(seed).standard_normal(out.shape)
    (out * sg.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()


# --------------------------------------------------------------------------- MaxPool2d
# (kernel, stride, padding, dilation, ceil_mode): dilated windows with padding, pairs of
# each, and ceil_mode's last windows running past the end.
DILATED = [
    (2, None, 0, 1, False),
    (3, 2, 1, 2, False),
    (3, 1, 1, 3, False),
    ((3, 2), (2, 1), (1, 1), (2, 3), True),
    (2, 2, 0, 2, True),
    (3, 2, 1, 2, True),
]


@pytest.mark.parametrize("settings", DILATED, ids=str)
@pytest.mark.parametrize("shape", [(2, 3, 9, 8), (3, 7, 7)], ids=["batched", "unbatched"])
def test_max_pool_dilation_and_indices_are_torch_s(
    settings: tuple[Any, ...], shape: tuple[int, ...], backend: str
) -> None:
    """``nn.MaxPool2d(dilation=...)`` and ``return_indices=True`` were refused (no such
    arguments). Now PyTorch's values, int64 indices into each H·W plane and gradient, the
    layer loaded from PyTorch's (both settings compared). Ties included (small integers)."""
    kernel, stride, padding, dilation, ceil_mode = settings
    ints = np.random.default_rng(1).integers(-2, 3, shape).astype(np.float64)
    for x in (_input(*shape), ints):
        ours = nn.MaxPool2d(kernel, stride, padding, dilation, return_indices=True, ceil_mode=ceil_mode)
        theirs = tnn.MaxPool2d(kernel, stride, padding, dilation, return_indices=True, ceil_mode=ceil_mode)
        sg.nn.from_torch(ours, theirs)
        grads, xt, (values, indices), tx, (tvalues, tindices) = _both(ours, theirs, x)
        np.testing.assert_array_equal(values.numpy(), tvalues.detach().numpy())
        assert indices.backend_dtype_name() == "int64" and not indices.traced
        np.testing.assert_array_equal(indices.numpy(), tindices.numpy())
        _grad_of_weighted_sum(values, tvalues)
        np.testing.assert_allclose(grads[xt].numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
        plain = nn.MaxPool2d(kernel, stride, padding, dilation, ceil_mode=ceil_mode)(sg.tensor(x))
        np.testing.assert_array_equal(plain.numpy(), values.numpy())


def test_max_pool_function_form_is_torch_s(numpy_backend: str) -> None:
    """``sg.nn.max_pool2d`` takes ``F.max_pool2d``'s arguments in its order (``ceil_mode``
    before ``return_indices``)."""
    x = _input(2, 3, 9, 8)
    values, indices = nn.max_pool2d(sg.tensor(x), 3, 2, 1, 2, True, return_indices=True)
    tvalues, tindices = F.max_pool2d(torch.tensor(x), 3, 2, 1, 2, True, True)
    np.testing.assert_array_equal(values.numpy(), tvalues.numpy())
    np.testing.assert_array_equal(indices.numpy(), tindices.numpy())
    alone = nn.max_pool2d(sg.tensor(x[0]), (2, 3), dilation=(2, 1))
    np.testing.assert_array_equal(alone.numpy(), F.max_pool2d(torch.tensor(x[0]), (2, 3), dilation=(2, 1)).numpy())


def test_max_pool_dilation_without_compiled_kernels_and_by_finite_differences(numpy_backend: str) -> None:
    """The reference passes (no numba) give PyTorch's numbers too, and the dilated rule's
    gradient is the finite differences'."""
    from shapegrad.ops import conv

    x = _input(2, 3, 9, 8)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(conv, "fused_kernel", lambda *_: None)
        for kernel, stride, padding, dilation, ceil_mode in DILATED:
            ours = nn.max_pool2d(sg.tensor(x), kernel, stride, padding, dilation, ceil_mode)
            theirs = F.max_pool2d(torch.tensor(x), kernel, stride, padding, dilation, ceil_mode)
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    for kernel, stride, padding, dilation, ceil_mode in DILATED[1:]:
        pool = nn.MaxPool2d(kernel, stride, padding, dilation, ceil_mode=ceil_mode)
        assert_gradients_match(pool, [_input(1, 2, 7, 8)])


@pytest.mark.parametrize("settings", [(2, None, 0), (3, 2, 1), ((2, 3), (2, 1), (1, 1))], ids=str)
@pytest.mark.parametrize("shape", [(2, 3, 8, 7), (3, 6, 6)], ids=["batched", "unbatched"])
def test_max_unpool_is_torch_s(settings: tuple[Any, ...], shape: tuple[int, ...], backend: str) -> None:
    """``nn.MaxUnpool2d`` (and ``sg.nn.max_unpool2d``) did not exist. Now PyTorch's: each
    value at its index in a plane of zeros, of the default size or an ``output_size``;
    the values' gradient is the output's at their indices."""
    x = _input(*shape)
    pooled, indices = nn.MaxPool2d(*settings, return_indices=True)(sg.tensor(x))
    tpooled, tindices = tnn.MaxPool2d(*settings, return_indices=True)(torch.tensor(x))
    checked = 0
    for output_size in (None, shape[-2:]):
        try:
            expected_shape = tnn.MaxUnpool2d(*settings)(tpooled, tindices, output_size=output_size).shape
        except (ValueError, RuntimeError) as error:  # a size outside PyTorch's bounds, or too small for an index
            match = "output_size .* strictly between" if isinstance(error, ValueError) else "outside the output's"
            with pytest.raises(sg.ShapeError, match=match):
                nn.MaxUnpool2d(*settings)(pooled, indices, output_size=output_size).numpy()  # a device checks lazily
            continue
        unpool = nn.MaxUnpool2d(*settings)
        sg.nn.from_torch(unpool, tnn.MaxUnpool2d(*settings))
        grads = sg.Gradients()
        values = pooled.detach().trace(grads, keep_grad=True)
        out = unpool(values, indices, output_size)
        tvalues = tpooled.detach().requires_grad_()
        tout = F.max_unpool2d(tvalues, tindices, *settings, output_size=output_size)
        assert out.shape == tuple(tout.shape) == tuple(expected_shape)
        np.testing.assert_array_equal(out.numpy(), tout.detach().numpy())
        _grad_of_weighted_sum(out, tout)
        np.testing.assert_array_equal(grads[values].numpy(), tvalues.grad.numpy())
        checked += 1
        flat = indices.numpy().reshape(-1, indices.shape[-2] * indices.shape[-1])
        if any(len(set(plane)) < len(plane) for plane in flat.tolist()):
            continue  # overlapping windows' shared maximum: one value is kept, the gradient reaches each (as PyTorch)
        assert_gradients_match(
            lambda v, size=output_size: nn.max_unpool2d(v, indices, *settings, output_size=size), [pooled.numpy()]
        )
    assert checked


def test_max_pool_indices_refusals_and_types(numpy_backend: str) -> None:
    """Settings that are not PyTorch's kinds are refused by name; an unpooling's indices
    must be the input's shape, integers, and inside the output's plane."""
    x = sg.ones(1, 2, 4, 4)
    pair = nn.MaxPool2d(2, return_indices=True)(x)
    assert isinstance(pair, tuple) and pair[0].shape == pair[1].shape == (1, 2, 2, 2)
    with pytest.raises(sg.HyperparameterError, match="return_indices True or False, found 1"):
        nn.MaxPool2d(2, return_indices=1)  # pyright: ignore[reportArgumentType]
    with pytest.raises(sg.HyperparameterError, match=r"positive dilation, found dilation=0"):
        nn.MaxPool2d(2, dilation=0)
    with pytest.raises(sg.ShapeError, match=r"padding \(1, 1\), dilation \(3, 3\)\) does not fit .* 3×3"):
        nn.MaxPool2d(3, padding=1, dilation=3)(sg.ones(1, 1, 3, 3))
    with pytest.raises(sg.CheckpointError, match="dilation=2 in PyTorch, \\(1, 1\\) here"):
        sg.nn.from_torch(nn.MaxPool2d(2), tnn.MaxPool2d(2, dilation=2))
    with pytest.raises(sg.CheckpointError, match="return_indices=True in PyTorch, False here"):
        sg.nn.from_torch(nn.MaxPool2d(2), tnn.MaxPool2d(2, return_indices=True))
    values, indices = pair
    with pytest.raises(sg.ShapeError, match=r"indices of the input's shape \(1, 2, 2, 2\), found shape \(2, 2, 2\)"):
        nn.max_unpool2d(values, indices[0], 2)
    with pytest.raises(sg.DTypeError, match="integer indices .* found float32"):
        nn.max_unpool2d(values, values, 2)
    with pytest.raises(sg.ShapeError, match=r"outside the output's 4×4 plane \(0 to 15\)"):
        nn.max_unpool2d(values, indices + 16, 2)
    with pytest.raises(sg.ShapeError, match=r"unbatched \(channels, height, width\), found shape \(2, 4\)"):
        nn.MaxPool2d(2, return_indices=True)(sg.ones(2, 4))


# --------------------------------------------------------------------------- nearest Upsample
NEAREST_SIZES = [
    ("nearest", (7, 5), (2, 3, 3, 4)),  # up, neither a multiple
    ("nearest", (3, 2), (1, 2, 5, 7)),  # down
    ("nearest", (6, 46), (1, 1, 4, 14)),  # 14 -> 46: float64 would pick another pixel than PyTorch's float32
    ("nearest", (6, 9), (1, 2, 3, 3)),  # a whole multiple: the blocks
    ("nearest-exact", (7, 5), (2, 3, 3, 4)),
    ("nearest-exact", (4, 11), (1, 2, 6, 4)),
    ("nearest-exact", (6, 8), (1, 2, 3, 4)),
]


@pytest.mark.parametrize(("mode", "size", "shape"), NEAREST_SIZES, ids=str)
def test_nearest_upsample_to_any_size_is_torch_s(
    mode: str, size: tuple[int, int], shape: tuple[int, ...], backend: str
) -> None:
    """``nn.Upsample(size=..., mode="nearest")`` to a size that is not a multiple of the
    input was refused (a ``ShapeError``), and ``"nearest-exact"`` when built. Now PyTorch's
    pixels and gradient (each output pixel's added into its source), and the layer loads
    from PyTorch's (mode and size compared)."""
    x = _input(*shape)
    ours, theirs = nn.Upsample(size=size, mode=mode), tnn.Upsample(size=size, mode=mode)
    sg.nn.from_torch(ours, theirs)
    grads, xt, out, tx, tout = _both(ours, theirs, x)
    assert out.shape == tuple(tout.shape)
    np.testing.assert_array_equal(out.numpy(), tout.detach().numpy())
    _grad_of_weighted_sum(out, tout)
    np.testing.assert_allclose(grads[xt].numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_nearest_upsample_gradient_and_factors(numpy_backend: str) -> None:
    """The gathered gradient is the finite differences'; by whole factors "nearest-exact" is
    PyTorch's too; align_corners stays refused with either nearest mode."""
    assert_gradients_match(nn.Upsample(size=(5, 3), mode="nearest"), [_input(1, 2, 3, 4)])
    assert_gradients_match(nn.Upsample(size=(2, 7), mode="nearest-exact"), [_input(1, 2, 3, 4)])
    x = _input(1, 2, 3, 5)
    for factor in (2, (3, 2)):
        ours = nn.Upsample(scale_factor=factor, mode="nearest-exact")(sg.tensor(x))
        theirs = tnn.Upsample(scale_factor=factor, mode="nearest-exact")(torch.tensor(x))
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(sg.HyperparameterError, match="align_corners=None with mode='nearest-exact'"):
        nn.Upsample(size=3, mode="nearest-exact", align_corners=False)
    with pytest.raises(sg.HyperparameterError, match="'nearest', 'nearest-exact' or 'bilinear', found mode='area'"):
        nn.Upsample(size=3, mode="area")


# --------------------------------------------------------------------------- layer_norm
@pytest.mark.parametrize("affine", ["weight", "bias", "both", "neither"])
def test_layer_norm_function_with_a_weight_or_a_bias_alone_is_torch_s(affine: str, backend: str) -> None:
    """``sg.layer_norm(x, weight)`` and ``sg.layer_norm(x, None, bias)`` (PyTorch's
    ``F.layer_norm(x, shape, weight=None, bias=...)``) were a ``ShapeError`` ("both weight and
    bias, or neither"). Now PyTorch's output and gradients for the input and each given
    parameter."""
    rng = np.random.default_rng(2)
    x, w, b = _input(2, 3, 5), rng.standard_normal(5), rng.standard_normal(5)
    grads = sg.Gradients()
    xt = sg.tensor(x).trace(grads, keep_grad=True)
    wt = sg.tensor(w).trace(grads, keep_grad=True) if affine in ("weight", "both") else None
    bt = sg.tensor(b).trace(grads, keep_grad=True) if affine in ("bias", "both") else None
    out = sg.layer_norm(xt, wt, bt, 1e-3)
    tx = torch.tensor(x, requires_grad=True)
    tw = None if wt is None else torch.tensor(w, requires_grad=True)
    tb = None if bt is None else torch.tensor(b, requires_grad=True)
    tout = F.layer_norm(tx, (5,), weight=tw, bias=tb, eps=1e-3)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-12, atol=1e-12)
    _grad_of_weighted_sum(out, tout)
    for ours, theirs in ((xt, tx), (wt, tw), (bt, tb)):
        if ours is not None:
            np.testing.assert_allclose(grads[ours].numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_layer_norm_function_one_parameter_by_finite_differences_and_refusals(numpy_backend: str) -> None:
    rng = np.random.default_rng(3)
    x, w = _input(3, 4), rng.standard_normal(4)
    assert_gradients_match(lambda a, p: sg.layer_norm(a, p), [x, w])
    assert_gradients_match(lambda a, p: sg.layer_norm(a, None, p), [x, w])
    with pytest.raises(sg.ShapeError, match=r"layer_norm: bias of shape \(3,\) for input \(3, 4\); expected \(4,\)"):
        sg.layer_norm(sg.tensor(x), None, sg.ones(3, dtype="float64"))
    # LayerNorm(bias=False) is the weight alone, as the function is
    norm = nn.LayerNorm(4, bias=False)
    np.testing.assert_allclose(norm(sg.tensor(x)).numpy(), sg.layer_norm(sg.tensor(x), norm.weight).numpy())


# --------------------------------------------------------------------------- dim=
def _axis_ops() -> list[str]:
    """Every op of the table whose function form takes ``axis`` with a default, at run time:
    those whose axis is required (``cumsum``, ``flip``, ``roll``, ``narrow``, ``unflatten``,
    ``expand_dims``, ...) take None there, so that ``dim=`` reaches the refusal instead of
    Python's "missing 1 required positional argument: 'axis'"."""
    import inspect

    from shapegrad._opspec import OPS

    names = []
    for op in OPS:
        function = getattr(sg, op.name, None)
        if function is None or op.module is None:
            continue
        axis = inspect.signature(function).parameters.get("axis")
        if axis is not None and axis.default is not inspect.Parameter.empty:
            names.append(op.name)
    return names


def _call(name: str, method: bool, **keywords: Any) -> Any:
    x = sg.tensor(np.arange(1.0, 7.0).reshape(2, 3))
    args: dict[str, tuple[Any, ...]] = {"concat": ([x, x],), "stack": ([x, x],), "split": (x, 1), "chunk": (x, 2)}
    args |= {"topk": (x, 1), "take_along_axis": (x, sg.tensor(np.zeros((2, 1), dtype=np.int64)))}
    args |= {"roll": (x, 1)}
    if name in ("squeeze", "expand_dims"):
        x = sg.ones(2, 1, 3)
    first, *rest = args.get(name, (x,))
    if method:
        return getattr(first, name)(*rest, **keywords)
    return getattr(sg, name)(first, *rest, **keywords)


@pytest.mark.parametrize("method", [False, True], ids=["function", "method"])
@pytest.mark.parametrize("name", _axis_ops())
def test_torch_dim_keyword_names_axis(name: str, method: bool, numpy_backend: str) -> None:
    """``x.sum(dim=1)``, ``sg.softmax(x, dim=-1)``, ``sg.concat(xs, dim=0)``: Python's bare
    "unexpected keyword argument 'dim'". Now a ``KeywordError`` (a ``TypeError``) that names
    ``axis=``, for every op that takes an ``axis`` with a default, in both forms;
    ``keepdim=`` names ``keepdims=``; any other unknown keyword stays Python's message (but
    ``dims=``, PyTorch's for flip and roll, in those two)."""
    if method and not hasattr(sg.Tensor, name):
        pytest.skip(f"{name} has no method form")
    with pytest.raises(
        sg.KeywordError,
        match=rf"{name}\(\) got an unexpected keyword argument 'dim': shapegrad spells "
        r"PyTorch's dim= as axis= \(write axis=0\)",
    ):
        _call(name, method, dim=0)
    with pytest.raises(TypeError, match=rf"{name}\(\) got an unexpected keyword argument 'dims'") as caught:
        _call(name, method, dims=0)
    # flip's and roll's dims= are PyTorch's (test_flip_and_roll_name_pytorchs_dims_and_shifts)
    assert isinstance(caught.value, sg.KeywordError) == (name in ("flip", "roll"))


def test_ops_whose_axis_is_required_name_axis_and_still_require_it(numpy_backend: str) -> None:
    """``cumsum``, ``cumprod``, ``flip``, ``roll``, ``narrow``, ``unflatten`` and
    ``expand_dims`` have no default axis (as PyTorch's ``dim``): ``dim=`` was Python's bare
    "missing 1 required positional argument: 'axis'"; now a ``KeywordError`` naming ``axis=``
    (``test_torch_dim_keyword_names_axis``), and a call without an axis is still a
    ``TypeError`` naming the missing argument."""
    required = {"cumsum", "cumprod", "flip", "roll", "narrow", "unflatten", "expand_dims"}
    assert required <= set(_axis_ops())
    x = sg.ones(2, 3)
    with pytest.raises(sg.KeywordError, match=r"narrow\(\) .* dim= as axis= \(write axis=1\)"):
        x.narrow(dim=1, start=0, length=2)
    for call in (lambda: sg.cumsum(x), lambda: x.flip(), lambda: sg.roll(x, 1), lambda: x.expand_dims()):
        with pytest.raises(TypeError, match=r"missing 1 required argument: 'axis'") as caught:
            call()
        assert not isinstance(caught.value, sg.KeywordError)
    with pytest.raises(TypeError, match=r"narrow\(\) missing 1 required argument: 'length'"):
        sg.narrow(x, 1, 0)
    assert sg.cumsum(x, 1).shape == x.flip(0).shape == sg.roll(x, 1, axis=1).shape == (2, 3)
    assert sg.narrow(x, 1, 0, 2).shape == (2, 2) and x.unflatten(1, (3, 1)).shape == (2, 3, 1)


def test_torch_keepdim_keyword_names_keepdims(numpy_backend: str) -> None:
    x = sg.ones(2, 3)
    assert {"sum", "mean", "max", "softmax", "concat", "topk"} <= set(_axis_ops())
    with pytest.raises(sg.KeywordError, match="PyTorch's keepdim= as keepdims= \\(write keepdims=True\\)"):
        x.mean(1, keepdim=True)
    with pytest.raises(sg.KeywordError, match="keepdim= as keepdims="):
        sg.max(x, axis=1, keepdim=False)


# --------------------------------------------------------------------------- compiled
class _PoolUnpool(nn.Module):
    def __init__(self) -> None:
        self.conv = nn.Conv2d(3, in_channels=2, out_channels=2, padding=1, dtype="float64")
        self.pool = nn.MaxPool2d(2, return_indices=True)
        self.unpool = nn.MaxUnpool2d(2)
        self.up = nn.Upsample(size=(7, 5))

    def __call__(self, x: Any) -> Any:
        values, indices = self.pool(self.conv(x))
        return sg.layer_norm(self.up(self.unpool(values, indices)), None, sg.ones(5, dtype="float64"))


def test_a_compiled_step_recomputes_indices_and_sources(numpy_backend: str) -> None:
    """A compiled training step through the pooling's indices, the unpooling, nearest to a
    size and a bias-only layer_norm replays (no fallback to eager), new inputs each call, and
    gives the eager run's losses bit for bit: the indices are recomputed at each replay."""
    target = sg.tensor(np.random.default_rng(9).standard_normal((2, 2, 7, 5)))
    runs: list[list[float]] = []
    for compiled in (False, True):
        sg.seed(0)
        model = _PoolUnpool()
        opt = sg.optim.Adam(model, lr=1e-2)
        grads = model.alloc_grads()

        def step(x: Any, model: Any = model, opt: Any = opt, grads: Any = grads) -> Any:
            grads.zero()
            loss = ((model(x.trace(grads)) - target) ** 2).mean()
            loss.backward()
            opt.update(model, grads)
            return loss

        run = sg.compile(step) if compiled else step
        runs.append([float(run(sg.tensor(_input(2, 2, 4, 4, seed=k))).item()) for k in range(5)])
        if compiled:
            assert run.eager_reason is None
            assert [recording.replays for recording in run.recordings] == [4]
    assert runs[0] == runs[1]


def test_flip_and_roll_name_pytorchs_dims_and_shifts(numpy_backend: str) -> None:
    """``torch.flip(x, dims=[0])`` and ``torch.roll(x, shifts=1, dims=0)`` were Python's
    "unexpected keyword argument 'dims'" and "missing 1 required positional argument:
    'shift'": now a ``KeywordError`` naming ``axis=`` and ``shift=``, with the call to write
    (one axis each: flip's several dims as nested calls). Other ops keep Python's message
    for ``dims=`` (``test_torch_dim_keyword_names_axis``)."""
    x = sg.ones(2, 3)
    with pytest.raises(sg.KeywordError, match=r"flip\(\) .*'dims': .*dims= as axis= \(write axis=0\)"):
        sg.flip(x, dims=[0])
    with pytest.raises(sg.KeywordError, match=r"write flip\(flip\(x, axis=0\), axis=1\)"):
        x.flip(dims=(0, 1))
    for call in (lambda: sg.roll(x, shifts=1, dims=0), lambda: x.roll(shifts=1, dims=0)):
        with pytest.raises(sg.KeywordError, match=r"roll\(\) .*'shifts': .*shifts= as shift= \(write shift=1\)"):
            call()
    with pytest.raises(sg.KeywordError, match=r"dims= as axis= \(write axis=1\)"):
        sg.roll(x, 1, dims=(1,))
    with pytest.raises(TypeError, match=r"roll\(\) missing 1 required argument: 'shift'"):
        sg.roll(x)  # type: ignore[call-overload]
    np.testing.assert_array_equal(sg.roll(sg.arange(3), 1, 0).numpy(), [2, 0, 1])


def test_calling_size_as_pytorch_names_shape(numpy_backend: str) -> None:
    """``x.size(0)``, PyTorch's size of an axis, was "'int' object is not callable":
    ``x.size`` is NumPy's element count here (an int still), and calling it says what to
    write instead."""
    x = sg.ones(2, 3)
    assert x.size == 6 and isinstance(x.size, int) and x.size + 1 == 7
    with pytest.raises(TypeError, match=r"x.size is the number of elements here \(6: .*x.size\(0\) is x.shape\[0\]"):
        x.size(0)  # pyright: ignore[reportCallIssue]
    with pytest.raises(TypeError, match=r"PyTorch's x.size\(\) is x.shape$"):
        x.size()  # pyright: ignore[reportCallIssue]


def test_flatten_takes_pytorchs_start_dim_1_and_names_reshape_for_others(numpy_backend: str) -> None:
    """``x.flatten(1)``, PyTorch's CNN-head idiom, was Python's "takes 1 positional argument
    but 2 were given"; it is shapegrad's ``flatten()`` itself. Another start dim (PyTorch's
    ``x.flatten(0)``, the whole tensor) is a ``ShapeError`` naming ``x.reshape(-1)``."""
    x = sg.ones(2, 3, 4)
    assert x.flatten(1).shape == sg.flatten(x, 1).shape == x.flatten().shape == (2, 12)
    for call in (lambda: x.flatten(0), lambda: sg.flatten(x, 2), lambda: x.flatten(1.0)):
        with pytest.raises(sg.ShapeError, match=r"start_dim 1 only, found .*x.reshape\(-1\)"):
            call()  # pyright: ignore[reportArgumentType, reportCallIssue]
