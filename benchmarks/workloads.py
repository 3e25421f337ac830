"""The workloads of issue #26, each as shapegrad and its PyTorch twin from one initialisation,
timed by ``run.py`` against PyTorch eager and ``torch.compile`` (inductor) on one thread:

- a CIFAR-shaped CNN: 3→32→32→64 channels, 3×3 convolutions (padding 1) each with a ReLU
  and a 2×2 max pooling, a linear head; 32×32 images, batch 32, Adam;
- a hand-written GRU cell unrolled over 24 steps: hidden 128, input 128, batch 32, a linear
  head on the last state, Adam (many small ops);
- a tiny ViT: 4×4 patches of a 32×32×3 image (cut in the data, as a stride-4 convolution
  would), width 64, 2 pre-norm blocks of 4 heads, mean over the patches, batch 32, Adam;
- a wide MLP 1024-1024-1024-10, batch 256, Adam, with its BLAS floor (the step's matrix
  products at the measured sgemm rate);
- greedy decoding with ``examples/gpt.py``'s model (2 blocks, context 64), batch 1,
  untraced: 16 tokens, each the argmax after a forward pass over the last 64.

Each builder checks that shapegrad and PyTorch reach the same losses (the same tokens for
decoding) before anything is timed. The ``torch.compile`` twin is built from the same
weights, compiled (the model; the optimizer runs eagerly, as ``torch.compile(model)`` is
used) and warmed up before timing, so that its column is the steady state; where inductor
cannot build, the reason is reported instead. The JAX twin (``jax_twins.py``: jax.numpy, the
whole step under ``jax.jit``, optax's Adam; decoding: the forward pass and argmax jitted) is
built from the same weights too and checked the same way; where JAX is absent, the reason
(``peers.have_jax``) stands in its place.
"""

from __future__ import annotations

import copy
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal as L

import gpt_torch
import jax_twins
import numpy as np
import peers

import shapegrad as sg
from shapegrad import nn

Step = Callable[[], Any]
SKIPPED = "skipped in --quick (inductor's first compile of a model takes tens of seconds)"


@dataclass
class Workload:
    """A timed case: shapegrad's step, PyTorch's eager step and (unless ``compiled`` is a
    string, the reason why not) its ``torch.compile`` step; ``floor`` its BLAS floor in
    seconds, where it has one."""

    name: str
    ours: Step
    eager: Step | None
    compiled: Step | str
    floor: float | None = None
    notes: list[str] = field(default_factory=list)
    # shapegrad's step under sg.compile (a twin of ``ours`` from the same weights), checked
    # to give the same losses (tokens) as ``ours`` before it is timed
    ours_compiled: Step | None = None
    # the JAX twin's step (jitted), checked like the others; or why there is none
    jax: Step | str | None = None


def _t(array: Any) -> Any:
    import torch

    return torch.from_numpy(np.ascontiguousarray(array.numpy()))


# sg.compile's fused loops are kept on disk (SHAPEGRAD_CACHE_DIR): a first call's time depends
# on whether an earlier run compiled them
_LOOPS_NOTE = "; its fused loops compiled, or loaded where an earlier run kept them"


def _copy_linear(ours: Any, theirs: Any) -> None:
    # shapegrad's Linear.weight is (in, out); PyTorch's (out, in).
    import torch

    with torch.no_grad():
        theirs.weight.copy_(_t(ours.weight).T)
        theirs.bias.copy_(_t(ours.bias))


def _compiled(
    build: Callable[[], Any], make_step: Callable[[Any], Step], warmup: int
) -> tuple[Step | str, float, list[Any]]:
    """``make_step`` over ``torch.compile(build())``, called ``warmup`` times here (the
    compile), with the seconds that took and what the calls returned; or why inductor could
    not build it."""
    import torch

    try:
        step = make_step(torch.compile(build()))
        start = time.perf_counter()
        results = [step() for _ in range(warmup)]
        return step, time.perf_counter() - start, results
    except Exception as error:  # noqa: BLE001 -- any failure to compile is reported, not fatal
        return f"torch.compile failed: {type(error).__name__}: {str(error).splitlines()[0][:120]}", 0.0, []


def _train_step(model: Any, x: Any, y: Any, lr: float = 1e-3) -> Step:
    import torch

    return peers.torch_step(model, torch.optim.Adam(model.parameters(), lr=lr), x, y)


def _check_losses(name: str, ours: list[float], theirs: list[float], rtol: float, peer: str = "PyTorch") -> None:
    np.testing.assert_allclose(ours, theirs, rtol=rtol, err_msg=f"{name}: shapegrad and {peer} disagree")


def _jax_twin(build: Callable[[], Step], run: Callable[[Step], Any]) -> tuple[Step | str, float, Any]:
    """``build()`` (the JAX twin's step) and ``run`` of it (its checked first calls, which
    include jit's compile) with the seconds they took; or, where JAX is absent, why."""
    missing = peers.have_jax()
    if missing is not None:
        return missing, 0.0, None
    step = build()
    start = time.perf_counter()
    results = run(step)
    return step, time.perf_counter() - start, results


def _training(
    name: str,
    model: Any,
    build_torch: Callable[[], Any],
    x_np: np.ndarray,
    y_np: np.ndarray,
    with_compile: bool,
    checks: int,
    jax_twin: tuple[Callable[[Any, Any], Any], Callable[[Any], Any]],
    floor: float | None = None,
) -> Workload:
    """A training workload: the same losses for ``checks`` Adam steps (and for the compiled
    twin, within inductor's reordering of float32 sums), then the three steps to time."""
    import torch

    x, y = sg.tensor(x_np), sg.tensor(y_np)
    twin_model = copy.deepcopy(model)  # the sg.compile twin, from the same initial weights
    step = sg_train_step(model, x, y)

    def ours() -> float:
        return step().item()

    replayed = sg.compile(sg_train_step(twin_model, x, y))

    def ours_compiled() -> float:
        return replayed().item()

    tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np)
    # The twins are built before shapegrad trains: from its initial weights.
    eager = _train_step(build_torch(), tx, ty)
    twin = build_torch()
    apply, params_of = jax_twin
    weights = None if peers.have_jax() else params_of(model)  # copied before shapegrad trains
    losses = [ours() for _ in range(checks)]
    _check_losses(name, losses, [eager() for _ in range(checks)], 1e-4)
    jax_step, seconds, jax_losses = _jax_twin(
        lambda: peers.jax_train_step(apply, weights, x_np, y_np), lambda s: [s() for _ in range(checks)]
    )
    notes: list[str] = []
    if not isinstance(jax_step, str):
        _check_losses(name + " (JAX jit)", losses, jax_losses, 1e-4, "JAX")
        notes.append(f"{name}: JAX jit's first {checks} steps (compiling) took {seconds:.1f} s")
    # sg.compile records the first step and replays the others: the same losses as eager
    start = time.perf_counter()
    _check_losses(name + " (sg.compile)", [ours_compiled() for _ in range(checks)], losses, 1e-6)
    notes.append(
        f"{name}: sg.compile's first {checks} steps (recording{_LOOPS_NOTE}) took {time.perf_counter() - start:.2f} s"
    )
    if replayed.eager_reason is not None:
        raise AssertionError(f"{name}: sg.compile ran it eagerly: {replayed.eager_reason}")
    compiled: Step | str = SKIPPED
    if with_compile:
        # The compile happens in the checked steps; inductor reorders float32 sums.
        compiled, seconds, theirs = _compiled(lambda: twin, lambda m: _train_step(m, tx, ty), checks)
        if not isinstance(compiled, str):
            notes.append(f"{name}: torch.compile's first {checks} steps (compiling) took {seconds:.1f} s")
            _check_losses(name + " (torch.compile)", losses, theirs, 1e-3)
    return Workload(name, ours, eager, compiled, floor, notes, ours_compiled, jax_step)


def sg_train_step(model: Any, x: Any, y: Any) -> Callable[[], Any]:
    """One Adam step of ``model`` on ``(x, y)``, returning the loss tensor."""
    opt, grads = sg.optim.Adam(model), model.alloc_grads()

    def step() -> Any:
        grads.zero()
        loss = sg.losses.cross_entropy(model(x.trace(grads)), y)
        loss.backward()
        opt.update(model, grads)
        return loss

    return step


Phases = tuple[float, float, float]


def sg_step_phases(model: Any, opt: Any, grads: Any, x: Any, y: Any) -> Callable[[], Phases]:
    """One step of ``model`` on ``(x, y)`` (cross-entropy, ``opt``'s update) that returns
    the seconds of its forward pass with the loss, its backward pass and its update."""

    def step() -> Phases:
        start = time.perf_counter()
        grads.zero()
        loss = sg.losses.cross_entropy(model(x.trace(grads)), y)
        forward = time.perf_counter()
        loss.backward()
        backward = time.perf_counter()
        opt.update(model, grads)
        return forward - start, backward - forward, time.perf_counter() - backward

    return step


def median_phases(runs: dict[str, Callable[[], Phases]], rounds: int, warmup: int = 3) -> dict[str, Phases]:
    """Each run's median (forward, backward, update) over ``rounds`` interleaved calls (a
    noisy neighbour slows all alike), after ``warmup`` calls each."""
    for fn in runs.values():
        for _ in range(warmup):
            fn()
    samples: dict[str, list[Phases]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, fn in runs.items():
            samples[name].append(fn())
    return {
        name: (
            statistics.median(s[0] for s in values),
            statistics.median(s[1] for s in values),
            statistics.median(s[2] for s in values),
        )
        for name, values in samples.items()
    }


# --------------------------------------------------------------------------- CIFAR CNN
class CifarCNN(nn.Module):
    """3→32→32→64 channels, each 3×3 convolution (padding 1) followed by a ReLU and 2×2 max
    pooling, then a linear head over the 64×4×4 features."""

    def __init__(self, generator: sg.Generator) -> None:
        self.conv1 = nn.Conv2d[L[3], L[32]](kernel_size=3, padding=1, generator=generator)
        self.conv2 = nn.Conv2d[L[32], L[32]](kernel_size=3, padding=1, generator=generator)
        self.conv3 = nn.Conv2d[L[32], L[64]](kernel_size=3, padding=1, generator=generator)
        self.pool = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.head = nn.Linear[L[1024], L[10]](generator=generator)

    def __call__(self, x: Any) -> Any:
        h = self.pool(self.conv1(x).relu())
        h = self.pool(self.conv2(h).relu())
        h = self.pool(self.conv3(h).relu())
        return self.head(self.flatten(h))


def torch_cifar_cnn(ours: CifarCNN) -> Any:
    """The same network in PyTorch, with ``ours``'s weights."""
    import torch

    convs = [torch.nn.Conv2d(i, o, 3, padding=1) for i, o in ((3, 32), (32, 32), (32, 64))]
    head = torch.nn.Linear(1024, 10)
    layers: list[Any] = []
    with torch.no_grad():
        for conv, mine in zip(convs, (ours.conv1, ours.conv2, ours.conv3), strict=True):
            conv.weight.copy_(_t(mine.weight))
            assert mine.bias is not None
            conv.bias.copy_(_t(mine.bias))
            layers += [conv, torch.nn.ReLU(), torch.nn.MaxPool2d(2)]
    _copy_linear(ours.head, head)
    return torch.nn.Sequential(*layers, torch.nn.Flatten(), head)


def cifar_cnn(with_compile: bool, checks: int = 3) -> Workload:
    twin = (jax_twins.cifar_cnn, jax_twins.cifar_cnn_params)
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((32, 3, 32, 32)).astype(np.float32)
    y_np = rng.integers(0, 10, 32)
    model = CifarCNN(sg.Generator(0))
    name = "CIFAR CNN 3→32→32→64, 32×32, batch 32, Adam"
    return _training(name, model, lambda: torch_cifar_cnn(model), x_np, y_np, with_compile, checks, twin)


# --------------------------------------------------------------------------- GRU cell
GRU_STEPS, GRU_HIDDEN, GRU_INPUT, GRU_BATCH = 24, 128, 128, 32


class HandGRU(nn.Module):
    """A GRU cell written with two Linear layers and element-wise ops (PyTorch's equations:
    ``r``, ``z`` and ``n`` gates, ``n = tanh(x_n + r·h_n)``), unrolled over the sequence."""

    def __init__(self, generator: sg.Generator) -> None:
        self.x_gates = nn.Linear[L[128], L[384]](generator=generator)
        self.h_gates = nn.Linear[L[128], L[384]](generator=generator)
        self.head = nn.Linear[L[128], L[10]](generator=generator)

    def __call__(self, xs: Any) -> Any:
        n = self.h_gates.weight.shape[0]  # the hidden width (GRU_HIDDEN here; gru_op_cost.py's too)
        h: Any = sg.zeros(xs.shape[0], n)
        for t in range(xs.shape[1]):
            gx, gh = self.x_gates(xs[:, t]), self.h_gates(h)
            r = (gx[:, :n] + gh[:, :n]).sigmoid()
            z = (gx[:, n : 2 * n] + gh[:, n : 2 * n]).sigmoid()
            candidate = (gx[:, 2 * n :] + r * gh[:, 2 * n :]).tanh()
            h = (1.0 - z) * candidate + z * h
        return self.head(h)


def torch_hand_gru(ours: HandGRU) -> Any:
    import torch

    inputs, hidden = ours.x_gates.weight.shape[0], ours.h_gates.weight.shape[0]

    class TorchHandGRU(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.x_gates = torch.nn.Linear(inputs, 3 * hidden)
            self.h_gates = torch.nn.Linear(hidden, 3 * hidden)
            self.head = torch.nn.Linear(hidden, 10)

        def forward(self, xs: Any) -> Any:
            n = hidden
            h = torch.zeros(xs.shape[0], n)
            for t in range(xs.shape[1]):
                gx, gh = self.x_gates(xs[:, t]), self.h_gates(h)
                r = torch.sigmoid(gx[:, :n] + gh[:, :n])
                z = torch.sigmoid(gx[:, n : 2 * n] + gh[:, n : 2 * n])
                candidate = torch.tanh(gx[:, 2 * n :] + r * gh[:, 2 * n :])
                h = (1 - z) * candidate + z * h
            return self.head(h)

    theirs = TorchHandGRU()
    for mine, twin in ((ours.x_gates, theirs.x_gates), (ours.h_gates, theirs.h_gates), (ours.head, theirs.head)):
        _copy_linear(mine, twin)
    return theirs


def hand_gru(with_compile: bool, checks: int = 3) -> Workload:
    twin = (jax_twins.hand_gru, jax_twins.hand_gru_params)
    rng = np.random.default_rng(1)
    x_np = rng.standard_normal((GRU_BATCH, GRU_STEPS, GRU_INPUT)).astype(np.float32)
    y_np = rng.integers(0, 10, GRU_BATCH)
    model = HandGRU(sg.Generator(1))
    name = "hand-written GRU cell × 24 steps, hidden 128, batch 32, Adam"
    return _training(name, model, lambda: torch_hand_gru(model), x_np, y_np, with_compile, checks, twin)


# --------------------------------------------------------------------------- tiny ViT
VIT_WIDTH, VIT_PATCHES, VIT_PATCH = 64, 64, 4 * 4 * 3


class TinyViT(nn.Module):
    """Patches embedded by a Linear, learned positions, 2 pre-norm encoder blocks (4 heads,
    feed-forward 256, exact GELU), a final LayerNorm, the mean over patches, a linear head."""

    def __init__(self, generator: sg.Generator) -> None:
        self.embed = nn.Linear[L[48], L[64]](generator=generator)
        self.positions = nn.parameter(sg.randn(VIT_PATCHES, VIT_WIDTH, generator=generator) * 0.02)
        self.blocks = [
            nn.TransformerEncoderBlock[L[64]](num_heads=4, ff_dim=256, approximate="none", generator=generator)
            for _ in range(2)
        ]
        self.norm = nn.LayerNorm[L[64]]()
        self.head = nn.Linear[L[64], L[10]](generator=generator)

    def __call__(self, patches: Any) -> Any:
        h: Any = self.embed(patches) + self.positions
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h).mean(1))


def torch_tiny_vit(ours: TinyViT) -> Any:
    import torch

    class TorchTinyViT(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = torch.nn.Linear(VIT_PATCH, VIT_WIDTH)
            self.positions = torch.nn.Parameter(_t(ours.positions).clone())
            self.blocks = torch.nn.ModuleList(
                torch.nn.TransformerEncoderLayer(
                    VIT_WIDTH, 4, 256, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
                )
                for _ in range(2)
            )
            self.norm = torch.nn.LayerNorm(VIT_WIDTH)
            self.head = torch.nn.Linear(VIT_WIDTH, 10)

        def forward(self, patches: Any) -> Any:
            h = self.embed(patches) + self.positions
            for block in self.blocks:
                h = block(h)
            return self.head(self.norm(h).mean(1))

    theirs = TorchTinyViT()
    _copy_linear(ours.embed, theirs.embed)
    _copy_linear(ours.head, theirs.head)
    for mine, block in zip(ours.blocks, theirs.blocks, strict=True):
        gpt_torch.copy_encoder_block(mine, block)
    with torch.no_grad():
        theirs.norm.weight.copy_(_t(ours.norm.weight))
        theirs.norm.bias.copy_(_t(ours.norm.bias))
    return theirs


def patches(images: np.ndarray, size: int = 4) -> np.ndarray:
    """``(B, C, H, W)`` images as ``(B, H/size · W/size, size·size·C)`` patches, row-major."""
    b, c, h, w = images.shape
    cut = images.reshape(b, c, h // size, size, w // size, size).transpose(0, 2, 4, 3, 5, 1)
    return np.ascontiguousarray(cut.reshape(b, (h // size) * (w // size), size * size * c))


def tiny_vit(with_compile: bool, checks: int = 3) -> Workload:
    twin = (jax_twins.tiny_vit, jax_twins.tiny_vit_params)
    rng = np.random.default_rng(2)
    x_np = patches(rng.standard_normal((32, 3, 32, 32)).astype(np.float32))
    y_np = rng.integers(0, 10, 32)
    model = TinyViT(sg.Generator(2))
    name = "tiny ViT, patch 4, width 64, 2 blocks, batch 32, Adam"
    return _training(name, model, lambda: torch_tiny_vit(model), x_np, y_np, with_compile, checks, twin)


# --------------------------------------------------------------------------- wide MLP
WIDE_LAYERS = [(1024, 1024), (1024, 1024), (1024, 10)]
WIDE_BATCH = 256


class WideMLP(nn.Module):
    def __init__(self, generator: sg.Generator) -> None:
        self.l1 = nn.Linear[L[1024], L[1024]](generator=generator)
        self.l2 = nn.Linear[L[1024], L[1024]](generator=generator)
        self.l3 = nn.Linear[L[1024], L[10]](generator=generator)

    def __call__(self, x: Any) -> Any:
        return self.l3(self.l2(self.l1(x).relu()).relu())


def torch_wide_mlp(ours: WideMLP) -> Any:
    import torch

    layers = [torch.nn.Linear(i, o) for i, o in WIDE_LAYERS]
    for mine, twin in zip((ours.l1, ours.l2, ours.l3), layers, strict=True):
        _copy_linear(mine, twin)
    return torch.nn.Sequential(layers[0], torch.nn.ReLU(), layers[1], torch.nn.ReLU(), layers[2])


def wide_mlp_flops(batch: int = WIDE_BATCH) -> int:
    """The step's matrix-product FLOPs: forward, every weight gradient, and the input
    gradients of layers 2 and 3 (the data needs none)."""
    forward = sum(2 * batch * i * o for i, o in WIDE_LAYERS)
    return 2 * forward + sum(2 * batch * i * o for i, o in WIDE_LAYERS[1:])


def wide_mlp(with_compile: bool, sgemm_rate: float, checks: int = 3) -> Workload:
    rng = np.random.default_rng(3)
    x_np = rng.standard_normal((WIDE_BATCH, 1024)).astype(np.float32)
    y_np = rng.integers(0, 10, WIDE_BATCH)
    model = WideMLP(sg.Generator(3))
    name = "wide MLP 1024-1024-1024-10, batch 256, Adam"
    floor = wide_mlp_flops() / sgemm_rate
    twin = (jax_twins.wide_mlp, jax_twins.wide_mlp_params)
    return _training(name, model, lambda: torch_wide_mlp(model), x_np, y_np, with_compile, checks, twin, floor)


# --------------------------------------------------------------------------- decoding
DECODE_TOKENS = 16
DECODE_BATCH = 8  # the batched decoding workload's sequences


def greedy_decoding(with_compile: bool, batch: int = 1) -> Workload:
    """``examples/gpt.py``'s model (2 blocks, width 96, context 64; untrained, from one seed)
    and its PyTorch twin decoding the same 16 tokens greedily from the same prompts, ``batch``
    sequences at once (each from its own place in the corpus), no tape (both under
    ``no_grad``)."""
    import torch
    from gpt_torch import gpt

    model = gpt.GPT(generator=sg.Generator(0))
    model.eval()
    text = gpt.corpus().encode("ascii")
    starts = [i * (len(text) - gpt.CONTEXT) // batch for i in range(batch)]
    prompts = np.stack([np.frombuffer(text[s : s + gpt.CONTEXT], dtype=np.uint8) for s in starts]).astype(np.int64)

    def next_tokens(ids: Any) -> Any:
        return model(ids)[:, gpt.CONTEXT - 1].argmax(-1)

    def decoder(predict: Callable[[Any], Any], wrap: Callable[[np.ndarray], Any] = sg.tensor) -> Step:
        def decode() -> list[list[int]]:
            ids = [list(p) for p in prompts]
            for _ in range(DECODE_TOKENS):
                window = np.array([row[-gpt.CONTEXT :] for row in ids])
                for row, token in zip(ids, np.asarray(predict(wrap(window))).tolist(), strict=True):
                    row.append(int(token))
            return [row[gpt.CONTEXT :] for row in ids]

        return decode

    def ours_next(ids: Any) -> Any:
        with sg.no_grad():  # as PyTorch's torch.no_grad(): the parameters' ops record nothing
            return next_tokens(ids).numpy()

    ours = decoder(ours_next)
    # sg.compile of the forward pass and the argmax; reading the tokens (.numpy()) and the
    # growing lists are Python, outside it
    forward = sg.compile(next_tokens)

    def compiled_next(ids: Any) -> Any:
        with sg.no_grad():
            return forward(ids).numpy()

    ours_compiled = decoder(compiled_next)

    def torch_decoder(twin: Any) -> Step:
        def decode() -> list[list[int]]:
            ids = torch.from_numpy(prompts.copy())
            with torch.no_grad():
                for _ in range(DECODE_TOKENS):
                    logits = twin(ids[:, -gpt.CONTEXT :])
                    ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
            return ids[:, gpt.CONTEXT :].tolist()

        return decode

    eager = torch_decoder(gpt_torch.torch_gpt(model).eval())
    tokens = ours()
    if tokens != eager():
        raise AssertionError(f"greedy decoding: shapegrad's tokens {tokens} differ from PyTorch's {eager()}")
    name = f"greedy decoding, 2-block LM, context 64, batch {batch}, {DECODE_TOKENS} tokens, untraced"
    start = time.perf_counter()
    if ours_compiled() != tokens or forward.eager_reason is not None:
        raise AssertionError(f"greedy decoding: sg.compile's tokens differ ({forward.eager_reason})")
    recorded = f"{name}: sg.compile's first decoding (recording{_LOOPS_NOTE}) took {time.perf_counter() - start:.2f} s"
    # JAX: the forward pass and argmax jitted (one shape: the last 64 ids), the loop Python
    jax_decode, seconds, jax_tokens = _jax_twin(
        lambda: decoder(jax_twins.gpt_next_token(model), lambda ids: ids.astype(np.int32)), lambda s: s()
    )
    notes: list[str] = [recorded]
    if not isinstance(jax_decode, str):
        if jax_tokens != tokens:
            raise AssertionError(f"greedy decoding: JAX's tokens {jax_tokens} differ from shapegrad's {tokens}")
        notes.append(f"{name}: JAX jit's first decoding (compiling) took {seconds:.1f} s")
    compiled: Step | str = SKIPPED
    if with_compile:
        compiled, seconds, decoded = _compiled(lambda: gpt_torch.torch_gpt(model).eval(), torch_decoder, 1)
        if not isinstance(compiled, str):
            notes.append(f"{name}: torch.compile's first decoding (compiling) took {seconds:.1f} s")
            if decoded[0] != tokens:
                raise AssertionError("greedy decoding: torch.compile's tokens differ from shapegrad's")
    return Workload(name, ours, eager, compiled, None, notes, ours_compiled, jax_decode)


def build_all(with_compile: bool, sgemm_rate: float) -> list[Workload]:
    """Every workload, checked, in the order of issue #26's table."""
    return [
        hand_gru(with_compile),
        cifar_cnn(with_compile),
        tiny_vit(with_compile),
        wide_mlp(with_compile, sgemm_rate),
        greedy_decoding(with_compile),
        greedy_decoding(with_compile, batch=DECODE_BATCH),
    ]
