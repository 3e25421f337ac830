"""The layers PyTorch ports of diffusion U-Nets, GANs and style transfer reach for:
``GroupNorm``, ``InstanceNorm2d``, ``Upsample`` and ``ReflectionPad2d``. Each against
PyTorch's in float64 (outputs, input and parameter gradients), its weights loaded from a
PyTorch state dict, its refusals, and a compiled training step through all four."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal as L

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import nn

torch = pytest.importorskip("torch", reason="PyTorch is the oracle here: pip install -e '.[dev,torch]' (torch==2.13.0)")
tnn = torch.nn


def _randomize(theirs: Any) -> None:
    """Non-trivial affine parameters (PyTorch starts at ones and zeros), so a swapped or
    mis-broadcast weight shows."""
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for param in theirs.parameters():
            param.copy_(torch.randn(param.shape, generator=gen, dtype=param.dtype))


def _matches_torch(ours: Any, theirs: Any, x: np.ndarray, rtol: float = 1e-9, atol: float = 1e-10) -> None:
    """``ours`` and ``theirs`` (ours loaded from theirs by ``from_torch``) agree on ``x`` in
    float64: the output, and the gradients of ``sum(w · out)`` for the input and every
    parameter (by the same dotted names)."""
    sg.nn.from_torch(ours, theirs.state_dict())
    grads = ours.alloc_grads()
    xt = sg.tensor(x).trace(grads, keep_grad=True)
    out = ours(xt)
    tx = torch.tensor(x, requires_grad=True)
    tout = theirs(tx)
    assert out.shape == tuple(tout.shape)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=rtol, atol=atol, err_msg="forward")
    w = np.random.default_rng(5).standard_normal(out.shape)
    (out * sg.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(grads[xt].numpy(), tx.grad.numpy(), rtol=rtol, atol=atol, err_msg="input gradient")
    theirs_params = dict(theirs.named_parameters())
    ours_params = dict(ours.named_parameters())
    assert sorted(ours_params) == sorted(theirs_params)
    for name, param in ours_params.items():
        expected = theirs_params[name].grad.numpy()
        # as PyTorch's layout (Conv1d's weight has a height of 1 here)
        ours_grad = grads[param].numpy().reshape(expected.shape)
        np.testing.assert_allclose(ours_grad, expected, rtol=rtol, atol=atol, err_msg=name)


def _input(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape) * 2.0 + 0.5


# --------------------------------------------------------------------------- GroupNorm
@pytest.mark.parametrize("groups", [1, 2, 6], ids=lambda g: f"groups{g}")
@pytest.mark.parametrize("shape", [(3, 6), (2, 6, 5), (2, 6, 4, 3), (2, 6, 2, 3, 2)], ids=str)
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_group_norm_is_torch_s(groups: int, shape: tuple[int, ...], affine: bool, numpy_backend: str) -> None:
    """Groups 1 (all channels), 2 and C (one channel each), over no, one, two and three
    spatial axes, with and without the affine."""
    theirs = tnn.GroupNorm(groups, 6, affine=affine).double()
    _randomize(theirs)
    ours = nn.GroupNorm(groups, 6, affine=affine, dtype="float64")
    _matches_torch(ours, theirs, _input(*shape))


def test_group_norm_typed_size_and_eps(numpy_backend: str) -> None:
    """The channels from a Literal type argument (``GroupNorm[L[8]](4)``), PyTorch's positional
    ``eps``, and a group of one value (normalized to zero, as PyTorch)."""
    theirs = tnn.GroupNorm(4, 8, 1e-3).double()
    _randomize(theirs)
    ours = nn.GroupNorm[L[8]](4, None, 1e-3, dtype="float64")
    assert (ours.num_groups, ours.num_channels, ours.eps) == (4, 8, 1e-3)
    _matches_torch(ours, theirs, _input(2, 8, 3, 3))
    single = tnn.GroupNorm(8, 8).double()
    _matches_torch(nn.GroupNorm(8, 8, dtype="float64"), single, _input(2, 8))


def test_group_norm_state_and_from_torch_in_a_model(numpy_backend: str) -> None:
    """A U-Net block's conv, GroupNorm and SiLU: the GroupNorm's weight and bias are found by
    ``state_dict`` under PyTorch's names and load from a torch model's state dict unchanged."""
    torch.manual_seed(0)
    theirs = tnn.Sequential(tnn.Conv2d(3, 8, 3, padding=1), tnn.GroupNorm(4, 8), tnn.SiLU()).double()
    _randomize(theirs)
    ours = nn.Sequential(
        nn.Conv2d[L[3], L[8]](3, padding=1, dtype="float64"), nn.GroupNorm(4, 8, dtype="float64"), nn.SiLU()
    )
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.state_dict()["1.weight"].shape == (8,)
    _matches_torch(ours, theirs, _input(2, 3, 5, 5))
    np.testing.assert_array_equal(ours.state_dict()["1.bias"], theirs.state_dict()["1.bias"].numpy())


def test_group_norm_refusals(numpy_backend: str) -> None:
    with pytest.raises(sg.ShapeError, match=r"num_channels divisible .* found num_channels=6 and num_groups=4"):
        nn.GroupNorm(4, 6)
    with pytest.raises(sg.ShapeError, match=r"found num_channels=6 and num_groups=0"):
        nn.GroupNorm(0, 6)
    with pytest.raises(sg.ShapeError, match=r"contradicts the type's 8"):
        nn.GroupNorm[L[8]](2, 6)
    norm = nn.GroupNorm(2, 6)
    with pytest.raises(
        sg.ShapeError, match=r"GroupNorm\(2, 6\) expects input \(batch, 6, \.\.\.\), found shape \(2, 4, 3\)"
    ):
        norm(sg.ones(2, 4, 3))
    with pytest.raises(sg.ShapeError, match=r"found shape \(6,\)"):
        norm(sg.ones(6))
    with pytest.raises(sg.DTypeError, match="num_groups"):
        nn.GroupNorm(2.0, 6)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- InstanceNorm2d
@pytest.mark.parametrize("affine", [False, True], ids=["plain", "affine"])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (3, 4, 5)], ids=["batched", "unbatched"])
def test_instance_norm_2d_is_torch_s(affine: bool, shape: tuple[int, ...], numpy_backend: str) -> None:
    theirs = tnn.InstanceNorm2d(3, affine=affine).double()
    _randomize(theirs)
    ours = nn.InstanceNorm2d(3, affine=affine, dtype="float64")
    _matches_torch(ours, theirs, _input(*shape))
    # no running statistics: eval mode computes the same, as PyTorch's default
    ours.eval()
    theirs.eval()
    x = _input(*shape, seed=4)
    np.testing.assert_allclose(
        ours(sg.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), rtol=1e-9, atol=1e-10
    )


def test_instance_norm_2d_defaults_and_refusals(numpy_backend: str) -> None:
    norm = nn.InstanceNorm2d(3)
    assert norm.affine is False and norm.num_parameters() == 0 and norm.state_dict() == {}
    assert tnn.InstanceNorm2d(3).state_dict() == {}  # what from_torch receives for it
    with pytest.raises(sg.HyperparameterError, match=r"track_running_stats=False .* found track_running_stats=True"):
        nn.InstanceNorm2d(3, track_running_stats=True)
    with pytest.raises(sg.HyperparameterError, match="momentum"):
        nn.InstanceNorm2d(3, momentum=2.0)
    with pytest.raises(
        sg.ShapeError,
        match=r"InstanceNorm2d\(3\) expects input \(batch, 3, height, width\) .* found shape \(2, 4, 5, 5\)",
    ):
        norm(sg.ones(2, 4, 5, 5))
    with pytest.raises(sg.ShapeError, match=r"found shape \(2, 3, 5\)"):
        norm(sg.ones(2, 3, 5))
    with pytest.raises(sg.ShapeError, match="more than one spatial value"):
        norm(sg.ones(2, 3, 1, 1))


# --------------------------------------------------------------------------- Upsample
UPSAMPLES: list[tuple[str, dict[str, Any], tuple[int, ...]]] = [
    ("nearest_2", {"scale_factor": 2}, (2, 3, 4, 5)),
    ("nearest_2_float", {"scale_factor": 2.0}, (1, 2, 3, 3)),
    ("nearest_pair", {"scale_factor": (2, 3)}, (2, 2, 3, 4)),
    ("nearest_size", {"size": (6, 10)}, (1, 2, 3, 5)),
    ("bilinear_2", {"scale_factor": 2, "mode": "bilinear"}, (2, 3, 4, 5)),
    ("bilinear_3_corners", {"scale_factor": 3, "mode": "bilinear", "align_corners": True}, (1, 2, 3, 4)),
    ("bilinear_size", {"size": (7, 9), "mode": "bilinear"}, (1, 2, 4, 5)),
    ("bilinear_size_corners", {"size": (7, 3), "mode": "bilinear", "align_corners": True}, (1, 2, 4, 5)),
    # fractional factors (refused before): floor(in · factor) pixels, sources from 1/factor
    ("nearest_1.5", {"scale_factor": 1.5}, (2, 3, 5, 7)),
    ("nearest_3.1_whole_size", {"scale_factor": 3.1}, (1, 2, 5, 4)),  # 15 rows from 5, not blocks of 3
    ("nearest_exact_pair", {"scale_factor": (1.7, 0.8), "mode": "nearest-exact"}, (1, 2, 9, 6)),
    ("nearest_recompute", {"scale_factor": 1.3, "recompute_scale_factor": True}, (1, 2, 13, 7)),
    ("nearest_down", {"scale_factor": 0.75}, (1, 2, 8, 9)),
    ("bilinear_1.5", {"scale_factor": 1.5, "mode": "bilinear"}, (2, 3, 5, 7)),
    ("bilinear_1.3_same_height", {"scale_factor": 1.3, "mode": "bilinear"}, (1, 2, 3, 5)),  # 3 -> 3 copies
    ("bilinear_corners_2.5", {"scale_factor": 2.5, "mode": "bilinear", "align_corners": True}, (1, 2, 3, 4)),
    ("bilinear_recompute", {"scale_factor": 1.999, "mode": "bilinear", "recompute_scale_factor": True}, (1, 1, 13, 9)),
]


@pytest.mark.parametrize(("kwargs", "shape"), [c[1:] for c in UPSAMPLES], ids=[c[0] for c in UPSAMPLES])
def test_upsample_is_torch_s(kwargs: dict[str, Any], shape: tuple[int, ...], numpy_backend: str) -> None:
    _matches_torch(nn.Upsample(**kwargs), tnn.Upsample(**kwargs), _input(*shape))


def test_upsample_keeps_float32_and_refusals(numpy_backend: str) -> None:
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 3)).astype(np.float32)
    for mode in ("nearest", "bilinear"):
        for factor in (2, 1.5):
            out = nn.Upsample(scale_factor=factor, mode=mode)(sg.tensor(x))
            assert out.dtype == "float32"
            expected = tnn.Upsample(scale_factor=factor, mode=mode)(torch.tensor(x)).numpy()
            np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-6)
    with pytest.raises(sg.HyperparameterError, match=r"found mode='bicubic'"):
        nn.Upsample(scale_factor=2, mode="bicubic")
    refused: tuple[Any, ...] = (0, -1.5, float("inf"), True, "2", (2, 2, 2))
    for factor in refused:
        with pytest.raises(sg.HyperparameterError, match=r"scale_factor to be a positive number or a pair"):
            nn.Upsample(scale_factor=factor)
    assert nn.Upsample(scale_factor=1.5).scale_factor == (1.5, 1.5)
    assert nn.Upsample(scale_factor=(2.0, 1.5)).scale_factor == (2, 1.5)
    with pytest.raises(sg.ShapeError, match=r"scale_factor=\(0.5, 0.5\) leaves no pixel"):
        nn.Upsample(scale_factor=0.5)(sg.ones(1, 1, 1, 4))
    with pytest.raises(sg.HyperparameterError, match="exactly one of size and scale_factor"):
        nn.Upsample()
    with pytest.raises(sg.HyperparameterError, match="align_corners=None with mode='nearest'"):
        nn.Upsample(scale_factor=2, align_corners=True)
    with pytest.raises(
        sg.ShapeError, match=r"Upsample expects input \(batch, channels, height, width\), found shape \(2, 3\)"
    ):
        nn.Upsample(scale_factor=2)(sg.ones(2, 3))


# --------------------------------------------------------------------------- ReflectionPad2d
@pytest.mark.parametrize("padding", [1, 2, (1, 3, 0, 2), (0, 0, 2, 1)], ids=str)
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (3, 4, 5)], ids=["batched", "unbatched"])
def test_reflection_pad_2d_is_torch_s(padding: Any, shape: tuple[int, ...], numpy_backend: str) -> None:
    ours = nn.ReflectionPad2d(padding)
    assert ours.padding == ((padding,) * 4 if isinstance(padding, int) else padding)
    _matches_torch(ours, tnn.ReflectionPad2d(padding), _input(*shape))


def test_reflection_pad_2d_refusals(numpy_backend: str) -> None:
    with pytest.raises(sg.HyperparameterError, match=r"4 ints \(left, right, top, bottom\), found \(1, 2\)"):
        nn.ReflectionPad2d((1, 2))  # type: ignore[arg-type]
    with pytest.raises(sg.ShapeError, match=r"reflect padding of \(4, 4\) needs more"):
        nn.ReflectionPad2d(4)(sg.ones(1, 1, 4, 8))
    with pytest.raises(sg.ShapeError, match=r"found shape \(4, 5\)"):
        nn.ReflectionPad2d(1)(sg.ones(4, 5))


# --------------------------------------------------------------------------- LayerNorm
@pytest.mark.parametrize(
    ("shape", "x_shape"),
    [(4, (2, 3, 4)), ([4], (2, 4)), ((3, 4), (2, 3, 4)), ((2, 3, 4), (2, 2, 3, 4)), ((2, 3, 4), (2, 3, 4))],
    ids=["int", "list", "two-axes", "three-axes", "unbatched"],
)
@pytest.mark.parametrize(
    "affine", [{}, {"bias": False}, {"elementwise_affine": False}], ids=["affine", "no-bias", "plain"]
)
def test_layer_norm_is_torch_s(
    shape: Any, x_shape: tuple[int, ...], affine: dict[str, bool], numpy_backend: str
) -> None:
    """PyTorch's ``normalized_shape`` as an int, a list or a tuple of trailing axes, and
    ``bias=False`` (PyTorch >= 2.1): a tuple or a list and ``bias=`` were refused (a
    ``DTypeError`` and a ``TypeError``). Output, input and parameter gradients as PyTorch's,
    the parameters loaded from its model (whose settings from_torch compares)."""
    theirs = tnn.LayerNorm(shape, eps=1e-3, **affine).double()
    _randomize(theirs)
    ours = nn.LayerNorm(shape, eps=1e-3, dtype="float64", **affine)
    sg.nn.from_torch(ours, theirs)
    assert ours.normalized_shape == tuple(theirs.normalized_shape)
    _matches_torch(ours, theirs, _input(*x_shape))


def test_layer_norm_settings_and_refusals(numpy_backend: str) -> None:
    """from_torch compares ``bias`` and the normalized shape; an input whose last axes are not
    the normalized shape is a ``ShapeError`` naming both (PyTorch raises too: it was taken
    without an affine); the typed form keeps working, its type argument the last axis."""
    cases = [
        (nn.LayerNorm(4), tnn.LayerNorm(4, bias=False), r"the model has bias=False in PyTorch, True here"),
        (nn.LayerNorm(4, bias=False), tnn.LayerNorm(4), r"the model has bias=True in PyTorch, False here"),
        (nn.LayerNorm((3, 4)), tnn.LayerNorm((4, 3)), r"the model has normalized_shape=\(4, 3\) in PyTorch, \(3, 4\) here"),
        (nn.LayerNorm(12), tnn.LayerNorm((3, 4)), r"the model has normalized_shape=\(3, 4\) in PyTorch, \(12,\) here"),
    ]  # fmt: skip
    for ours, theirs, match in cases:
        with pytest.raises(sg.CheckpointError, match=match):
            sg.nn.from_torch(ours, theirs)
    norm = nn.LayerNorm((3, 4))
    assert (norm.normalized_size, norm.weight is not None and norm.weight.shape) == (4, (3, 4))
    with pytest.raises(sg.ShapeError, match=r"LayerNorm expects input \(\.\.\., 3, 4\) .* found shape \(2, 4, 3\)"):
        norm(sg.ones(2, 4, 3))
    with pytest.raises(sg.ShapeError, match=r"found shape \(4,\)"):
        norm(sg.ones(4))
    with pytest.raises(sg.ShapeError, match=r"expects input \(\.\.\., 4\) .* found shape \(2, 5\)"):
        nn.LayerNorm(4, elementwise_affine=False)(sg.ones(2, 5))
    with pytest.raises(sg.ShapeError, match=r"found shape \(2, 5\)"):
        nn.LayerNorm(4, bias=False)(sg.ones(2, 5))
    with pytest.raises(sg.ShapeError, match=r"at least one size .* found \(\)"):
        nn.LayerNorm(())
    with pytest.raises(sg.DTypeError, match="integer normalized_shape"):
        nn.LayerNorm((3, 4.5))  # type: ignore[arg-type]
    assert nn.LayerNorm[L[4]]((3, 4)).normalized_shape == (3, 4)
    with pytest.raises(sg.ShapeError, match=r"normalized_size=3 contradicts the type's 4"):
        nn.LayerNorm[L[4]]((4, 3))


# --------------------------------------------------------------------------- unbatched inputs
UNBATCHED: list[tuple[str, Callable[[], Any], Callable[[], Any], tuple[int, ...]]] = [
    ("Conv2d", lambda: tnn.Conv2d(3, 4, 3, padding=1), lambda: nn.Conv2d(3, 1, 1, in_channels=3, out_channels=4), (3, 5, 6)),
    ("Conv2d-strided", lambda: tnn.Conv2d(2, 4, (2, 3), 2, groups=2), lambda: nn.Conv2d((2, 3), 2, groups=2, in_channels=2, out_channels=4), (2, 5, 7)),
    ("SameConv2d", lambda: tnn.Conv2d(3, 2, 3, padding="same"), lambda: nn.SameConv2d(3, in_channels=3, out_channels=2), (3, 4, 4)),
    ("Conv1d", lambda: tnn.Conv1d(3, 4, 3, padding=1), lambda: nn.Conv1d(3, 1, 1, in_channels=3, out_channels=4), (3, 7)),
    ("MaxPool2d", lambda: tnn.MaxPool2d(2), lambda: nn.MaxPool2d(2), (3, 5, 6)),
    ("MaxPool2d-padded", lambda: tnn.MaxPool2d(3, 2, 1), lambda: nn.MaxPool2d(3, 2, 1), (2, 5, 5)),
    ("AvgPool2d", lambda: tnn.AvgPool2d(2), lambda: nn.AvgPool2d(2), (3, 4, 6)),
]  # fmt: skip


@pytest.mark.parametrize(("theirs", "ours", "shape"), [case[1:] for case in UNBATCHED], ids=[c[0] for c in UNBATCHED])
def test_unbatched_inputs_are_torch_s(theirs: Any, ours: Any, shape: tuple[int, ...], numpy_backend: str) -> None:
    """PyTorch's convolutions and poolings take one unbatched ``(C, H, W)`` image (``(C, L)``
    for Conv1d) and give a result without a batch axis; these were a ShapeError ('expects
    input (batch, ...)', or a batch axis to add). Output, input and parameter gradients as
    PyTorch's, and the batched call unchanged."""
    reference = theirs().double()
    layer = ours().to(dtype="float64")
    _matches_torch(layer, reference, _input(*shape))
    reference.zero_grad()
    _matches_torch(layer, reference, _input(2, *shape, seed=3))


def test_unbatched_layers_refuse_other_ranks_by_name(numpy_backend: str) -> None:
    for layer, shape, axes in [
        (nn.Conv2d(3, in_channels=3, out_channels=4), (3, 5), r"\(batch, channels, height, width\) or unbatched \(channels, height, width\)"),
        (nn.MaxPool2d(2), (1, 2, 3, 4, 4), r"\(batch, channels, height, width\) or unbatched .*"),
        (nn.AvgPool2d(2), (4,), r"\(batch, channels, height, width\) or unbatched .*"),
        (nn.Conv1d(3, in_channels=3, out_channels=4), (2, 3, 1, 7), r"\(batch, channels, length\) or unbatched \(channels, length\)"),
    ]:  # fmt: skip
        with pytest.raises(
            sg.ShapeError, match=rf"{type(layer).__name__.split('[')[0]} expects input {axes}, found shape"
        ):
            layer(sg.ones(*shape))
    with pytest.raises(sg.ShapeError, match=r"conv2d: input has 2 channels, expected 3"):
        nn.Conv2d(3, in_channels=3, out_channels=4)(sg.ones(2, 5, 5))


# --------------------------------------------------------------------------- pooling settings
# (kernel, stride, padding) over heights and widths where ceil_mode adds a window that runs
# off the end (5 by 2, 7 by 2, 6 by 3 with stride 2 and padding 1), and where PyTorch drops
# the window it would add because it would start in the right padding (5 by 3, stride 3,
# padding 1).
POOL_GEOMETRIES = [(2, 2, 0), (3, 2, 1), (2, 1, 1), (3, 3, 1), ((3, 2), (2, 3), (1, 0))]
AVG_SETTINGS = [
    (ceil_mode, count_include_pad, divisor_override)
    for ceil_mode in (False, True)
    for count_include_pad in (True, False)
    for divisor_override in (None, 3, -2)
]


@pytest.mark.parametrize("geometry", POOL_GEOMETRIES, ids=str)
@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (3, 6, 6)], ids=["batched", "unbatched"])
def test_avg_pool_settings_are_torch_s(geometry: tuple[Any, ...], shape: tuple[int, ...], backend: str) -> None:
    """``nn.AvgPool2d(..., ceil_mode=True)``, ``count_include_pad=False`` and
    ``divisor_override`` were refused (when built, and by ``from_torch``). Each combination now
    loads from PyTorch's layer (its settings compared) and gives its output and input
    gradient: the divisor of a window clipped by ceil_mode counts up to the end of the right
    padding with count_include_pad, the input's cells alone without."""
    for settings in AVG_SETTINGS:
        ours, theirs = nn.AvgPool2d(*geometry, *settings), tnn.AvgPool2d(*geometry, *settings)
        sg.nn.from_torch(ours, theirs)
        _matches_torch(ours, theirs, _input(*shape), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("geometry", POOL_GEOMETRIES, ids=str)
@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (3, 6, 6)], ids=["batched", "unbatched"])
def test_max_pool_ceil_mode_is_torch_s(geometry: tuple[Any, ...], shape: tuple[int, ...], backend: str) -> None:
    """``nn.MaxPool2d(..., ceil_mode=True)`` was refused. Now PyTorch's size (rounded up, the
    last window starting inside the input or its left padding) and values; the gradient
    reaches each window's first maximum, none past the end. Ties included (small integers)."""
    ints = np.random.default_rng(1).integers(-2, 3, shape).astype(np.float64)
    for x in (_input(*shape), ints):
        ours, theirs = nn.MaxPool2d(*geometry, ceil_mode=True), tnn.MaxPool2d(*geometry, ceil_mode=True)
        sg.nn.from_torch(ours, theirs)
        _matches_torch(ours, theirs, x, rtol=1e-12, atol=1e-12)


def test_max_pool_ceil_mode_without_compiled_kernels_is_torch_s(numpy_backend: str) -> None:
    """The reference passes (no numba) give PyTorch's numbers too."""
    from shapegrad.ops import conv

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(conv, "fused_kernel", lambda *_: None)
        for geometry in POOL_GEOMETRIES:
            _matches_torch(
                nn.MaxPool2d(*geometry, ceil_mode=True), tnn.MaxPool2d(*geometry, ceil_mode=True), _input(2, 3, 5, 7)
            )


@pytest.mark.parametrize("settings", [(2, 2, 0, True), (3, 2, 1, True, False), (3, 2, 1, False, False, 5)], ids=str)
def test_pool_settings_gradients_match_finite_differences(settings: tuple[Any, ...], numpy_backend: str) -> None:
    from support.gradcheck import assert_gradients_match

    x = [_input(1, 2, 5, 6)]
    assert_gradients_match(nn.AvgPool2d(*settings), x)
    assert_gradients_match(nn.MaxPool2d(*settings[:3], ceil_mode=settings[3]), x)


def test_pool_settings_types_and_refusals(numpy_backend: str) -> None:
    """ceil_mode rounds up; MaxPool2d(2) and AvgPool2d(2) still halve (rounded down) without
    it. Settings that are not PyTorch's kinds are refused by name, as PyTorch refuses them."""
    x = sg.ones(1, 3, 7, 7)
    assert nn.MaxPool2d(2)(x).shape == nn.AvgPool2d(2, count_include_pad=False)(x).shape == (1, 3, 3, 3)
    assert nn.MaxPool2d(2, ceil_mode=True)(x).shape == nn.AvgPool2d(2, ceil_mode=True)(x).shape == (1, 3, 4, 4)
    np.testing.assert_array_equal(nn.AvgPool2d(2, ceil_mode=True)(x).numpy(), np.ones((1, 3, 4, 4)))
    with pytest.raises(sg.HyperparameterError, match="nonzero divisor_override, found 0"):
        nn.AvgPool2d(2, divisor_override=0)
    with pytest.raises(sg.HyperparameterError, match="ceil_mode True or False, found 1"):
        nn.MaxPool2d(2, ceil_mode=1)  # pyright: ignore[reportArgumentType]
    with pytest.raises(sg.HyperparameterError, match="count_include_pad True or False"):
        nn.AvgPool2d(2, count_include_pad="no")  # pyright: ignore[reportArgumentType]
    with pytest.raises(sg.DTypeError, match="integer divisor_override"):
        nn.AvgPool2d(2, divisor_override=2.5)  # pyright: ignore[reportArgumentType]


# --------------------------------------------------------------------------- Dropout(p=1)
def test_dropout_of_one_is_torch_s(numpy_backend: str) -> None:
    """PyTorch takes p=1: every value zeroed in training mode, the identity in eval mode. It
    was refused ('Dropout expects 0 <= p < 1'). Now ``x · 0`` as PyTorch's (an inf or a NaN
    gives NaN, a negative value -0; no division by ``1 - p``), with PyTorch's zero gradient;
    from_torch loads PyTorch's ``nn.Dropout(1.0)``."""
    x = np.array([[np.inf, np.nan, -2.0, 3.0], [0.5, -0.0, 1e30, -1e-30]])
    drop = nn.Dropout(1.0)
    grads = sg.Gradients()
    xt = sg.tensor(x).trace(grads, keep_grad=True)
    with np.errstate(invalid="ignore"):  # inf · 0, NumPy's warning; PyTorch's NaN too
        out = drop(xt)
    tx = torch.tensor(x, requires_grad=True)
    tout = torch.nn.functional.dropout(tx, 1.0, training=True)
    np.testing.assert_array_equal(out.numpy(), tout.detach().numpy())
    np.testing.assert_array_equal(np.signbit(out.numpy()), np.signbit(tout.detach().numpy()))
    w = np.arange(8.0).reshape(2, 4)
    (out * sg.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(grads[xt].numpy(), tx.grad.numpy())
    assert not grads[xt].numpy().any()
    drop.eval()
    assert drop(xt) is xt
    sg.nn.from_torch(
        nn.Sequential(nn.Linear(4, 4), nn.Dropout(1.0)), tnn.Sequential(tnn.Linear(4, 4), tnn.Dropout(1.0))
    )


@pytest.mark.parametrize("p", [1.5, -0.1, True, "0.5"], ids=repr)
def test_dropout_outside_zero_one_is_refused_by_name(p: Any, numpy_backend: str) -> None:
    """As PyTorch refuses (a ValueError: HyperparameterError is one), naming the value."""
    with pytest.raises(sg.HyperparameterError, match=r"Dropout expects p to be a probability in \[0, 1\]"):
        nn.Dropout(p)
    with pytest.raises(ValueError, match=r"dropout to be a probability in \[0, 1\]"):
        nn.LSTM(3, 4, 2, dropout=p)


def test_attention_with_dropout_of_one_is_torch_s(numpy_backend: str) -> None:
    """``nn.MultiheadAttention(d, h, dropout=1.0)`` in training mode drops every attention
    weight: the output is ``out_proj``'s bias. It was refused when built; now its output and
    its input and bias gradients are PyTorch's."""
    torch.manual_seed(0)
    theirs = tnn.MultiheadAttention(4, 2, dropout=1.0, batch_first=True).double()
    _randomize(theirs)
    ours = nn.MultiHeadAttention(2, 4, dropout=1.0, dtype="float64")
    sg.nn.from_torch(ours, theirs)
    x = _input(2, 3, 4)
    grads = ours.alloc_grads()
    xt = sg.tensor(x).trace(grads, keep_grad=True)
    out = ours(xt)
    tx = torch.tensor(x, requires_grad=True)
    tout = theirs(tx, tx, tx, need_weights=False)[0]
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-12)
    w = _input(2, 3, 4, seed=1)
    (out * sg.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(grads[xt].numpy(), tx.grad.numpy(), atol=1e-12)
    bias = theirs.out_proj.bias.grad.numpy()
    np.testing.assert_allclose(grads[ours.out_proj.bias].numpy(), bias, rtol=1e-12)


# --------------------------------------------------------------------------- compiled
class _UpBlock(nn.Module):
    """A decoder block of a U-Net / style-transfer net: GroupNorm, SiLU, nearest up-sampling,
    reflection padding, a convolution and an affine instance norm."""

    def __init__(self) -> None:
        gen = sg.Generator(0)
        self.norm = nn.GroupNorm(2, 4)
        self.up = nn.Upsample(scale_factor=2)
        self.smooth = nn.Upsample(scale_factor=1, mode="bilinear")
        self.pad = nn.ReflectionPad2d(1)
        self.conv = nn.Conv2d[L[4], L[3]](3, generator=gen)
        self.inorm = nn.InstanceNorm2d(3, affine=True)

    def __call__(self, x: Any) -> Any:
        return self.inorm(self.conv(self.pad(self.smooth(self.up(self.norm(x).silu())))))


def _trainer(model: Any, target: Any) -> Callable[[Any], Any]:
    opt, grads = sg.optim.Adam(model, lr=1e-2), model.alloc_grads()

    def step(x: Any) -> Any:
        grads.zero()
        loss = ((model(x.trace(grads)) - target) ** 2).mean()
        loss.backward()
        opt.update(model, grads)
        return loss

    return step


def test_a_compiled_training_step_replays_as_eager(numpy_backend: str) -> None:
    """Five Adam steps through all four layers (bilinear's interpolation matrices are
    constants of the recording): the compiled step replays (no fallback to eager after three
    calls, four replays after five) and gives the eager run's losses and weights bit for bit."""
    rng = np.random.default_rng(1)
    x = sg.tensor(rng.standard_normal((2, 4, 3, 3)).astype(np.float32))
    target = sg.tensor(rng.standard_normal((2, 3, 6, 6)).astype(np.float32))
    runs: list[tuple[list[float], dict[str, np.ndarray]]] = []
    for compiled in (False, True):
        model = _UpBlock()
        step = _trainer(model, target)
        run = sg.compile(step) if compiled else step
        losses = []
        for i in range(5):
            losses.append(float(run(x).item()))
            if compiled and i == 2:
                assert run.eager_reason is None
        if compiled:
            assert run.eager_reason is None
            (recording,) = run.recordings
            assert recording.replays == 4
        runs.append((losses, model.state_dict()))
    (eager_losses, eager_state), (compiled_losses, compiled_state) = runs
    assert eager_losses[-1] < eager_losses[0]
    assert compiled_losses == eager_losses
    assert list(compiled_state) == list(eager_state)
    for name, value in compiled_state.items():
        np.testing.assert_array_equal(value, eager_state[name], err_msg=name)
