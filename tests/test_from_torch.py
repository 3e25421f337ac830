"""``sg.nn.from_torch``: a PyTorch ``state_dict()`` (torch tensors, or a PyTorch-written
safetensors file) into a shapegrad model with the same dotted paths gives the same outputs
as the torch model, in float64 (issue #25)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import nn

torch = pytest.importorskip("torch", reason="PyTorch is the oracle here: pip install -e '.[dev,torch]' (torch==2.13.0)")
tnn = torch.nn


def torch_image_net() -> Any:
    """Conv2d, BatchNorm2d, a nested Sequential with Linear and LayerNorm."""
    torch.manual_seed(0)
    return tnn.Sequential(
        tnn.Conv2d(2, 3, 3, padding=1),
        tnn.BatchNorm2d(3),
        tnn.ReLU(),
        tnn.Flatten(),
        tnn.Sequential(tnn.Linear(3 * 4 * 4, 6), tnn.LayerNorm(6)),
        tnn.Linear(6, 2),
    ).double()


def our_image_net(dtype: str = "float64") -> Any:
    return nn.Sequential(
        nn.Conv2d(3, padding=1, in_channels=2, out_channels=3, dtype=dtype),
        nn.BatchNorm2d(num_features=3, dtype=dtype),
        nn.ReLU(),
        nn.Flatten(),
        nn.Sequential(nn.Linear(48, 6, dtype=dtype), nn.LayerNorm(6, dtype=dtype)),
        nn.Linear(6, 2, dtype=dtype),
    )


class TorchTokenNet(tnn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(1)
        self.emb = tnn.Embedding(10, 4)
        self.conv = tnn.Conv1d(4, 5, 3, padding=1)
        self.norm = tnn.BatchNorm1d(5)
        self.head = tnn.Linear(5, 3)

    def forward(self, ids: Any) -> Any:
        h = self.norm(self.conv(self.emb(ids).transpose(1, 2)))
        return self.head(h.mean(2))


class TokenNet(nn.Module):
    def __init__(self) -> None:
        self.emb = nn.Embedding(10, 4)
        self.conv = nn.Conv1d(3, padding=1, in_channels=4, out_channels=5)
        self.norm = nn.BatchNorm1d(num_features=5)
        self.head = nn.Linear(5, 3)

    def __call__(self, ids: Any) -> Any:
        h = self.norm(self.conv(self.emb(ids).permute(0, 2, 1)))
        return self.head(h.mean(2))


def step_statistics(model: Any, x: Any) -> None:
    """One training-mode forward: the running statistics move away from 0 and 1."""
    model.train()
    with torch.no_grad():
        model(x)
    model.eval()


def values(model: nn.Module) -> dict[str, np.ndarray]:
    return {n: t.numpy().copy() for n, t in model.named_tensors()}


def test_torch_image_model_gives_torch_outputs_in_float64(backend: str) -> None:
    """issue #25: Linear weights transposed, Conv2d / BatchNorm (running statistics too) /
    LayerNorm copied, nested Sequential paths ("4.0.weight"), num_batches_tracked ignored."""
    theirs = torch_image_net()
    x = np.random.default_rng(0).standard_normal((5, 2, 4, 4))
    step_statistics(theirs, torch.tensor(x))
    ours = our_image_net()
    assert sg.nn.from_torch(ours, theirs.state_dict()) == ([], [])
    np.testing.assert_allclose(ours[1].running_var.numpy(), theirs[1].running_var.numpy(), rtol=1e-12)
    ours.eval()
    with torch.no_grad():
        expected = theirs(torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours(sg.tensor(x)).numpy(), expected, rtol=1e-10, atol=1e-12)
    # training mode (batch statistics) too
    ours.train()
    theirs.train()
    with torch.no_grad():
        expected = theirs(torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours(sg.tensor(x)).numpy(), expected, rtol=1e-10, atol=1e-12)


def test_embedding_conv1d_model_built_in_float32_then_moved_to_float64(numpy_backend: str) -> None:
    """issue #25: Embedding copied, Conv1d's (O, I, k) weight given its height of 1, and a
    model built in float32 takes a .double() torch model after model.to(dtype="float64")."""
    theirs = TorchTokenNet().double()
    ids = np.random.default_rng(2).integers(0, 10, (4, 7))
    step_statistics(theirs, torch.tensor(ids))
    ours = TokenNet().to(dtype="float64")
    sg.nn.from_torch(ours, theirs.state_dict())
    ours.eval()
    with torch.no_grad():
        expected = theirs(torch.tensor(ids)).numpy()
    np.testing.assert_allclose(ours(sg.tensor(ids)).numpy(), expected, rtol=1e-10, atol=1e-12)


def test_num_batches_tracked_loads_into_a_momentum_none_batch_norm(numpy_backend: str) -> None:
    """PyTorch's num_batches_tracked goes into a BatchNorm2d(momentum=None), whose cumulative
    average reads it: after loading, both count on and keep the same running statistics;
    a momentum=0.1 batch norm has no count and still skips PyTorch's."""
    theirs = tnn.BatchNorm2d(3, momentum=None).double()
    rng = np.random.default_rng(5)
    with torch.no_grad():
        for i in range(3):
            theirs(torch.tensor(rng.standard_normal((4, 3, 2, 2)) + i))
    ours = nn.BatchNorm2d(3, momentum=None, dtype="float64")
    assert sg.nn.from_torch(ours, theirs.state_dict()) == ([], [])
    assert int(ours.num_batches_tracked.item()) == 3
    x = rng.standard_normal((4, 3, 2, 2)) * 2.0
    with torch.no_grad():
        expected = theirs(torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours(sg.tensor(x)).numpy(), expected, rtol=1e-10, atol=1e-12)
    assert int(ours.num_batches_tracked.item()) == int(theirs.num_batches_tracked) == 4
    np.testing.assert_allclose(ours.running_mean.numpy(), theirs.running_mean.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-12)
    fixed = nn.BatchNorm2d(3, dtype="float64")
    assert sg.nn.from_torch(fixed, theirs.state_dict()) == ([], [])
    assert "num_batches_tracked" not in dict(fixed.named_tensors())


def test_pytorch_written_safetensors_file_loads_by_path_or_arrays(tmp_path: Path, numpy_backend: str) -> None:
    """issue #25: sg.load refuses a PyTorch safetensors file and names from_torch, which
    reads it (by path, or as the arrays safetensors.numpy gives)."""
    from safetensors.numpy import load_file
    from safetensors.torch import save_file

    theirs = torch_image_net()
    path = tmp_path / "torch.safetensors"
    save_file(theirs.state_dict(), str(path))
    ours = our_image_net()
    with pytest.raises(sg.CheckpointError, match=r"sg\.nn\.from_torch"):
        sg.load(ours, path)
    sg.nn.from_torch(ours, path)
    np.testing.assert_array_equal(ours[5].weight.numpy(), theirs[5].weight.detach().numpy().T)
    other = our_image_net()
    sg.nn.from_torch(other, load_file(str(path)))
    for name, value in values(ours).items():
        np.testing.assert_array_equal(values(other)[name], value, err_msg=name)


def test_mismatch_is_refused_before_any_copy(numpy_backend: str) -> None:
    """issue #25: a wrong shape (in shapegrad's layout), a float32 tensor into a float64
    model, and a missing or extra name each raise CheckpointError naming it; nothing changes."""
    theirs = torch_image_net()
    ours = our_image_net()
    before = values(ours)
    state = theirs.state_dict()
    cases: list[tuple[dict[str, Any], str]] = [
        (
            {**state, "5.weight": torch.zeros(3, 6, dtype=torch.float64)},
            r"'5\.weight' has shape \(6, 3\).*expected \(6, 2\)",
        ),
        ({**state, "4.1.bias": state["4.1.bias"].float()}, r"'4\.1\.bias' has dtype float32.*expected float64"),
        ({k: v for k, v in state.items() if k != "1.running_mean"}, r"lacks '1\.running_mean'"),
        ({**state, "9.weight": torch.zeros(2)}, r"has '9\.weight', which the model does not"),
    ]
    for bad, match in cases:
        with pytest.raises(sg.CheckpointError, match=match):
            sg.nn.from_torch(ours, bad)
        for name, value in values(ours).items():
            np.testing.assert_array_equal(value, before[name], err_msg=f"{name} changed")


def test_non_strict_returns_what_it_skipped(numpy_backend: str) -> None:
    """issue #25: strict=False loads the names both sides have, as PyTorch's load_state_dict."""
    theirs = torch_image_net()
    ours = our_image_net()
    state = {k: v for k, v in theirs.state_dict().items() if not k.startswith("5.")}
    state["extra.weight"] = torch.zeros(1, dtype=torch.float64)
    missing, unexpected = sg.nn.from_torch(ours, state, strict=False)
    assert (missing, unexpected) == (["5.weight", "5.bias"], ["extra.weight"])
    np.testing.assert_array_equal(ours[0].weight.numpy(), theirs[0].weight.detach().numpy())


def test_a_custom_layer_converts_its_own_layout(numpy_backend: str) -> None:
    """issue #25: the layout hook is per layer type (Module.torch_layout), not a closed
    list: a user's layer storing a transposed matrix converts it itself."""

    class Bilinear(nn.Module):
        def __init__(self) -> None:
            self.matrix = nn.parameter(sg.zeros(2, 3))

        def torch_layout(self, name: str, array: np.ndarray) -> np.ndarray:
            return array.T if name == "matrix" else array

    class Net(nn.Module):
        def __init__(self) -> None:
            self.blocks = [Bilinear()]

    model = Net()
    theirs = np.arange(6, dtype=np.float32).reshape(3, 2)
    sg.nn.from_torch(model, {"blocks.0.matrix": torch.tensor(theirs)})
    np.testing.assert_array_equal(model.blocks[0].matrix.numpy(), theirs.T)


E, H = 8, 2


class TorchAttentionBlock(tnn.Module):
    def __init__(self, heads: int, **options: Any) -> None:
        super().__init__()
        self.attn = tnn.MultiheadAttention(E, heads, batch_first=True, **options)
        self.norm = tnn.LayerNorm(E)


class TorchAttentionNet(tnn.Module):
    """MultiheadAttention at a nested prefix ("layers.0.attn.in_proj_weight")."""

    def __init__(self, heads: int = H, **options: Any) -> None:
        super().__init__()
        torch.manual_seed(3)
        self.embed = tnn.Linear(3, E)
        self.layers = tnn.ModuleList([TorchAttentionBlock(heads, **options)])
        self.head = tnn.Linear(E, 2)

    def forward(self, x: Any, attn_mask: Any = None) -> Any:
        h = self.embed(x)
        block = self.layers[0]
        attended, _ = block.attn(h, h, h, attn_mask=attn_mask)  # torch returns (output, weights)
        return self.head(block.norm(h + attended))


class AttentionBlock(nn.Module):
    def __init__(self, heads: int = H, bias: bool = True, embed_dim: int = E) -> None:
        self.attn = nn.MultiHeadAttention(heads, embed_dim, bias=bias, dtype="float64")
        self.norm = nn.LayerNorm(embed_dim, dtype="float64")


class AttentionNet(nn.Module):
    def __init__(self, **options: Any) -> None:
        self.embed = nn.Linear(3, E, dtype="float64")
        self.layers = [AttentionBlock(**options)]
        self.head = nn.Linear(E, 2, dtype="float64")

    def __call__(self, x: Any, mask: Any = None, causal: bool = False) -> Any:
        h = self.embed(x)
        block = self.layers[0]
        return self.head(block.norm(h + block.attn(h, mask=mask, causal=causal)))


def test_multihead_attention_in_a_model_gives_torch_outputs(backend: str) -> None:
    """PyTorch's packed in_proj_weight (3E, E) / in_proj_bias (3E,) are split into our
    q_proj/k_proj/v_proj at any prefix; outputs agree in float64 without a mask, with a
    boolean mask (PyTorch's True = masked, ours True = may attend: ~mask) and causally."""
    theirs = TorchAttentionNet().double().eval()
    ours = AttentionNet()
    assert sg.nn.from_torch(ours, theirs.state_dict()) == ([], [])
    packed = theirs.layers[0].attn.in_proj_weight.detach().numpy()
    np.testing.assert_array_equal(ours.layers[0].attn.k_proj.weight.numpy(), packed[E : 2 * E].T)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 5, 3))
    blocked = rng.random((5, 5)) < 0.4
    np.fill_diagonal(blocked, False)  # every query keeps a key
    causal = np.triu(np.ones((5, 5), dtype=bool), k=1)
    with torch.no_grad():
        plain = theirs(torch.tensor(x)).numpy()
        masked = theirs(torch.tensor(x), torch.tensor(blocked)).numpy()
        later = theirs(torch.tensor(x), torch.tensor(causal)).numpy()
    np.testing.assert_allclose(ours(sg.tensor(x)).numpy(), plain, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours(sg.tensor(x), mask=sg.tensor(~blocked)).numpy(), masked, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours(sg.tensor(x), causal=True).numpy(), later, rtol=1e-10, atol=1e-12)
    assert not np.allclose(masked, plain)


def test_multihead_attention_cross_attention_and_no_bias(numpy_backend: str) -> None:
    """The layer alone (empty prefix), key and value of another length, and bias=False
    (no in_proj_bias, no out_proj.bias); the torch model itself may be passed."""
    torch.manual_seed(6)
    for bias in (True, False):
        theirs = tnn.MultiheadAttention(E, 4, bias=bias, batch_first=True).double()
        ours = nn.MultiHeadAttention(4, E, bias=bias, dtype="float64")
        assert sg.nn.from_torch(ours, theirs) == ([], [])
        rng = np.random.default_rng(7)
        q, kv = rng.standard_normal((2, 3, E)), rng.standard_normal((2, 6, E))
        blocked = rng.random((3, 6)) < 0.5
        blocked[:, 0] = False
        with torch.no_grad():
            expected, _ = theirs(torch.tensor(q), torch.tensor(kv), torch.tensor(kv), attn_mask=torch.tensor(blocked))
        got = ours(sg.tensor(q), sg.tensor(kv), sg.tensor(kv), sg.tensor(~blocked))
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)


def test_multihead_attention_refusals_name_the_key_and_change_nothing(numpy_backend: str) -> None:
    """What PyTorch's MultiheadAttention has and ours cannot hold is refused by name before
    any copy: bias_k/bias_v, add_zero_attn (seen on the torch model, not in a state dict),
    another head count, kdim/vdim, a packed weight of another size, biases ours lacks."""
    ours = AttentionNet()
    before = values(ours)
    wide = TorchAttentionNet().double().state_dict()
    wide["layers.0.attn.in_proj_weight"] = torch.zeros(3 * 6, 6, dtype=torch.float64)
    separate = TorchAttentionNet(kdim=3, vdim=5).double().state_dict()
    wide_f32 = TorchAttentionNet().state_dict()["layers.0.attn.in_proj_weight"]
    cases: list[tuple[Any, str]] = [
        (TorchAttentionNet(add_bias_kv=True).double().state_dict(), r"'layers\.0\.attn\.bias_k'.*add_bias_kv=True"),
        (TorchAttentionNet(add_zero_attn=True).double(), r"'layers\.0\.attn'.*add_zero_attn=True"),
        (TorchAttentionNet(heads=4).double(), r"'layers\.0\.attn' has num_heads=4"),
        (separate, r"'layers\.0\.attn\.k_proj_weight' has shape \(8, 3\).*kdim"),
        (wide, r"'layers\.0\.attn\.in_proj_weight' has shape \(18, 6\), expected \(24, 8\)"),
        (
            {**TorchAttentionNet().double().state_dict(), "layers.0.attn.in_proj_weight": wide_f32},
            r"'layers\.0\.attn\.q_proj\.weight' has dtype float32.*split from PyTorch's 'layers\.0\.attn\.in_proj_weight'",
        ),
        (
            {**TorchAttentionNet().double().state_dict(), "layers.0.attn.out_proj.weight": torch.zeros(2, E).double()},
            r"'layers\.0\.attn\.out_proj\.weight' has shape \(8, 2\)",
        ),
    ]
    for bad, match in cases:
        with pytest.raises(sg.CheckpointError, match=match):
            sg.nn.from_torch(ours, bad)
        for name, value in values(ours).items():
            np.testing.assert_array_equal(value, before[name], err_msg=f"{name} changed")
    no_bias = AttentionNet(bias=False)
    kept = values(no_bias)
    with pytest.raises(
        sg.CheckpointError, match=r"'layers\.0\.attn\.in_proj_bias' holds 'layers\.0\.attn\.q_proj\.bias'"
    ):
        sg.nn.from_torch(no_bias, TorchAttentionNet().double().state_dict())
    for name, value in values(no_bias).items():
        np.testing.assert_array_equal(value, kept[name], err_msg=f"{name} changed")
    # Non-strict, the packed bias it cannot take is reported under PyTorch's key, once.
    missing, unexpected = sg.nn.from_torch(no_bias, TorchAttentionNet().double().state_dict(), strict=False)
    assert missing == []
    assert "layers.0.attn.in_proj_bias" in unexpected and "layers.0.attn.q_proj.bias" not in unexpected


def test_load_state_dict_refuses_torch_tensors_in_another_layout(numpy_backend: str) -> None:
    """``model.load_state_dict(torch_model.state_dict())``, PyTorch's own idiom, copied a
    square ``nn.Linear`` weight as it is: ``(out, in)`` into our ``(in, out)``, transposed with
    no error (a non-square one was a shape error that did not name ``from_torch``). Refused
    now, naming the key and ``from_torch``, the model unchanged; torch tensors in our own
    layout (a convolution's, a bias, a norm's) still load."""
    del numpy_backend
    from typing import Literal as L

    torch.manual_seed(0)
    twin = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3))
    model = nn.Sequential(nn.Linear[L[4], L[4]](), nn.ReLU(), nn.Linear[L[4], L[3]]())
    before = {k: v.copy() for k, v in model.state_dict().items()}
    for key in ("0.weight", "2.weight"):
        state = {k: v for k, v in twin.state_dict().items() if k.split(".")[0] == key[0]}
        with pytest.raises(sg.CheckpointError, match=rf"'{key}' is a torch tensor .*Linear.*sg\.nn\.from_torch"):
            model.load_state_dict(state, strict=False)
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(value, before[key])
    sg.nn.from_torch(model, twin.state_dict())
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    with torch.no_grad():
        expected = twin(torch.tensor(x)).numpy()
    np.testing.assert_allclose(model(sg.tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-6)

    conv, torch_conv = nn.Conv2d[L[2], L[3]](3), torch.nn.Conv2d(2, 3, 3)
    conv.load_state_dict(torch_conv.state_dict())  # the same layout: loads as it is
    np.testing.assert_array_equal(conv.weight.numpy(), torch_conv.weight.detach().numpy())
    bias_only = {"2.bias": twin.state_dict()["2.bias"]}
    model.load_state_dict(bias_only, strict=False)
    np.testing.assert_array_equal(model.state_dict()["2.bias"], twin.state_dict()["2.bias"].numpy())
