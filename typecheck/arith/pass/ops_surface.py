"""The op table's forms under the Pyrefly stubs: each result's size computed (pinned by
``assert_shape``, checked by Pyrefly and at run time) and the tape kept."""

from __future__ import annotations

from shape_extensions import assert_shape

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad.nn import Conv2d, Flatten, Linear, ReLU, Sequential


def main() -> None:
    x: Tensor[NoTape, [4, 8, 16]] = sg.randn(4, 8, 16)
    w: Tensor[NoTape, [16, 32]] = sg.randn(16, 32)
    bias: Tensor[NoTape, [32]] = sg.zeros(32)
    assert_shape((x @ w + bias).shape, (4, 8, 32))
    assert_shape(sg.matmul(x, w).shape, (4, 8, 32))
    assert_shape((x * 2.0 - 1.0).relu().shape, (4, 8, 16))
    assert_shape(sg.add(x, sg.ones(16)).shape, (4, 8, 16))
    assert_shape((x > 0.0).shape, (4, 8, 16))
    assert_shape(x.sum().shape, ())
    assert_shape(x.mean(axis=-1).shape, (4, 8))
    assert_shape(x.max(axis=1, keepdims=True).shape, (4, 1, 16))
    assert_shape(sg.sum(x, axis=0).shape, (8, 16))
    assert_shape(x.expand_dims(0).squeeze(0).shape, (4, 8, 16))
    assert_shape(x.permute(2, 0, 1).shape, (16, 4, 8))
    assert_shape(x.transpose().shape, (16, 8, 4))
    assert_shape(x.reshape(32, -1).shape, (32, 16))
    assert_shape(sg.reshape(x, (2, 2, 128)).shape, (2, 2, 128))
    assert_shape(x.flatten().shape, (4, 128))
    assert_shape(x[0].shape, (8, 16))
    assert_shape(x[:, 2:6].shape, (4, 4, 16))
    assert_shape(x[..., :8].shape, (4, 8, 8))
    assert_shape(x[:, None].shape, (4, 1, 8, 16))
    assert_shape(sg.concat((x, x), axis=-1).shape, (4, 8, 32))
    assert_shape(sg.concat((x, x[:2]), axis=0).shape, (6, 8, 16))
    assert_shape(sg.concat((x, x[:, :2]), axis=-2).shape, (4, 10, 16))
    assert_shape(sg.concat((x, x), axis=2).shape, (4, 8, 32))
    assert_shape(sg.stack((x, x), axis=0).shape, (2, 4, 8, 16))
    assert_shape(sg.where(x > 0.0, x, 0.0).shape, (4, 8, 16))
    assert_shape(x.softmax(-1).tanh().shape, (4, 8, 16))
    # Kernel sizes as (height, width) pairs: the channels stay typed, the spatial sizes gradual.
    pairs = Conv2d((3, 3), padding=(1, 1), in_channels=16, out_channels=2)
    assert_shape(pairs(x.reshape(4, 16, 2, 4)).shape, (4, 2, int, int), runtime=(4, 2, 2, 4))
    # A Sequential from channels to features: the chain checked, its result typed by the last layer.
    convnet = Sequential(Conv2d(3, padding=1, in_channels=16, out_channels=4), ReLU(), Flatten(), Linear(32, 3))
    assert_shape(convnet(x.reshape(4, 16, 2, 4)).shape, (4, 3))
