"""Convolutions and pooling over an empty batch (B = 0), against PyTorch: the output's
shape, an empty gradient for the input and zero gradients for the weight and bias, on every
path that gathers windows (numba's compiled gathering, the NumPy ``xp`` reference, the
Array API strict backend, and the CuPy backend's code, emulated or on a GPU, which scatters
the whole batch at once). Where PyTorch refuses a zero extent (channels, or a height or width with images in the
batch), shapegrad raises its ``ShapeError`` naming the extent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal as L

import numpy as np
import pytest

import shapegrad as sg
from shapegrad.ops import conv

torch = pytest.importorskip("torch", reason="PyTorch is the oracle here: pip install -e '.[dev,torch]'")
F = torch.nn.functional
nn = sg.nn


@pytest.fixture(params=["kernels", "xp"])
def path(request: pytest.FixtureRequest, backend: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each backend of the ``backend`` fixture, NumPy twice: with its compiled kernels (numba's
    gathering, where the bug was) and with the ``xp`` reference every other backend runs."""
    if request.param == "xp":
        if backend != "numpy":
            pytest.skip("the xp reference is this backend's only path: run once, as 'kernels'")
        monkeypatch.setattr(conv, "fused_kernel", lambda *_: None)
    return f"{backend}-{request.param}"


def _copied(ours: Any, theirs: Any, layout: Callable[[np.ndarray], np.ndarray] = lambda a: a) -> Any:
    """``theirs`` with ``ours``'s weight (in PyTorch's layout) and bias."""
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(layout(ours.weight.numpy())))
        if ours.bias is not None:
            theirs.bias.copy_(torch.tensor(ours.bias.numpy()))
    return theirs


def _conv1d() -> tuple[Any, Any]:
    ours = nn.Conv1d[L[3], L[2]](kernel_size=3, stride=2, padding=1, dtype="float64")
    return ours, _copied(ours, torch.nn.Conv1d(3, 2, 3, stride=2, padding=1).double(), lambda w: w[:, :, 0, :])


def _conv2d(groups: int = 1, bias: bool = True, **geometry: int) -> Callable[[], tuple[Any, Any]]:
    def make() -> tuple[Any, Any]:
        ours = nn.Conv2d[L[4], L[8]](kernel_size=3, groups=groups, bias=bias, dtype="float64", **geometry)
        theirs = torch.nn.Conv2d(4, 8, 3, groups=groups, bias=bias, **geometry).double()
        return ours, _copied(ours, theirs)

    return make


def _same_conv2d() -> tuple[Any, Any]:
    ours = nn.SameConv2d[L[4], L[8]](3, dilation=2, dtype="float64")
    return ours, _copied(ours, torch.nn.Conv2d(4, 8, 3, padding="same", dilation=2).double())


def _conv_transpose2d(**geometry: int) -> Callable[[], tuple[Any, Any]]:
    def make() -> tuple[Any, Any]:
        ours = nn.ConvTranspose2d[L[3], L[2]](kernel_size=3, dtype="float64", **geometry)
        return ours, _copied(ours, torch.nn.ConvTranspose2d(3, 2, 3, **geometry).double())

    return make


def _parameterless(ours: Any, theirs: Callable[[Any], Any]) -> Callable[[], tuple[Any, Any]]:
    return lambda: (ours, theirs)


# name: (the layer and PyTorch's from the same weights, the empty input's shape)
LAYERS: dict[str, tuple[Callable[[], tuple[Any, Any]], tuple[int, ...]]] = {
    "conv2d": (_conv2d(padding=1), (0, 4, 9, 8)),
    "conv2d_no_bias": (_conv2d(bias=False), (0, 4, 9, 8)),
    "conv2d_stride_dilation_groups": (_conv2d(groups=4, stride=2, padding=2, dilation=2), (0, 4, 9, 8)),
    "conv2d_groups_no_bias": (_conv2d(groups=2, bias=False), (0, 4, 9, 8)),
    # PyTorch takes a zero height in an empty batch when the padding leaves room for a window.
    "conv2d_zero_height": (_conv2d(padding=2), (0, 4, 0, 8)),
    "conv2d_same": (_same_conv2d, (0, 4, 9, 8)),
    "conv1d": (_conv1d, (0, 3, 7)),
    "conv_transpose2d": (_conv_transpose2d(stride=2, padding=1, output_padding=1), (0, 3, 4, 5)),
    "conv_transpose2d_dilated": (_conv_transpose2d(stride=2, dilation=2), (0, 3, 4, 5)),
    "max_pool2d": (_parameterless(nn.MaxPool2d(2), lambda t: F.max_pool2d(t, 2)), (0, 3, 7, 6)),
    "max_pool2d_padded": (_parameterless(nn.MaxPool2d(3, 2, 1), lambda t: F.max_pool2d(t, 3, 2, 1)), (0, 3, 7, 6)),
    "avg_pool2d": (_parameterless(nn.AvgPool2d(2), lambda t: F.avg_pool2d(t, 2)), (0, 3, 7, 6)),
    "avg_pool2d_padded": (_parameterless(nn.AvgPool2d(3, 2, 1), lambda t: F.avg_pool2d(t, 3, 2, 1)), (0, 3, 7, 6)),
    "global_avg_pool2d": (_parameterless(nn.GlobalAvgPool2d(), lambda t: t.mean((2, 3))), (0, 3, 7, 6)),
    "global_max_pool2d": (_parameterless(nn.GlobalMaxPool2d(), lambda t: t.amax((2, 3))), (0, 3, 7, 6)),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_a_layer_over_an_empty_batch_is_pytorch_s(name: str, path: str) -> None:
    """An empty output of PyTorch's shape; the input's gradient empty, the parameters'
    gradients PyTorch's zeros (a sum over no pixels), not missing."""
    make, shape = LAYERS[name]
    ours, theirs = make()
    grads = ours.alloc_grads()
    x = sg.tensor(np.zeros(shape)).trace(grads, keep_grad=True)
    out = ours(x)
    tx = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
    tout = theirs(tx)
    assert tuple(out.shape) == tuple(tout.shape)
    out.sum().backward()
    tout.sum().backward()
    assert grads[x].shape == shape
    for param_name, param in ours.named_parameters():
        expected = dict(theirs.named_parameters())[param_name].grad.numpy()
        found = grads[param].numpy().reshape(expected.shape)  # Conv1d's weight has a height of 1
        np.testing.assert_array_equal(found, expected, err_msg=param_name)
        assert not found.any(), param_name


def test_the_window_ops_over_an_empty_batch_are_pytorch_s(path: str) -> None:
    """``conv2d``, ``unfold`` (compared in PyTorch's ``(B, C·k, L)`` layout), ``fold`` and
    ``max_pool2d`` themselves, with stride, padding, dilation and groups: empty results of
    PyTorch's shapes, and PyTorch's gradients."""
    rng = np.random.default_rng(3)
    arrays = (np.zeros((0, 4, 7, 6)), rng.standard_normal((6, 2, 3, 3)), rng.standard_normal(6))
    grads = sg.Gradients()
    x, w, b = (sg.tensor(a).trace(grads) for a in arrays)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in arrays)
    geometry = {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2)}
    windows, t_windows = conv.unfold(x, (3, 2), **geometry), F.unfold(tx, (3, 2), **geometry)
    results = [
        (conv.conv2d(x, w, b, groups=2, **geometry), F.conv2d(tx, tw, tb, groups=2, **geometry)),
        (windows.reshape(0, 4 * 6, windows.shape[3] * windows.shape[4]), t_windows),
        (conv.fold(windows, (7, 6), (3, 2), **geometry), F.fold(t_windows, (7, 6), (3, 2), **geometry)),
        (conv.max_pool2d(x, (3, 2), (2, 1), (1, 1)), F.max_pool2d(tx, (3, 2), (2, 1), (1, 1))),
    ]
    for found, expected in results:
        assert tuple(found.shape) == tuple(expected.shape)
    total, t_total = results[0][0].sum(), results[0][1].sum()
    for found, expected in results[1:]:
        total, t_total = total + found.sum(), t_total + expected.sum()
    total.backward()
    t_total.backward()
    assert grads[x].shape == arrays[0].shape
    np.testing.assert_array_equal(grads[w].numpy(), tw.grad.numpy())
    np.testing.assert_array_equal(grads[b].numpy(), tb.grad.numpy())


# (the op, built when called, over an input of the given shape; the extent PyTorch refuses,
# as the error names it)
REFUSED: dict[str, tuple[Callable[[Any], Any], tuple[int, ...], str]] = {
    "conv2d_zero_height": (lambda t: nn.Conv2d[L[4], L[8]](3, padding=2)(t), (2, 4, 0, 8), "zero height"),
    "conv2d_zero_width": (lambda t: nn.Conv2d[L[4], L[8]](3, padding=2)(t), (1, 4, 5, 0), "zero width"),
    "conv2d_zero_channels": (lambda t: conv.conv2d(t, sg.zeros(8, 0, 3, 3)), (2, 0, 9, 8), "zero channels"),
    "conv2d_no_output_channels": (lambda t: conv.conv2d(t, sg.zeros(0, 4, 3, 3)), (2, 4, 9, 8), "no output channels"),
    "conv2d_no_window_in_an_empty_batch": (
        lambda t: conv.conv2d(t, sg.zeros(8, 4, 3, 3), padding=(1, 1)),
        (0, 4, 0, 8),
        "does not fit",
    ),  # fmt: skip
    "conv1d_zero_length": (lambda t: nn.Conv1d[L[3], L[2]](3, padding=2)(t), (2, 3, 0), "zero width"),
    "conv_transpose2d_zero_height": (
        lambda t: nn.ConvTranspose2d[L[3], L[2]](3, 2, 1)(t),
        (1, 3, 0, 5),
        "zero height",
    ),  # fmt: skip
    "max_pool2d_zero_channels": (lambda t: nn.MaxPool2d(2)(t), (2, 0, 7, 6), "zero channels"),
    "max_pool2d_zero_height": (lambda t: nn.MaxPool2d(2, 2, 1)(t), (2, 3, 0, 6), "zero height"),
    "max_pool2d_zero_height_empty_batch": (lambda t: nn.MaxPool2d(2, 2, 1)(t), (0, 3, 0, 6), "zero height"),
    "avg_pool2d_zero_width": (lambda t: nn.AvgPool2d(2, 2, 1)(t), (2, 3, 6, 0), "zero width"),
    "unfold_zero_channels": (lambda t: conv.unfold(t, (3, 3)), (0, 0, 7, 6), "zero channels"),
    "fold_zero_channels": (lambda t: conv.fold(t, (4, 4), (3, 3)), (1, 0, 9, 2, 2), "zero channels"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_zero_extent_pytorch_refuses_is_a_shape_error_naming_it(name: str, path: str) -> None:
    """PyTorch takes an empty batch, not zero channels nor (but for a convolution over an
    empty batch) a zero height or width: shapegrad says which extent is zero, instead of
    giving a result PyTorch does not or failing inside a reshape."""
    op, shape, named = REFUSED[name]
    with pytest.raises(sg.ShapeError, match=named):
        op(sg.tensor(np.zeros(shape, dtype=np.float32)))


def test_a_zero_sized_window_or_step_is_a_shape_error(path: str) -> None:
    """A zero kernel, stride or dilation (PyTorch: "should be greater than zero"): a
    ``ShapeError``, not a division by zero in the output size."""
    x = sg.zeros(0, 3, 7, 6)
    for kernel, stride, dilation in (((0, 3), (1, 1), (1, 1)), ((3, 3), (1, 0), (1, 1)), ((3, 3), (1, 1), (0, 1))):
        with pytest.raises(sg.ShapeError, match="positive"):
            conv.unfold(x, kernel, stride, (0, 0), dilation)
    with pytest.raises(sg.ShapeError, match="positive"):
        conv.max_pool2d(x, (2, 2), (0, 2))
