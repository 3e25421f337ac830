"""PyTorch CPU autograd as an independent oracle, in float64: every op, layer, loss and
optimizer that PyTorch also has, forward values and gradients, over randomly drawn shapes
with broadcasting, size-1 and size-0 dims. Skipped with a reason where torch is absent
(install the ``torch`` extra: ``pip install -e ".[dev,torch]"``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal as L

import numpy as np
import pytest
from support.op_table import BY_NAME, OPS, OpInfo, draw

import shapegrad as sg

torch = pytest.importorskip("torch", reason="PyTorch is the oracle here: pip install -e '.[dev,torch]' (torch==2.13.0)")
F = torch.nn.functional


def helper_test_op(
    arrays: list[np.ndarray],
    ours: Callable[..., Any],
    theirs: Callable[..., Any],
    rtol: float = 1e-7,
    atol: float = 1e-9,
    grad: bool = True,
) -> None:
    """Forward and gradient of ``sum(w · f(inputs))`` agree with PyTorch in float64, on the
    default backend (NumPy, or CuPy where ``SHAPEGRAD_BACKEND=cupy`` runs the suite on a GPU)."""
    grads = sg.Gradients()
    traced = [sg.tensor(a).trace(grads) for a in arrays]
    out = ours(*traced)
    t_inputs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    t_out = theirs(*t_inputs)
    assert tuple(out.shape) == tuple(t_out.shape), f"shape {out.shape} vs torch {tuple(t_out.shape)}"
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=rtol, atol=atol, err_msg="forward")
    if not grad:
        return
    weights = np.random.default_rng(99).standard_normal(tuple(t_out.shape))
    (out * sg.tensor(weights)).sum().backward() if out.ndim else (out * float(weights)).backward()
    (t_out * torch.tensor(weights)).sum().backward()
    for i, (ti, tensor) in enumerate(zip(t_inputs, traced, strict=False)):
        expected = ti.grad.numpy() if ti.grad is not None else np.zeros(ti.shape)
        found = grads[tensor].numpy() if tensor in grads else np.zeros(tensor.shape)
        np.testing.assert_allclose(found, expected, rtol=rtol, atol=atol, err_msg=f"gradient of input {i}")


RNG = np.random.default_rng(2026)


def shapes_with_broadcasting(seed: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 4))
    full = tuple(int(n) for n in rng.integers(0, 4, rank))
    other = tuple(1 if rng.random() < 0.4 else n for n in full)[int(rng.integers(0, rank)) :]
    return (full, other) if rng.random() < 0.5 else (other, full)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("op", [op for op in OPS if op.kind == "binary"], ids=lambda op: op.name)
def test_binary_ops_with_broadcasting(op: OpInfo, seed: int) -> None:
    helper_test_op(draw(op, seed, shapes_with_broadcasting(seed)), op.fn, op.torch)  # type: ignore[arg-type]


@pytest.mark.filterwarnings(
    "ignore:var\\(\\). degrees of freedom:UserWarning"
)  # torch's own warning for var over one value
@pytest.mark.parametrize("shape", [(3, 4), (1, 5), (2, 3, 4), (4, 1)], ids=str)
@pytest.mark.parametrize("op", [op for op in OPS if op.kind == "unary"], ids=lambda op: op.name)
def test_unary_ops(op: OpInfo, shape: tuple[int, ...]) -> None:
    helper_test_op(draw(op, len(op.name), (shape,)), op.fn, op.torch)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["neg", "exp", "square", "tanh", "sigmoid", "softplus", "sum_last", "mT"])
def test_size_zero_dims(name: str) -> None:
    op = BY_NAME[name]
    helper_test_op([np.zeros((0, 3))], op.fn, op.torch)  # type: ignore[arg-type]


@pytest.mark.parametrize("op", [op for op in OPS if op.kind == "fixed"], ids=lambda op: op.name)
def test_ops_on_their_own_shapes(op: OpInfo) -> None:
    if op.torch is None:
        pytest.skip(f"no PyTorch equivalent: {op.no_torch}")
    helper_test_op(draw(op, len(op.name)), op.fn, op.torch, rtol=1e-6, grad=op.differentiable)


def test_every_row_has_a_pytorch_equivalent_or_says_why() -> None:
    assert all(op.torch is not None or op.no_torch for op in OPS)


# --------------------------------------------------------------------------- layers
def _copy_linear(ours: Any, theirs: Any) -> None:
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.numpy().T))
        theirs.bias.copy_(torch.tensor(ours.bias.numpy()))


def _layer_grads_match(
    ours: Any,
    theirs: Any,
    x: np.ndarray,
    pairs: list[tuple[str, Callable[[Any], Any]]],
    forward_kwargs: dict[str, Any] | None = None,
    rtol: float = 1e-7,
) -> None:
    grads = ours.alloc_grads()
    xt = sg.tensor(x).trace(grads, keep_grad=True)
    out = ours(xt, **(forward_kwargs or {}))
    tx = torch.tensor(x, requires_grad=True)
    tout = theirs(tx)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=rtol, atol=1e-9)
    w = np.random.default_rng(5).standard_normal(out.shape)
    (out * sg.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(grads[xt].numpy(), tx.grad.numpy(), rtol=rtol, atol=1e-9)
    for path, pick in pairs:
        param = dict(ours.named_parameters())[path]
        np.testing.assert_allclose(grads[param].numpy(), pick(theirs), rtol=rtol, atol=1e-9, err_msg=path)


def test_linear_layer() -> None:
    ours = sg.nn.Linear[L[5], L[3]](dtype="float64")
    theirs = torch.nn.Linear(5, 3).double()
    _copy_linear(ours, theirs)
    x = np.random.default_rng(0).standard_normal((2, 4, 5))
    _layer_grads_match(
        ours, theirs, x, [("weight", lambda m: m.weight.grad.numpy().T), ("bias", lambda m: m.bias.grad.numpy())]
    )


@pytest.mark.parametrize(
    ("x_shape", "w_shape"),
    [((3, 0), (0, 2)), ((2, 3, 0), (0, 2)), ((3, 4), (4, 0)), ((0, 4), (4, 2)), ((2, 0, 4), (4, 2)), ((3, 0), (0, 0))],
    ids=str,
)
def test_linear_with_a_zero_size_is_torch_s(x_shape: tuple[int, ...], w_shape: tuple[int, int]) -> None:
    """Zero in-features (x (3, 0), W (0, 2)) raised NumPy's "cannot reshape array of size 0"
    in backward (a -1 in a reshape of an empty array is ambiguous); PyTorch gives empty
    gradients for x and W and the bias its row count."""
    from shapegrad.ops.linalg import linear

    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(x_shape), rng.standard_normal(w_shape), rng.standard_normal(w_shape[1])]
    helper_test_op(arrays, linear, lambda x, w, b: F.linear(x, w.T, b))


def _conv2d_matches_torch(stride: int, padding: int, dilation: int, groups: int, x: np.ndarray) -> None:
    """A 4→8 channel 3×3 ``Conv2d`` and PyTorch's from the same weights: the same output and
    gradients (input, weight, bias) on ``x``."""
    ours = sg.nn.Conv2d[L[4], L[8]](
        kernel_size=3, stride=stride, padding=padding, dilation=dilation, groups=groups, dtype="float64"
    )
    theirs = torch.nn.Conv2d(4, 8, 3, stride=stride, padding=padding, dilation=dilation, groups=groups).double()
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.numpy()))
        theirs.bias.copy_(torch.tensor(ours.bias.numpy()))
    _layer_grads_match(
        ours, theirs, x, [("weight", lambda m: m.weight.grad.numpy()), ("bias", lambda m: m.bias.grad.numpy())]
    )


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 1, 1, 1), (2, 0, 1, 1), (1, 2, 2, 2), (2, 1, 1, 4)])
def test_conv2d(stride: int, padding: int, dilation: int, groups: int) -> None:
    _conv2d_matches_torch(stride, padding, dilation, groups, np.random.default_rng(1).standard_normal((2, 4, 9, 8)))


@pytest.mark.parametrize("channels_last", [False, True], ids=["channels-first", "channels-last"])
@pytest.mark.parametrize("kernels", [True, False], ids=["kernels", "xp"])
@pytest.mark.parametrize(
    "stride,padding,dilation,groups,batch,size",
    [
        (1, 1, 1, 1, 3, (23, 21)),
        (2, 1, 1, 2, 3, (45, 43)),
        (1, 2, 2, 4, 3, (22, 25)),
        (1, 0, 1, 1, 3, (18, 34)),
        (1, 1, 1, 2, 7, (10, 20)),
    ],
)
def test_conv2d_gradients_in_chunks_of_pixels(
    stride: int,
    padding: int,
    dilation: int,
    groups: int,
    batch: int,
    size: tuple[int, int],
    kernels: bool,
    channels_last: bool,
) -> None:
    """Enough output pixels that the weight's gradient is summed over chunks of
    ``_PIXEL_CHUNK`` rows (a partial chunk after them but for 18×34), and the input's
    gradient is scattered a few images at a time (the last 10×20 case: chunks of 2, 2, 2 and
    1 images), with stride, dilation and groups, through the compiled gathering and the xp
    reference: the same gradients as PyTorch. A channels-last input (a convolution's result)
    with one group takes the compiled path that gathers a few images' windows at a time, in
    the forward pass and again for the weight's gradient; a channels-first one with one
    group, the gathering a row per tap."""
    from shapegrad.ops import conv

    ho, wo = (conv.conv_output_size(n, 3, stride, padding, dilation) for n in size)
    rows = batch * ho * wo
    assert rows >= 2 * conv._PIXEL_CHUNK, rows
    assert (rows % conv._PIXEL_CHUNK == 0) == (size == (18, 34)), rows
    x = np.random.default_rng(7).standard_normal((batch, 4, *size))
    if channels_last:  # the same values laid out (B, H, W, C), as a convolution's result is
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
        kept = sg.tensor(x)
        if kept._backend.name == "numpy":  # the layout reaches conv2d (a device copies to its own)
            assert kept.numpy().transpose(0, 2, 3, 1).flags.c_contiguous
    with pytest.MonkeyPatch.context() as patch:
        if not kernels:
            patch.setattr(conv, "fused_kernel", lambda *_: None)
        _conv2d_matches_torch(stride, padding, dilation, groups, x)


def test_conv1d_and_transpose() -> None:
    ours = sg.nn.Conv1d[L[3], L[2]](kernel_size=3, padding=1, stride=2, dtype="float64")
    theirs = torch.nn.Conv1d(3, 2, 3, padding=1, stride=2).double()
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.numpy()[:, :, 0, :]))
        theirs.bias.copy_(torch.tensor(ours.bias.numpy()))
    _layer_grads_match(
        ours, theirs, np.random.default_rng(2).standard_normal((2, 3, 7)), [("bias", lambda m: m.bias.grad.numpy())]
    )
    up = sg.nn.ConvTranspose2d[L[3], L[2]](kernel_size=3, stride=2, padding=1, output_padding=1, dtype="float64")
    tup = torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1).double()
    with torch.no_grad():
        tup.weight.copy_(torch.tensor(up.weight.numpy()))
        tup.bias.copy_(torch.tensor(up.bias.numpy()))
    _layer_grads_match(
        up, tup, np.random.default_rng(3).standard_normal((1, 3, 4, 5)), [("weight", lambda m: m.weight.grad.numpy())]
    )


@pytest.mark.parametrize("kernel,stride,padding", [(2, 2, 0), (3, 2, 1), (3, 1, 1)])
def test_pooling(kernel: int, stride: int, padding: int) -> None:
    x = np.random.default_rng(4).standard_normal((2, 3, 7, 6))
    helper_test_op(
        [x], lambda t: sg.nn.MaxPool2d(kernel, stride, padding)(t), lambda t: F.max_pool2d(t, kernel, stride, padding)
    )
    helper_test_op(
        [x], lambda t: sg.nn.AvgPool2d(kernel, stride, padding)(t), lambda t: F.avg_pool2d(t, kernel, stride, padding)
    )


@pytest.mark.parametrize("kernel,padding", [(2, 2), (3, 2), ((3, 2), (1, 2))], ids=str)
def test_pooling_refuses_padding_over_half_the_window_as_pytorch(kernel: Any, padding: Any) -> None:
    """PyTorch refuses it; shapegrad gave windows wholly in the padding: a max of -inf, a
    mean of zeros, and a larger output than any PyTorch model has."""
    x = np.random.default_rng(13).standard_normal((1, 2, 6, 6))
    for name in ("MaxPool2d", "AvgPool2d"):
        with pytest.raises(RuntimeError, match="pad should be at most half"):
            getattr(torch.nn, name)(kernel, 1, padding)(torch.tensor(x))
        with pytest.raises(sg.ShapeError, match="half the kernel"):
            getattr(sg.nn, name)(kernel, 1, padding)(sg.tensor(x))


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate"])
@pytest.mark.parametrize("flat", [(2, -1, -1, 1), (-2, -2, 1, -3), (-1, 0, 0, -4)], ids=str)
def test_pad_with_negative_widths_crops_as_pytorch(mode: str, flat: tuple[int, ...]) -> None:
    """A negative width removes values from that side before the other side is padded, as
    F.pad does. reflect used to pad by the mirror of a negative slice (a wider result of other
    values, silently); constant and replicate failed inside NumPy."""
    pairs = ((0, 0), (0, 0), (flat[2], flat[3]), (flat[0], flat[1]))
    extra = {"value": 0.5} if mode == "constant" else {}
    helper_test_op(
        [np.random.default_rng(12).standard_normal((2, 3, 5, 6))],
        lambda t: sg.pad(t, pairs, mode=mode, **extra),
        lambda t: F.pad(t, flat, mode=mode, **extra),
    )
    with pytest.raises(sg.ShapeError, match="crops more than"):
        sg.pad(sg.ones(2, 3), ((0, 0), (-2, -2)))


def test_norms() -> None:
    x = np.random.default_rng(5).standard_normal((4, 3, 5))
    ln = sg.nn.LayerNorm[L[5]](dtype="float64")
    tln = torch.nn.LayerNorm(5).double()
    _layer_grads_match(
        ln, tln, x, [("weight", lambda m: m.weight.grad.numpy()), ("bias", lambda m: m.bias.grad.numpy())]
    )
    bn = sg.nn.BatchNorm1d[L[3]](dtype="float64")
    tbn = torch.nn.BatchNorm1d(3).double()
    _layer_grads_match(bn, tbn, x, [("weight", lambda m: m.weight.grad.numpy())])
    np.testing.assert_allclose(bn.running_var.numpy(), tbn.running_var.numpy(), rtol=1e-10)
    bn2 = sg.nn.BatchNorm2d[L[3]](dtype="float64")
    tbn2 = torch.nn.BatchNorm2d(3).double()
    _layer_grads_match(
        bn2, tbn2, np.random.default_rng(6).standard_normal((2, 3, 4, 4)), [("bias", lambda m: m.bias.grad.numpy())]
    )


def test_multi_head_attention() -> None:
    ours = sg.nn.MultiHeadAttention[L[8]](num_heads=2, dtype="float64")
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True).double()
    with torch.no_grad():
        theirs.in_proj_weight.copy_(
            torch.tensor(
                np.concatenate(
                    [ours.q_proj.weight.numpy().T, ours.k_proj.weight.numpy().T, ours.v_proj.weight.numpy().T]
                )
            )
        )
        theirs.in_proj_bias.copy_(
            torch.tensor(np.concatenate([ours.q_proj.bias.numpy(), ours.k_proj.bias.numpy(), ours.v_proj.bias.numpy()]))
        )
        theirs.out_proj.weight.copy_(torch.tensor(ours.out_proj.weight.numpy().T))
        theirs.out_proj.bias.copy_(torch.tensor(ours.out_proj.bias.numpy()))
    causal = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)  # True = masked out, in PyTorch
    x = np.random.default_rng(7).standard_normal((2, 5, 8))
    _layer_grads_match(
        ours,
        lambda t: theirs(t, t, t, attn_mask=causal, need_weights=False)[0],
        x,
        [("out_proj.bias", lambda m: theirs.out_proj.bias.grad.numpy())],
        forward_kwargs={"causal": True},
    )


def test_attention_masks_pytorch_would_read_otherwise_are_refused() -> None:
    """A float mask was selected by truth, so PyTorch's additive one (0 allowed, -inf masked)
    attended exactly where PyTorch masks; a per-batch (B, Lq, Lk) mask broadcast its first
    axis against the heads (batch i's mask applied to head i of every batch) when B equalled
    the head count. Both are refused; a 4-D (B, 1, Lq, Lk) mask is PyTorch's per-batch one."""
    ours = sg.nn.MultiHeadAttention[L[8]](num_heads=2, dtype="float64")
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True).double()
    _copy_attention(ours, theirs)
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 3, 8))
    allowed = rng.random((2, 3, 3)) < 0.6
    allowed[..., 0] = True
    additive = np.where(allowed[0], 0.0, -np.inf)
    with pytest.raises(sg.DTypeError, match="boolean mask"):
        ours(sg.tensor(x), mask=sg.tensor(additive))
    with pytest.raises(sg.DTypeError, match="boolean mask"):
        sg.softmax(sg.tensor(x), mask=sg.tensor(np.ones((3, 8))))
    with pytest.raises(sg.ShapeError, match="3-D mask"):
        ours(sg.tensor(x), mask=sg.tensor(allowed))
    t = torch.tensor(x)
    expected = theirs(t, t, t, attn_mask=torch.tensor(~allowed).repeat_interleave(2, 0), need_weights=False)[0]
    found = ours(sg.tensor(x), mask=sg.tensor(allowed[:, None]))
    np.testing.assert_allclose(found.numpy(), expected.detach().numpy(), rtol=1e-9, atol=1e-12)
    expected = theirs(t, t, t, attn_mask=torch.tensor(additive), need_weights=False)[0]
    found = ours(sg.tensor(x), mask=sg.tensor(additive) == 0)
    np.testing.assert_allclose(found.numpy(), expected.detach().numpy(), rtol=1e-9, atol=1e-12)


def _copy_attention(ours: Any, theirs: Any) -> None:
    with torch.no_grad():
        theirs.in_proj_weight.copy_(
            torch.tensor(np.concatenate([getattr(ours, f"{n}_proj").weight.numpy().T for n in "qkv"]))
        )
        theirs.in_proj_bias.copy_(
            torch.tensor(np.concatenate([getattr(ours, f"{n}_proj").bias.numpy() for n in "qkv"]))
        )
        theirs.out_proj.weight.copy_(torch.tensor(ours.out_proj.weight.numpy().T))
        theirs.out_proj.bias.copy_(torch.tensor(ours.out_proj.bias.numpy()))


def test_transformer_encoder_block_with_exact_gelu_is_pytorch_s() -> None:
    ours = sg.nn.TransformerEncoderBlock[L[8]](num_heads=2, ff_dim=16, dtype="float64", approximate="none")
    theirs = torch.nn.TransformerEncoderLayer(
        8, 2, 16, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
    ).double()
    _copy_attention(ours.attention, theirs.self_attn)
    _copy_linear(ours.ff_in, theirs.linear1)
    _copy_linear(ours.ff_out, theirs.linear2)
    x = np.random.default_rng(8).standard_normal((2, 5, 8))
    _layer_grads_match(
        ours,
        theirs,
        x,
        [
            ("ff_in.weight", lambda m: m.linear1.weight.grad.numpy().T),
            ("norm1.weight", lambda m: m.norm1.weight.grad.numpy()),
        ],
        rtol=1e-6,
    )


# --------------------------------------------------------------------------- losses
LOSS_CASES: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "mse": (sg.losses.mse, F.mse_loss),
    "mae": (sg.losses.mae, F.l1_loss),
    "huber": (lambda a, b: sg.losses.huber(a, b, delta=0.7), lambda a, b: F.huber_loss(a, b, delta=0.7)),
    "smooth_l1": (lambda a, b: sg.losses.smooth_l1(a, b, beta=0.7), lambda a, b: F.smooth_l1_loss(a, b, beta=0.7)),
    "bce_with_logits": (sg.losses.binary_cross_entropy_with_logits, F.binary_cross_entropy_with_logits),
    "kl_div": (
        lambda a, b: sg.losses.kl_div(a.log_softmax(), b.softmax()),
        lambda a, b: F.kl_div(a.log_softmax(-1), b.softmax(-1), reduction="batchmean"),
    ),
}


@pytest.mark.parametrize("name", list(LOSS_CASES))
def test_losses(name: str) -> None:
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    if name == "bce_with_logits":
        b = rng.uniform(0, 1, (4, 6))
    helper_test_op([a, b], *LOSS_CASES[name])


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy(smoothing: float, reduction: str) -> None:
    labels = np.array([3, 0, 1, 3, 2])
    helper_test_op(
        [np.random.default_rng(9).standard_normal((5, 4)) * 3],
        lambda z: sg.losses.cross_entropy(z, sg.tensor(labels), label_smoothing=smoothing, reduction=reduction),  # pyright: ignore[reportArgumentType, reportCallIssue] -- reduction is one of the three
        lambda z: F.cross_entropy(z, torch.tensor(labels), label_smoothing=smoothing, reduction=reduction),
    )


IGNORING = np.array([3, -100, 1, 3, 0, -100, 2])


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(reduction: str, weighted: bool, backend: str) -> None:
    """issue #25: F.nll_loss's values and gradients, ignored rows left out of the mean, on every backend."""
    weight = np.array([0.3, 1.0, 2.5, 0.7])
    helper_test_op(
        [np.random.default_rng(10).standard_normal((7, 4))],
        lambda z: sg.losses.nll_loss(  # pyright: ignore[reportCallIssue] -- reduction is one of the three
            z,
            sg.tensor(IGNORING),
            weight=sg.tensor(weight) if weighted else None,
            reduction=reduction,  # pyright: ignore[reportArgumentType]
        ),
        lambda z: F.nll_loss(
            z, torch.tensor(IGNORING), weight=torch.tensor(weight) if weighted else None, reduction=reduction
        ),
    )


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_with_ignore_index_and_class_weights(
    reduction: str, smoothing: float, weighted: bool, backend: str
) -> None:
    """issue #25: F.cross_entropy(..., weight=, ignore_index=, label_smoothing=) values and gradients."""
    weight = np.array([0.3, 1.0, 2.5, 0.7])
    helper_test_op(
        [np.random.default_rng(11).standard_normal((7, 4)) * 3],
        lambda z: sg.losses.cross_entropy(  # pyright: ignore[reportCallIssue] -- reduction is one of the three
            z,
            sg.tensor(IGNORING),
            weight=sg.tensor(weight) if weighted else None,
            label_smoothing=smoothing,
            reduction=reduction,  # pyright: ignore[reportArgumentType]
        ),
        lambda z: F.cross_entropy(
            z,
            torch.tensor(IGNORING),
            weight=torch.tensor(weight) if weighted else None,
            label_smoothing=smoothing,
            reduction=reduction,
        ),
    )


def test_token_cross_entropy_with_another_ignore_index(backend: str) -> None:
    """issue #25: per-token logits (B, L, C) (PyTorch's class axis is 1), padding marked by a
    chosen ignore_index."""
    labels = np.array([[1, 0, 0], [2, 1, 0]])
    helper_test_op(
        [np.random.default_rng(12).standard_normal((2, 3, 4))],
        lambda z: sg.losses.cross_entropy(z, sg.tensor(labels), ignore_index=0),
        lambda z: F.cross_entropy(z.permute(0, 2, 1), torch.tensor(labels), ignore_index=0),
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy(reduction: str, backend: str) -> None:
    """issue #25: F.binary_cross_entropy's values and gradients (probabilities and targets)."""
    rng = np.random.default_rng(13)
    helper_test_op(
        [rng.uniform(0.02, 0.98, (3, 5)), rng.uniform(0, 1, (3, 5))],
        lambda p, t: sg.losses.binary_cross_entropy(p, t, reduction=reduction),  # pyright: ignore[reportArgumentType, reportCallIssue] -- reduction is one of the three
        lambda p, t: F.binary_cross_entropy(p, t, reduction=reduction),
    )


def test_binary_cross_entropy_at_certain_probabilities_is_torch_s(backend: str) -> None:
    """issue #25: at p = 0 and p = 1 PyTorch clamps the logs at -100 and the gradient's
    denominator at 1e-12; the value and the probabilities' gradient agree there."""
    probs, targets = np.array([0.0, 1.0, 0.0, 1.0, 0.4]), np.array([1.0, 0.0, 0.0, 1.0, 0.3])
    helper_test_op(
        [probs],
        lambda p: sg.losses.binary_cross_entropy(p, sg.tensor(targets), reduction="none"),
        lambda p: F.binary_cross_entropy(p, torch.tensor(targets), reduction="none"),
    )


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_with_probability_targets(reduction: str, smoothing: float, weighted: bool, backend: str) -> None:
    """F.cross_entropy(logits, probabilities): values and the gradients of the logits, the
    targets and the class weights (PyTorch differentiates all three for soft targets)."""
    rng = np.random.default_rng(16)
    probs = rng.dirichlet(np.ones(4), 5)
    arrays = [rng.standard_normal((5, 4)) * 3, probs] + ([rng.uniform(0.2, 2.0, 4)] if weighted else [])
    helper_test_op(
        arrays,
        lambda z, q, *w: sg.losses.cross_entropy(  # pyright: ignore[reportCallIssue] -- reduction is one of the three
            z,
            q,
            weight=w[0] if w else None,
            label_smoothing=smoothing,
            reduction=reduction,  # pyright: ignore[reportArgumentType]
        ),
        lambda z, q, *w: F.cross_entropy(
            z, q, weight=w[0] if w else None, label_smoothing=smoothing, reduction=reduction
        ),
    )


@pytest.mark.parametrize("shape", [(2, 3, 4), (4,), (0, 4)], ids=str)
def test_cross_entropy_with_probability_targets_of_other_ranks(shape: tuple[int, ...], backend: str) -> None:
    """Per-token soft targets (PyTorch's classes on axis 1, ours last), one unbatched row, and
    no row (a NaN mean, as PyTorch's)."""
    rng = np.random.default_rng(17)
    probs = rng.dirichlet(np.ones(4), shape[:-1]) if shape[0] else np.zeros(shape)
    moved = (lambda z: z.permute(0, 2, 1)) if len(shape) == 3 else (lambda z: z)
    helper_test_op(
        [rng.standard_normal(shape), probs],
        lambda z, q: sg.losses.cross_entropy(z, q, label_smoothing=0.1),
        lambda z, q: F.cross_entropy(moved(z), moved(q), label_smoothing=0.1),
        grad=bool(shape[0]),
    )


def test_kl_div_default_is_batchmean_where_torch_s_is_mean() -> None:
    """docs/migration.md: ours defaults to "batchmean", PyTorch's to "mean" (which it warns is
    not the KL divergence); each matches PyTorch's under the other's name, C times apart."""
    rng = np.random.default_rng(18)
    a, b = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    helper_test_op(
        [a, b],
        lambda x, t: sg.losses.kl_div(x.log_softmax(), t.softmax()),
        lambda x, t: F.kl_div(x.log_softmax(-1), t.softmax(-1), reduction="batchmean"),
    )
    with pytest.warns(UserWarning, match="batchmean"):
        helper_test_op(
            [a, b],
            lambda x, t: sg.losses.kl_div(x.log_softmax(), t.softmax(), reduction="mean"),
            lambda x, t: F.kl_div(x.log_softmax(-1), t.softmax(-1)),
        )
    ours = sg.losses.kl_div(sg.tensor(a).log_softmax(), sg.tensor(b).softmax()).item()
    assert ours == pytest.approx(
        6 * sg.losses.kl_div(sg.tensor(a).log_softmax(), sg.tensor(b).softmax(), reduction="mean").item()
    )


BCE_WEIGHTS = [  # (weight shape, pos_weight shape) for logits (3, 4): classes, rows, scalars, full
    ((4,), None),
    (None, (4,)),
    ((3, 1), (4,)),
    ((3, 4), (1,)),
    ((1,), (3, 4)),
]


@pytest.mark.parametrize("shapes", BCE_WEIGHTS, ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy_with_logits_weights(
    shapes: tuple[tuple[int, ...] | None, tuple[int, ...] | None], reduction: str, backend: str
) -> None:
    """F.binary_cross_entropy_with_logits(weight=, pos_weight=): values and the gradients of
    logits and targets, weights broadcast as PyTorch's (they get no gradient there either)."""
    rng = np.random.default_rng(14)
    w_shape, pw_shape = shapes
    w = None if w_shape is None else rng.uniform(0.2, 2.0, w_shape)
    pw = None if pw_shape is None else rng.uniform(0.2, 4.0, pw_shape)
    helper_test_op(
        [rng.standard_normal((3, 4)) * 4, rng.uniform(0, 1, (3, 4))],
        lambda z, t: sg.losses.binary_cross_entropy_with_logits(  # pyright: ignore[reportCallIssue] -- reduction is one of the three
            z,
            t,
            reduction,  # pyright: ignore[reportArgumentType]
            weight=None if w is None else sg.tensor(w),
            pos_weight=None if pw is None else sg.tensor(pw),
        ),
        lambda z, t: F.binary_cross_entropy_with_logits(
            z,
            t,
            weight=None if w is None else torch.tensor(w),
            pos_weight=None if pw is None else torch.tensor(pw),
            reduction=reduction,
        ),
    )


def test_binary_cross_entropy_with_logits_pos_weight_at_extreme_logits(backend: str) -> None:
    """pos_weight's formula stays finite (and PyTorch's) at logits of ±100."""
    pw = np.array([0.5, 3.0, 1.0])
    helper_test_op(
        [np.array([[-100.0, 100.0, 30.0], [100.0, -100.0, -30.0]]), np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.2]])],
        lambda z, t: sg.losses.binary_cross_entropy_with_logits(z, t, "none", pos_weight=sg.tensor(pw)),
        lambda z, t: F.binary_cross_entropy_with_logits(z, t, pos_weight=torch.tensor(pw), reduction="none"),
    )


@pytest.mark.parametrize("w_shape", [(5,), (3, 1), (3, 5)], ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy_weight(w_shape: tuple[int, ...], reduction: str, backend: str) -> None:
    """F.binary_cross_entropy(weight=): values and the gradients of probabilities and targets."""
    rng = np.random.default_rng(15)
    w = rng.uniform(0.2, 2.0, w_shape)
    helper_test_op(
        [rng.uniform(0.02, 0.98, (3, 5)), rng.uniform(0, 1, (3, 5))],
        lambda p, t: sg.losses.binary_cross_entropy(p, t, reduction, weight=sg.tensor(w)),  # pyright: ignore[reportArgumentType, reportCallIssue] -- reduction is one of the three
        lambda p, t: F.binary_cross_entropy(p, t, weight=torch.tensor(w), reduction=reduction),
    )


# --------------------------------------------------------------------------- optimizers
class Quadratic(sg.nn.Module):
    def __init__(self, start: np.ndarray) -> None:
        self.w = sg.nn.parameter(sg.tensor(start.copy()))
        self.b = sg.nn.parameter(sg.tensor(start[:2].copy()))


OPTIMIZERS: dict[str, tuple[Callable[[Any], Any], Callable[[list[Any]], Any]]] = {
    "sgd_momentum": (
        lambda m: sg.optim.Sgd(m, lr=0.01, momentum=0.9, weight_decay=0.05),
        lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9, weight_decay=0.05),
    ),
    "sgd_nesterov": (
        lambda m: sg.optim.Sgd(m, lr=0.01, momentum=0.9, nesterov=True),
        lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9, nesterov=True),
    ),
    "sgd_dampening": (
        lambda m: sg.optim.Sgd(m, lr=0.01, momentum=0.9, dampening=0.5, weight_decay=0.05),
        lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9, dampening=0.5, weight_decay=0.05),
    ),
    "adam": (
        lambda m: sg.optim.Adam(m, lr=0.02, weight_decay=0.1),
        lambda p: torch.optim.Adam(p, lr=0.02, weight_decay=0.1),
    ),
    "adamw": (
        lambda m: sg.optim.AdamW(m, lr=0.02, weight_decay=0.1),
        lambda p: torch.optim.AdamW(p, lr=0.02, weight_decay=0.1),
    ),
    "adam_amsgrad": (
        lambda m: sg.optim.Adam(m, lr=0.02, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True),
        lambda p: torch.optim.Adam(p, lr=0.02, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True),
    ),
    "adamw_amsgrad": (
        lambda m: sg.optim.AdamW(m, lr=0.02, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True),
        lambda p: torch.optim.AdamW(p, lr=0.02, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True),
    ),
    "rmsprop": (lambda m: sg.optim.RMSprop(m, lr=0.01), lambda p: torch.optim.RMSprop(p, lr=0.01)),
    "adagrad_defaults": (lambda m: sg.optim.Adagrad(m), lambda p: torch.optim.Adagrad(p)),
    "adagrad": (
        lambda m: sg.optim.Adagrad(m, lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.2),
        lambda p: torch.optim.Adagrad(p, lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.2),
    ),
    "adadelta_defaults": (lambda m: sg.optim.Adadelta(m), lambda p: torch.optim.Adadelta(p)),
    "adadelta": (
        lambda m: sg.optim.Adadelta(m, lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.05),
        lambda p: torch.optim.Adadelta(p, lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.05),
    ),
    "rmsprop_centered_momentum": (
        lambda m: sg.optim.RMSprop(m, lr=0.01, centered=True, momentum=0.5),
        lambda p: torch.optim.RMSprop(p, lr=0.01, centered=True, momentum=0.5),
    ),
}


def assert_trajectory_matches_torch(
    make_ours: Callable[[Any], Any], make_theirs: Callable[[list[Any]], Any], sign: float = 1.0
) -> None:
    """50 steps of both optimizers on ``sign ·`` (a quadratic plus an exp coupling two
    parameters): the parameters agree after each."""
    start = np.array([1.5, -0.5, 2.0, 0.3])
    target = np.array([0.2, 0.4, -0.3, 1.0])
    model = Quadratic(start)
    opt, grads = make_ours(model), model.alloc_grads()
    tw = torch.tensor(start.copy(), requires_grad=True)
    tb = torch.tensor(start[:2].copy(), requires_grad=True)
    topt = make_theirs([tw, tb])
    for step in range(50):
        grads.zero()
        w = model.w.trace(grads)
        b = model.b.trace(grads)
        loss = ((w - sg.tensor(target)) ** 2).sum() + (w[:2] * b).exp().sum()
        (loss * sign).backward()
        opt.update(model, grads)
        topt.zero_grad()
        tloss = ((tw - torch.tensor(target)) ** 2).sum() + (tw[:2] * tb).exp().sum()
        (tloss * sign).backward()
        topt.step()
        np.testing.assert_allclose(model.w.numpy(), tw.detach().numpy(), rtol=1e-6, atol=1e-12, err_msg=f"step {step}")
        np.testing.assert_allclose(model.b.numpy(), tb.detach().numpy(), rtol=1e-6, atol=1e-12, err_msg=f"step {step}")


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_trajectory_matches_torch(name: str) -> None:
    assert_trajectory_matches_torch(*OPTIMIZERS[name])


MAXIMIZING: dict[str, tuple[Callable[[Any], Any], Callable[[list[Any]], Any]]] = {
    "sgd": (
        lambda m: sg.optim.Sgd(m, lr=0.01, momentum=0.9, weight_decay=0.05, maximize=True),
        lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9, weight_decay=0.05, maximize=True),
    ),
    "adam": (
        lambda m: sg.optim.Adam(m, lr=0.02, weight_decay=0.1, maximize=True),
        lambda p: torch.optim.Adam(p, lr=0.02, weight_decay=0.1, maximize=True),
    ),
    "adamw_amsgrad": (
        lambda m: sg.optim.AdamW(m, lr=0.02, weight_decay=0.1, amsgrad=True, maximize=True),
        lambda p: torch.optim.AdamW(p, lr=0.02, weight_decay=0.1, amsgrad=True, maximize=True),
    ),
    "rmsprop": (
        lambda m: sg.optim.RMSprop(m, lr=0.01, centered=True, momentum=0.5, weight_decay=0.05, maximize=True),
        lambda p: torch.optim.RMSprop(p, lr=0.01, centered=True, momentum=0.5, weight_decay=0.05, maximize=True),
    ),
    "adagrad": (
        lambda m: sg.optim.Adagrad(m, lr=0.1, lr_decay=0.05, weight_decay=0.1, maximize=True),
        lambda p: torch.optim.Adagrad(p, lr=0.1, lr_decay=0.05, weight_decay=0.1, maximize=True),
    ),
    "adadelta": (
        lambda m: sg.optim.Adadelta(m, lr=0.5, rho=0.8, weight_decay=0.05, maximize=True),
        lambda p: torch.optim.Adadelta(p, lr=0.5, rho=0.8, weight_decay=0.05, maximize=True),
    ),
}


@pytest.mark.parametrize("name", list(MAXIMIZING))
def test_maximize_trajectory_matches_torch(name: str) -> None:
    """maximize=True, PyTorch's gradient ascent (the gradient negated before weight decay),
    on the negated loss."""
    assert_trajectory_matches_torch(*MAXIMIZING[name], sign=-1.0)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(40))
def test_longer_broadcast_sweep(seed: int) -> None:
    for op in OPS:
        if op.kind == "binary":
            helper_test_op(draw(op, seed, shapes_with_broadcasting(1000 + seed)), op.fn, op.torch)  # type: ignore[arg-type]


class TwoLinear(sg.nn.Module):
    """Two layers: two weights (2-D) and two biases (1-D) to put in groups."""

    def __init__(self) -> None:
        self.hidden = sg.nn.Linear[L[4], L[5]](generator=sg.Generator(3), dtype="float64")
        self.out = sg.nn.Linear[L[5], L[2]](generator=sg.Generator(4), dtype="float64")

    def __call__(self, x: Any) -> Any:
        return self.out(self.hidden(x).tanh())


GROUPS: dict[str, tuple[Callable[[Any], Any], Callable[[dict[str, Any]], Any]]] = {
    "adamw_no_decay_below_2d": (
        lambda m: sg.optim.AdamW(
            m, lr=0.05, weight_decay=0.1, groups=[sg.optim.Group(select=lambda path, p: p.ndim < 2, weight_decay=0.0)]
        ),
        lambda t: torch.optim.AdamW(
            [
                {"params": [t["hidden.weight"], t["out.weight"]]},
                {"params": [t["hidden.bias"], t["out.bias"]], "weight_decay": 0.0},
            ],
            lr=0.05,
            weight_decay=0.1,
        ),
    ),
    "sgd_globs_first_group_wins": (
        lambda m: sg.optim.Sgd(
            m,
            lr=0.1,
            momentum=0.9,
            groups=[sg.optim.Group("out.*", lr=0.02, momentum=0.0), sg.optim.Group("*.bias", weight_decay=0.5)],
        ),
        lambda t: torch.optim.SGD(
            [
                {"params": [t["out.weight"], t["out.bias"]], "lr": 0.02, "momentum": 0.0},
                {"params": [t["hidden.bias"]], "weight_decay": 0.5},
                {"params": [t["hidden.weight"]]},
            ],
            lr=0.1,
            momentum=0.9,
        ),
    ),
    "adadelta_group_rho_and_lr": (
        lambda m: sg.optim.Adadelta(m, groups=[sg.optim.Group("hidden.*", rho=0.5, lr=0.5)]),
        lambda t: torch.optim.Adadelta(
            [
                {"params": [t["hidden.weight"], t["hidden.bias"]], "rho": 0.5, "lr": 0.5},
                {"params": [t["out.weight"], t["out.bias"]]},
            ]
        ),
    ),
    "adam_amsgrad_group": (
        lambda m: sg.optim.Adam(m, lr=0.05, betas=(0.8, 0.9), groups=[sg.optim.Group("hidden.*", amsgrad=True)]),
        lambda t: torch.optim.Adam(
            [
                {"params": [t["hidden.weight"], t["hidden.bias"]], "amsgrad": True},
                {"params": [t["out.weight"], t["out.bias"]]},
            ],
            lr=0.05,
            betas=(0.8, 0.9),
        ),
    ),
    "rmsprop_centered_group": (
        lambda m: sg.optim.RMSprop(m, lr=0.01, groups=[sg.optim.Group("out.weight", centered=True, momentum=0.5)]),
        lambda t: torch.optim.RMSprop(
            [
                {"params": [t["out.weight"]], "centered": True, "momentum": 0.5},
                {"params": [t["hidden.weight"], t["hidden.bias"], t["out.bias"]]},
            ],
            lr=0.01,
        ),
    ),
}


@pytest.mark.parametrize("name", list(GROUPS))
def test_parameter_groups_match_torch_param_groups(name: str) -> None:
    """issue #25: one model, the same weights, 10 steps: the same losses and weights as
    torch.optim with the equivalent param groups."""
    make_ours, make_theirs = GROUPS[name]
    model = TwoLinear()
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2)).double()
    _copy_linear(model.hidden, theirs[0])
    _copy_linear(model.out, theirs[2])
    tensors = {
        "hidden.weight": theirs[0].weight,
        "hidden.bias": theirs[0].bias,
        "out.weight": theirs[2].weight,
        "out.bias": theirs[2].bias,
    }
    rng = np.random.default_rng(14)
    x, target = rng.standard_normal((6, 4)), rng.standard_normal((6, 2))
    opt, grads = make_ours(model), model.alloc_grads()
    topt = make_theirs(tensors)
    for step in range(10):
        grads.zero()
        loss = sg.losses.mse(model(sg.tensor(x).trace(grads)), sg.tensor(target))
        loss.backward()
        opt.update(model, grads)
        topt.zero_grad()
        tloss = F.mse_loss(theirs(torch.tensor(x)), torch.tensor(target))
        tloss.backward()
        topt.step()
        assert loss.item() == pytest.approx(tloss.item(), rel=1e-10), f"loss at step {step}"
        for path, tensor in tensors.items():
            found = dict(model.named_parameters())[path].numpy()
            expected = tensor.detach().numpy()
            np.testing.assert_allclose(
                found,
                expected.T if expected.ndim == 2 else expected,
                rtol=1e-9,
                atol=1e-12,
                err_msg=f"{path} at step {step}",
            )
