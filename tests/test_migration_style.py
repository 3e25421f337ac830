"""The migration set's style port (typecheck/pass/migration/style.py) against PyTorch: the
original fast_neural_style TransformerNet, written here with torch layers from its architecture
(pytorch/examples, fast_neural_style/neural_style/transformer_net.py) at the port's sizes,
loads into the port with ``sg.nn.from_torch`` under its own dotted paths; in float64 the two
give the same images, the same content loss, the same gradients for every parameter, and the
same loss again after one Adam step each."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import shapegrad as sg

torch = pytest.importorskip("torch", reason="PyTorch is the oracle here: pip install -e '.[dev,torch]' (torch==2.13.0)")
tnn = torch.nn
F = torch.nn.functional

PORT = Path(__file__).resolve().parent.parent / "typecheck" / "pass" / "migration" / "style.py"
RTOL, ATOL = 1e-6, 1e-9


class TorchConvLayer(tnn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int) -> None:
        super().__init__()
        self.reflection_pad = tnn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = tnn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x: Any) -> Any:
        return self.conv2d(self.reflection_pad(x))


class TorchResidualBlock(tnn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = TorchConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = tnn.InstanceNorm2d(channels, affine=True)
        self.conv2 = TorchConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = tnn.InstanceNorm2d(channels, affine=True)
        self.relu = tnn.ReLU()

    def forward(self, x: Any) -> Any:
        out = self.relu(self.in1(self.conv1(x)))
        return self.in2(self.conv2(out)) + x


class TorchUpsampleConvLayer(tnn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int, upsample: int) -> None:
        super().__init__()
        self.upsample = upsample
        self.reflection_pad = tnn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = tnn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x: Any) -> Any:
        x = F.interpolate(x, mode="nearest", scale_factor=self.upsample)
        return self.conv2d(self.reflection_pad(x))


class TorchTransformerNet(tnn.Module):
    """The original's layers and names, channels 8-16-32 (the original's 32-64-128)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = TorchConvLayer(3, 8, kernel_size=9, stride=1)
        self.in1 = tnn.InstanceNorm2d(8, affine=True)
        self.conv2 = TorchConvLayer(8, 16, kernel_size=3, stride=2)
        self.in2 = tnn.InstanceNorm2d(16, affine=True)
        self.conv3 = TorchConvLayer(16, 32, kernel_size=3, stride=2)
        self.in3 = tnn.InstanceNorm2d(32, affine=True)
        self.res1 = TorchResidualBlock(32)
        self.res2 = TorchResidualBlock(32)
        self.res3 = TorchResidualBlock(32)
        self.res4 = TorchResidualBlock(32)
        self.res5 = TorchResidualBlock(32)
        self.deconv1 = TorchUpsampleConvLayer(32, 16, kernel_size=3, stride=1, upsample=2)
        self.in4 = tnn.InstanceNorm2d(16, affine=True)
        self.deconv2 = TorchUpsampleConvLayer(16, 8, kernel_size=3, stride=1, upsample=2)
        self.in5 = tnn.InstanceNorm2d(8, affine=True)
        self.deconv3 = TorchConvLayer(8, 3, kernel_size=9, stride=1)
        self.relu = tnn.ReLU()

    def forward(self, x: Any) -> Any:
        y = self.relu(self.in1(self.conv1(x)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.relu(self.in3(self.conv3(y)))
        for block in (self.res1, self.res2, self.res3, self.res4, self.res5):
            y = block(y)
        y = self.relu(self.in4(self.deconv1(y)))
        y = self.relu(self.in5(self.deconv2(y)))
        return self.deconv3(y)


def torch_model() -> Any:
    torch.manual_seed(0)
    model = TorchTransformerNet().double()
    # affine parameters away from their ones and zeros, so a swapped or skipped one shows
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, tnn.InstanceNorm2d):
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.5, 0.5)
    return model


def ported_model(torch_net: Any) -> Any:
    namespace = runpy.run_path(str(PORT), run_name="migration_style_oracle")
    model = namespace["TransformerNet"]().to(dtype="float64")
    sg.nn.from_torch(model, torch_net.state_dict())
    return model, namespace["Batch"]


def images(batch: int = 2) -> np.ndarray[Any, Any]:
    return np.random.default_rng(0).uniform(0.0, 255.0, (batch, 3, 32, 32))


def test_the_original_state_dict_loads_under_the_ports_paths() -> None:
    net = torch_model()
    model, _ = ported_model(net)
    torch_names = set(net.state_dict())
    assert torch_names == {name for name, _ in model.named_tensors()}
    # the instance norms keep no running statistics: weight and bias only, as PyTorch's
    assert {"in1.weight", "in1.bias", "res3.in2.weight", "deconv1.conv2d.weight"} <= torch_names
    assert not any("running" in name for name in torch_names)


def test_outputs_agree() -> None:
    net = torch_model()
    model, batch = ported_model(net)
    x = images()
    with torch.no_grad():
        expected = net(torch.tensor(x)).numpy()
    got = model(sg.tensor(x).reshape(batch(2), 3, 32, 32)).numpy()
    assert got.shape == (2, 3, 32, 32)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


def content_loss(y: Any, x: Any) -> Any:
    """The port's stand-in for the perceptual loss: 1e5 · MSE(y/255, x/255)."""
    return 1e5 * (sg.losses.mse(y / 255, x / 255) if isinstance(y, sg.Tensor) else F.mse_loss(y / 255, x / 255))


def test_a_training_step_agrees() -> None:
    net = torch_model()
    model, batch = ported_model(net)
    x = images()
    grads = model.alloc_grads()
    ours = sg.tensor(x).reshape(batch(2), 3, 32, 32)
    loss = content_loss(model(ours.trace(grads)), ours)
    loss.backward()

    torch_x = torch.tensor(x)
    torch_loss = content_loss(net(torch_x), torch_x)
    torch_loss.backward()
    np.testing.assert_allclose(loss.item(), torch_loss.item(), rtol=RTOL)

    torch_grads = {name: p.grad.numpy() for name, p in net.named_parameters()}
    names = [name for name, _ in model.named_parameters()]
    assert sorted(names) == sorted(torch_grads)
    for name, param in model.named_parameters():
        # (a convolution's bias just before an instance norm gets a gradient of zero, to rounding)
        np.testing.assert_allclose(grads[param].numpy(), torch_grads[name], rtol=RTOL, atol=ATOL, err_msg=name)

    # one Adam step each (PyTorch's defaults but lr), then the loss again
    sg.optim.Adam(model, lr=1e-3).update(model, grads)
    torch.optim.Adam(net.parameters(), lr=1e-3).step()
    after = content_loss(model(ours), ours).item()
    with torch.no_grad():
        torch_after = content_loss(net(torch_x), torch_x).item()
    np.testing.assert_allclose(after, torch_after, rtol=RTOL)
    assert after < loss.item()
