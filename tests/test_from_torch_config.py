"""``sg.nn.from_torch(model, torch_model)``: each layer checks its PyTorch twin's settings,
the ones a state dict does not record (``Module.torch_check``), before anything is written.

Each refusal here once loaded silently into a layer that computes other numbers (an RNN's
relu run as tanh, a reflect-padded convolution run with zeros, a batch norm's eps, an
embedding's padding row trained). Each family also loads a matching PyTorch layer (no false
error), with PyTorch's outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import nn

torch = pytest.importorskip("torch")


class Holder(nn.Module, checked=False):
    """Ours at the path ``'layer'``, so messages name it."""

    def __init__(self, layer: Any) -> None:
        self.layer = layer


def _torch_holder(layer: Any) -> Any:
    holder = torch.nn.Module()
    holder.layer = layer
    return holder


def _refused(ours: Any, theirs: Any, match: str) -> None:
    model = Holder(ours)
    before = model.state_dict()
    with pytest.raises(sg.CheckpointError, match=match):
        sg.nn.from_torch(model, _torch_holder(theirs))
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value, before[name], err_msg=f"{name} changed")


def _loads_with_torch_outputs(ours: Any, theirs: Any, x: np.ndarray[Any, Any]) -> None:
    sg.nn.from_torch(Holder(ours), _torch_holder(theirs))
    ours.eval()
    theirs.eval()
    expected = theirs(torch.tensor(x))
    found = ours(sg.tensor(x))
    if isinstance(expected, tuple):
        expected, found = expected[0], found[0]
    np.testing.assert_allclose(found.numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_recurrent_settings_are_checked(numpy_backend: str) -> None:
    torch.manual_seed(0)
    cases = [
        (nn.RNN(3, 4), torch.nn.RNN(3, 4, batch_first=True, nonlinearity="relu"), r"'layer' has nonlinearity='relu' in PyTorch, 'tanh' here"),
        (nn.GRU(3, 4), torch.nn.GRU(3, 4), r"'layer' has batch_first=False in PyTorch"),
        (nn.LSTM(3, 4), torch.nn.LSTM(3, 4, batch_first=True, proj_size=2), r"'layer' has proj_size=2 in PyTorch"),
        (nn.LSTM(3, 4, 2), torch.nn.LSTM(3, 4, 2, batch_first=True, dropout=0.5), r"'layer' has dropout=0.5 in PyTorch, 0.0 here"),
        (nn.LSTM(3, 4), torch.nn.GRU(3, 4, batch_first=True), r"'layer' is PyTorch's GRU, expected nn.LSTM for shapegrad's LSTM"),
        (nn.GRU(3, 4, bias=False), torch.nn.GRU(3, 4, batch_first=True), r"'layer' has bias=True in PyTorch, False here"),
    ]  # fmt: skip
    for ours, theirs, match in cases:
        _refused(ours, theirs, match)
    x = np.random.default_rng(0).standard_normal((2, 5, 3)).astype(np.float32)
    _loads_with_torch_outputs(
        nn.RNN(3, 4, nonlinearity="relu"), torch.nn.RNN(3, 4, batch_first=True, nonlinearity="relu"), x
    )
    _loads_with_torch_outputs(nn.LSTM(3, 4, 2, dropout=0.25), torch.nn.LSTM(3, 4, 2, batch_first=True, dropout=0.25), x)


def test_convolution_settings_are_checked(numpy_backend: str) -> None:
    torch.manual_seed(0)
    cases = [
        (nn.Conv2d(3, padding=1, in_channels=2, out_channels=3), torch.nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), r"'layer' has padding_mode='reflect' in PyTorch"),
        (nn.Conv2d(3, padding=1, in_channels=2, out_channels=3), torch.nn.Conv2d(2, 3, 3, padding=1, padding_mode="circular"), r"'layer' has padding_mode='circular' in PyTorch"),
        (nn.Conv2d(3, padding=2, in_channels=2, out_channels=3), torch.nn.Conv2d(2, 3, 3, padding=2, dilation=2), r"'layer' has dilation=\(2, 2\) in PyTorch, \(1, 1\) here"),
        (nn.Conv2d(3, in_channels=2, out_channels=3), torch.nn.Conv2d(2, 3, 3, stride=2), r"'layer' has stride=\(2, 2\) in PyTorch, \(1, 1\) here"),
        (nn.Conv2d(3, in_channels=2, out_channels=4), torch.nn.Conv2d(4, 4, 3, groups=2), r"'layer' has groups=2 in PyTorch, 1 here"),
        (nn.Conv2d(3, in_channels=2, out_channels=3), torch.nn.Conv2d(2, 3, 3, padding="same"), r"'layer' has padding='same' in PyTorch, \(0, 0\) here"),
        (nn.Conv2d(2, padding=1, in_channels=2, out_channels=3), torch.nn.Conv2d(2, 3, 2, padding="same"), r"'layer' has padding='same' in PyTorch with kernel_size=\(2, 2\)"),
        (nn.Conv1d(3, in_channels=2, out_channels=3), torch.nn.Conv1d(2, 3, 3, stride=2), r"'layer' has stride=\(2,\) in PyTorch, \(1,\) here"),
        (nn.ConvTranspose2d(3, 2, in_channels=2, out_channels=3), torch.nn.ConvTranspose2d(2, 3, 3, 2, output_padding=1), r"'layer' has output_padding=\(1, 1\) in PyTorch, \(0, 0\) here"),
        (nn.Conv1d(3, in_channels=2, out_channels=3), torch.nn.Conv2d(2, 3, (1, 3)), r"'layer' is PyTorch's Conv2d, expected nn.Conv1d"),
    ]  # fmt: skip
    for ours, theirs, match in cases:
        _refused(ours, theirs, match)
    rng = np.random.default_rng(0)
    image = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    _loads_with_torch_outputs(
        nn.SameConv2d(3, in_channels=2, out_channels=3), torch.nn.Conv2d(2, 3, 3, padding="same"), image
    )
    _loads_with_torch_outputs(
        nn.Conv2d(3, 2, 1, 2, in_channels=2, out_channels=4), torch.nn.Conv2d(2, 4, 3, 2, 1, 2), image
    )
    signal = rng.standard_normal((2, 2, 7)).astype(np.float32)
    _loads_with_torch_outputs(
        nn.Conv1d(3, 1, 1, in_channels=2, out_channels=3), torch.nn.Conv1d(2, 3, 3, padding=1), signal
    )


def test_batch_norm_settings_are_checked(numpy_backend: str) -> None:
    cases = [
        (nn.BatchNorm2d(2), torch.nn.BatchNorm2d(2, eps=0.1), r"'layer' has eps=0.1 in PyTorch, 1e-05 here"),
        (nn.BatchNorm1d(2), torch.nn.BatchNorm1d(2, momentum=None), r"'layer' has momentum=None in PyTorch, 0.1 here"),
        (nn.BatchNorm1d(2, momentum=None), torch.nn.BatchNorm1d(2), r"'layer' has momentum=0.1 in PyTorch, None here"),
        (nn.BatchNorm1d(2), torch.nn.BatchNorm1d(2, momentum=0.3), r"'layer' has momentum=0.3 in PyTorch, 0.1 here"),
        (nn.BatchNorm1d(2, affine=False), torch.nn.BatchNorm1d(2), r"'layer' has affine=True in PyTorch, False here"),
        (nn.BatchNorm1d(2), torch.nn.BatchNorm1d(2, track_running_stats=False), r"'layer' has track_running_stats=False in PyTorch"),
        (nn.BatchNorm2d(2), torch.nn.BatchNorm1d(2), r"'layer' is PyTorch's BatchNorm1d, expected nn.BatchNorm2d or nn.SyncBatchNorm"),
    ]  # fmt: skip
    for ours, theirs, match in cases:
        _refused(ours, theirs, match)
    theirs = torch.nn.BatchNorm2d(2, momentum=None, eps=1e-3)
    theirs.train()
    for _ in range(3):
        theirs(torch.randn(4, 2, 3, 3) * 2 + 1)
    image = np.random.default_rng(0).standard_normal((2, 2, 3, 3)).astype(np.float32)
    _loads_with_torch_outputs(nn.BatchNorm2d(2, momentum=None, eps=1e-3), theirs, image)


def test_layer_group_and_instance_norm_settings_are_checked(numpy_backend: str) -> None:
    cases = [
        (nn.LayerNorm(3), torch.nn.LayerNorm(3, eps=0.5), r"'layer' has eps=0.5 in PyTorch, 1e-05 here"),
        (nn.LayerNorm(3), torch.nn.LayerNorm(3, elementwise_affine=False), r"'layer' has elementwise_affine=False in PyTorch, True here"),
        (nn.LayerNorm(6, elementwise_affine=False), torch.nn.LayerNorm((2, 3), elementwise_affine=False), r"'layer' has normalized_shape=\(2, 3\) in PyTorch, \(6,\) here"),
        (nn.GroupNorm(1, 4), torch.nn.GroupNorm(2, 4), r"'layer' has num_groups=2 in PyTorch, 1 here"),
        (nn.GroupNorm(2, 4), torch.nn.GroupNorm(2, 4, eps=0.1), r"'layer' has eps=0.1 in PyTorch, 1e-05 here"),
        (nn.InstanceNorm2d(2), torch.nn.InstanceNorm2d(2, eps=0.1), r"'layer' has eps=0.1 in PyTorch, 1e-05 here"),
        (nn.InstanceNorm2d(2), torch.nn.InstanceNorm2d(2, track_running_stats=True), r"'layer' has track_running_stats=True in PyTorch"),
        (nn.GroupNorm(2, 2), torch.nn.InstanceNorm2d(2, affine=True), r"'layer' is PyTorch's InstanceNorm2d, expected nn.GroupNorm"),
    ]  # fmt: skip
    for ours, theirs, match in cases:
        _refused(ours, theirs, match)
    x = np.random.default_rng(0).standard_normal((2, 4, 3)).astype(np.float32)
    _loads_with_torch_outputs(nn.LayerNorm(3, eps=0.5), torch.nn.LayerNorm(3, eps=0.5), x)
    _loads_with_torch_outputs(nn.GroupNorm(2, 4, eps=1e-3), torch.nn.GroupNorm(2, 4, eps=1e-3), x)


def test_embedding_settings_are_checked(numpy_backend: str) -> None:
    cases = [
        (nn.Embedding(6, 3), torch.nn.Embedding(6, 3, padding_idx=0), r"'layer' has padding_idx=0 in PyTorch, None here"),
        (nn.Embedding(6, 3, padding_idx=1), torch.nn.Embedding(6, 3), r"'layer' has padding_idx=None in PyTorch, 1 here"),
        (nn.Embedding(6, 3), torch.nn.Embedding(6, 3, max_norm=0.5), r"'layer' has max_norm=0.5 in PyTorch"),
        (nn.Embedding(6, 3), torch.nn.Embedding(6, 3, scale_grad_by_freq=True), r"'layer' has scale_grad_by_freq=True in PyTorch"),
        (nn.Embedding(3, 6), torch.nn.Linear(3, 6, bias=False), r"'layer' is PyTorch's Linear, expected nn.Embedding"),
    ]  # fmt: skip
    for ours, theirs, match in cases:
        _refused(ours, theirs, match)
    ids = np.array([[5, 1, 2]])
    # PyTorch keeps a negative padding_idx as the non-negative row, as shapegrad does; a
    # sparse gradient holds the same values as a dense one.
    _loads_with_torch_outputs(
        nn.Embedding(6, 3, padding_idx=-1), torch.nn.Embedding(6, 3, padding_idx=-1, sparse=True), ids
    )


def test_dropout_linear_and_attention_kinds_are_checked(numpy_backend: str) -> None:
    cases = [
        (nn.Dropout(0.5), torch.nn.Dropout(0.1), r"'layer' has p=0.1 in PyTorch, 0.5 here"),
        (nn.Dropout(0.5), torch.nn.Dropout2d(0.5), r"'layer' is PyTorch's Dropout2d, expected nn.Dropout"),
        (nn.Linear(3, 3), torch.nn.Embedding(3, 3), r"'layer' is PyTorch's Embedding, expected nn.Linear"),
        (nn.MultiHeadAttention(2, 4), torch.nn.TransformerEncoderLayer(4, 2), r"'layer' is PyTorch's TransformerEncoderLayer, expected nn.MultiheadAttention"),
    ]  # fmt: skip
    for ours, theirs, match in cases:
        _refused(ours, theirs, match)
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    _loads_with_torch_outputs(nn.Linear(3, 2), torch.nn.Linear(3, 2), x)
    sg.nn.from_torch(Holder(nn.Dropout(0.1)), _torch_holder(torch.nn.Dropout(0.1)))


def test_layers_without_parameters_are_checked(numpy_backend: str) -> None:
    """Activations, poolings, up-sampling, padding and flattening hold no tensor, so nothing in a
    state dict showed PyTorch's Tanh at our ReLU's path, a LeakyReLU's slope, exact against tanh
    GELU, a 3×3 pooling or an average one, or bilinear up-sampling: they loaded and computed
    other numbers. Now each is compared with its twin; matching twins still load."""
    cases = [
        (nn.ReLU(), torch.nn.Tanh(), r"'layer' is PyTorch's Tanh, expected nn.ReLU"),
        (nn.LeakyReLU(), torch.nn.LeakyReLU(0.2), r"negative_slope=0.2 in PyTorch, 0.01 here"),
        (nn.GELU(), torch.nn.GELU(), r"approximate='none' in PyTorch, 'tanh' here"),
        (nn.ELU(), torch.nn.ELU(alpha=0.5), r"alpha=0.5 in PyTorch, 1.0 here"),
        (nn.Hardtanh(), torch.nn.Hardtanh(-2.0, 2.0), r"min_val=-2.0 in PyTorch, -1.0 here"),
        (nn.Softplus(), torch.nn.Softplus(beta=2.0), r"beta=2.0 in PyTorch"),
        (nn.MaxPool2d(2), torch.nn.MaxPool2d(3, stride=2, padding=1), r"kernel_size=3 in PyTorch, \(2, 2\) here"),
        (nn.MaxPool2d(2), torch.nn.AvgPool2d(2), r"'layer' is PyTorch's AvgPool2d, expected nn.MaxPool2d"),
        (nn.MaxPool2d(2), torch.nn.MaxPool2d(2, ceil_mode=True), r"ceil_mode=True in PyTorch"),
        (nn.AvgPool2d(2), torch.nn.AvgPool2d(2, count_include_pad=False), r"count_include_pad=False in PyTorch"),
        (nn.MaxPool2d(2, ceil_mode=True), torch.nn.MaxPool2d(2), r"ceil_mode=False in PyTorch, True here"),
        (nn.AvgPool2d(3, 2, 1, True), torch.nn.AvgPool2d(3, 2, 1), r"ceil_mode=False in PyTorch, True here"),
        (nn.AvgPool2d(2, count_include_pad=False), torch.nn.AvgPool2d(2), r"count_include_pad=True in PyTorch, False here"),
        (nn.AvgPool2d(2), torch.nn.AvgPool2d(2, divisor_override=3), r"divisor_override=3 in PyTorch, None here"),
        (nn.AvgPool2d(2, divisor_override=2), torch.nn.AvgPool2d(2, divisor_override=3), r"divisor_override=3 in PyTorch, 2 here"),
        (nn.GlobalAvgPool2d(), torch.nn.AdaptiveAvgPool2d(2), r"output_size=2 in PyTorch, \(1, 1\) here"),
        (nn.GlobalMaxPool2d(), torch.nn.AdaptiveAvgPool2d(1), r"'layer' is PyTorch's AdaptiveAvgPool2d, expected nn.AdaptiveMaxPool2d"),
        (nn.Upsample(scale_factor=2), torch.nn.Upsample(scale_factor=2, mode="bilinear"), r"mode='bilinear' in PyTorch, 'nearest' here"),
        (nn.Upsample(scale_factor=2), torch.nn.Upsample(scale_factor=3), r"scale_factor=3.* in PyTorch"),
        (nn.ReflectionPad2d(1), torch.nn.ReflectionPad2d(2), r"padding=\(2, 2, 2, 2\) in PyTorch, \(1, 1, 1, 1\) here"),
        (nn.Flatten(), torch.nn.Flatten(0), r"start_dim=0 in PyTorch, 1 here"),
    ]  # fmt: skip
    for ours, theirs, match in cases:
        _refused(ours, theirs, match)
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    for ours, theirs in [
        (nn.ReLU(), torch.nn.ReLU()),
        (nn.GELU("none"), torch.nn.GELU()),
        (nn.LeakyReLU(0.2), torch.nn.LeakyReLU(0.2)),
        (nn.MaxPool2d(3, stride=2, padding=1), torch.nn.MaxPool2d(3, stride=2, padding=1)),
        (nn.AvgPool2d(2), torch.nn.AvgPool2d(2)),
        (nn.MaxPool2d(3, 2, 1, ceil_mode=True), torch.nn.MaxPool2d(3, 2, 1, ceil_mode=True)),
        (nn.AvgPool2d(3, 2, 1, True, False), torch.nn.AvgPool2d(3, 2, 1, True, False)),
        (nn.AvgPool2d(3, 2, 1, divisor_override=4), torch.nn.AvgPool2d(3, 2, 1, divisor_override=4)),
        (nn.GlobalAvgPool2d(), torch.nn.AdaptiveAvgPool2d((1, 1))),
        (nn.Upsample(scale_factor=2, mode="bilinear"), torch.nn.Upsample(scale_factor=2, mode="bilinear")),
        (nn.ReflectionPad2d(1), torch.nn.ReflectionPad2d(1)),
        (nn.Flatten(), torch.nn.Flatten()),
    ]:
        if isinstance(ours, nn.GlobalAvgPool2d):
            sg.nn.from_torch(Holder(ours), _torch_holder(theirs))  # (B, C) against PyTorch's (B, C, 1, 1)
            continue
        _loads_with_torch_outputs(ours, theirs, x)


def test_a_dropout_of_zero_loads_from_pytorch_s_identity(numpy_backend: str) -> None:
    """Both are the identity: refusing nn.Identity at a Dropout(0)'s path was a false error."""
    sg.nn.from_torch(Holder(nn.Dropout(0.0)), _torch_holder(torch.nn.Identity()))
    _refused(nn.Dropout(0.5), torch.nn.Identity(), r"'layer' is PyTorch's Identity, expected nn.Dropout")


def test_identity_loads_from_pytorch_s_identity_or_a_dropout_of_zero(numpy_backend: str) -> None:
    """A model whose head PyTorch replaced by nn.Identity (a feature extractor) loads into one
    with sg.nn.Identity there; a layer that computes something is refused at its path."""
    _loads_with_torch_outputs(nn.Identity(), torch.nn.Identity(), np.ones((2, 3), np.float32))
    sg.nn.from_torch(Holder(nn.Identity()), _torch_holder(torch.nn.Dropout(0.0)))
    _refused(nn.Identity(), torch.nn.ReLU(), r"'layer' is PyTorch's ReLU, expected nn.Identity")
    _refused(nn.Identity(), torch.nn.Dropout(0.1), r"'layer' is PyTorch's Dropout, expected nn.Identity")


def test_convolutions_take_pytorch_s_same_and_valid_padding(numpy_backend: str) -> None:
    """nn.Conv2d(..., padding="same") raised DTypeError (an integer padding expected). "valid"
    is no padding and "same" half of dilation·(kernel - 1) a side, as PyTorch; where PyTorch
    would pad one more at the end (an even kernel), a ShapeError names the fix."""
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 7)).astype(np.float32)
    for padding, dilation in (("same", 1), ("same", 2), ("valid", 1)):
        ours = nn.Conv2d(3, in_channels=3, out_channels=4, padding=padding, dilation=dilation)
        _loads_with_torch_outputs(ours, torch.nn.Conv2d(3, 4, 3, padding=padding, dilation=dilation), x)
    line = x[:, :, 0, :]
    _loads_with_torch_outputs(
        nn.Conv1d(5, in_channels=3, out_channels=2, padding="same"), torch.nn.Conv1d(3, 2, 5, padding="same"), line
    )
    with pytest.raises(sg.ShapeError, match=r"padding='same' with kernel \(4, 4\).*sg.pad"):
        nn.Conv2d(4, in_channels=3, out_channels=4, padding="same")
    with pytest.raises(sg.HyperparameterError, match="padding='same' expects stride 1"):
        nn.Conv2d(3, stride=2, in_channels=3, out_channels=4, padding="same")
