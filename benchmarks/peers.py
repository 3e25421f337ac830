"""The peers shapegrad is measured against: PyTorch eager CPU and hand-written NumPy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


class NumpyMLP:
    """784-256-256-10 ReLU MLP with softmax cross-entropy and Adam, written by hand: the
    floor for shapegrad's NumPy backend (same math, no framework)."""

    def __init__(self, weights: list[np.ndarray], lr: float = 1e-3) -> None:
        self.params = [w.copy() for w in weights]  # W1, b1, W2, b2, W3, b3 (W as (in, out))
        self.m = [np.zeros_like(p) for p in self.params]
        self.v = [np.zeros_like(p) for p in self.params]
        self.scratch = [np.empty_like(p) for p in self.params]
        self.t = 0
        self.lr = lr

    def step(self, x: np.ndarray, y: np.ndarray) -> float:
        w1, b1, w2, b2, w3, b3 = self.params
        a1 = x @ w1 + b1
        h1 = np.maximum(a1, 0)
        a2 = h1 @ w2 + b2
        h2 = np.maximum(a2, 0)
        logits = h2 @ w3 + b3
        shifted = logits - logits.max(axis=1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        n = x.shape[0]
        loss = -logp[np.arange(n), y].mean()
        g = np.exp(logp)
        g[np.arange(n), y] -= 1
        g /= n
        grads = [None] * 6
        grads[4] = h2.T @ g
        grads[5] = g.sum(axis=0)
        g = (g @ w3.T) * (a2 > 0)
        grads[2] = h1.T @ g
        grads[3] = g.sum(axis=0)
        g = (g @ w2.T) * (a1 > 0)
        grads[0] = x.T @ g
        grads[1] = g.sum(axis=0)
        self.t += 1
        b1c, b2c = 1 - 0.9**self.t, 1 - 0.999**self.t
        for p, grad, m, v, scratch in zip(self.params, grads, self.m, self.v, self.scratch, strict=False):
            # In place through one scratch buffer: the fastest plain-NumPy Adam.
            m *= 0.9
            np.multiply(grad, 0.1, out=scratch)
            m += scratch
            v *= 0.999
            np.multiply(grad, grad, out=scratch)
            scratch *= 0.001
            v += scratch
            np.sqrt(v, out=scratch)
            scratch *= 1 / np.sqrt(b2c)
            scratch += 1e-8
            np.divide(m, scratch, out=scratch)
            scratch *= self.lr / b1c
            p -= scratch
        return float(loss)


def torch_mlp(weights: list[np.ndarray], lr: float = 1e-3) -> tuple[Any, Any]:
    """The same MLP in PyTorch (weights transposed into nn.Linear's layout) and its Adam."""
    import torch

    layers = []
    for i in range(0, 6, 2):
        layer = torch.nn.Linear(weights[i].shape[0], weights[i].shape[1])
        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(weights[i].T.copy()))
            layer.bias.copy_(torch.from_numpy(weights[i + 1].copy()))
        layers.append(layer)
    model = torch.nn.Sequential(layers[0], torch.nn.ReLU(), layers[1], torch.nn.ReLU(), layers[2])
    return model, torch.optim.Adam(model.parameters(), lr=lr)


def torch_cnn(seed: int = 0) -> tuple[Any, Any]:
    """Two 3×3 convolutions (1→16→32, padding 1) with 2×2 max pooling and a linear head."""
    import torch

    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(32 * 7 * 7, 10),
    )
    return model, torch.optim.Adam(model.parameters(), lr=1e-3)


def torch_step(model: Any, opt: Any, x: Any, y: Any) -> Any:
    """One PyTorch training step on fixed data (cross-entropy), as a zero-argument callable."""
    import torch

    def step() -> float:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    return step


# --------------------------------------------------------------------------- BLAS
def blas_kernels() -> str:
    """The kernels NumPy's OpenBLAS runs on this CPU, as OpenBLAS names them (``Haswell``:
    AVX2; ``SkylakeX``: AVX-512), asked of the library NumPy loaded; what
    ``OPENBLAS_CORETYPE`` forces, if set, is what it reports. "unknown" where NumPy's BLAS is
    not the bundled OpenBLAS."""
    import ctypes
    import glob

    libs = Path(np.__file__).resolve().parent.parent / "numpy.libs"
    for path in sorted(glob.glob(str(libs / "libscipy_openblas*.so*"))):
        lib = ctypes.CDLL(path)
        for symbol in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename"):
            get = getattr(lib, symbol, None)
            if get is not None:
                get.restype = ctypes.c_char_p
                name: bytes = get()
                return name.decode()
    return "unknown"


# --------------------------------------------------------------------------- JAX
# XLA ignores the BLAS thread variables: these flags pin it to one thread. They take effect
# only if set before jax is first imported (run.py sets them for its one-thread section).
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def have_jax() -> str | None:
    """None when JAX and optax are installed, else why not (the JAX columns say so). Looked up,
    not imported: run.py sets XLA_FLAGS (one thread) after asking and before the first import."""
    import importlib.util

    for name in ("jax", "optax"):
        if importlib.util.find_spec(name) is None:
            return f"JAX absent ({name}): pip install -e '.[jax]'"
    return None


def jax_train_step(apply: Any, params: Any, x: np.ndarray, y: np.ndarray, lr: float = 1e-3) -> Any:
    """One training step of ``apply(params, x) → logits`` (softmax cross-entropy against the
    integer labels ``y``, gradients by ``jax.value_and_grad``, optax's Adam), the whole step
    under ``jax.jit`` with the weights and the optimizer state passed in and returned; as a
    zero-argument callable that returns the loss (waiting for the device, so that a timing
    includes the work). ``params`` is any pytree of arrays: the starting weights."""
    import jax
    import jax.numpy as jnp
    import optax

    optimizer = optax.adam(lr)
    weights = jax.tree.map(jnp.asarray, params)
    xs, ys = jnp.asarray(x), jnp.asarray(y.astype(np.int32))

    def loss_fn(ps: Any, inputs: Any, labels: Any) -> Any:
        return optax.softmax_cross_entropy_with_integer_labels(apply(ps, inputs), labels).mean()

    @jax.jit
    def update(ps: Any, st: Any, inputs: Any, labels: Any) -> tuple[Any, Any, Any]:
        loss, grads = jax.value_and_grad(loss_fn)(ps, inputs, labels)
        updates, st = optimizer.update(grads, st, ps)
        return optax.apply_updates(ps, updates), st, loss

    carry = [weights, optimizer.init(weights)]

    def step() -> float:
        carry[0], carry[1], loss = update(carry[0], carry[1], xs, ys)
        return float(loss.block_until_ready())

    return step


def jax_mlp_step(weights: list[np.ndarray], x: np.ndarray, y: np.ndarray, lr: float = 1e-3) -> Any:
    """The MLP step under ``jax.jit`` with optax's Adam (:func:`jax_train_step`)."""
    import jax

    def apply(ps: list[Any], xs: Any) -> Any:
        w1, b1, w2, b2, w3, b3 = ps
        h = jax.nn.relu(xs @ w1 + b1)
        h = jax.nn.relu(h @ w2 + b2)
        return h @ w3 + b3

    return jax_train_step(apply, list(weights), x, y, lr)
