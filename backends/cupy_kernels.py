"""The CuPy backend's fused element-wise kernels, as ``cupy.ElementwiseKernel`` sources.

Each kernel does in one launch what the shared op math (``shapegrad/ops``) does in several
``xp`` calls: an activation's forward or its gradient rule, or an optimizer's update. The op
math stays the reference; these are the same formulas written for one GPU thread per
element, and the suite checks them against it.

The bodies keep to a subset that reads the same in CUDA C++ and in Python — assignments,
arithmetic, comparisons (a comparison times a number is 0 or that number), the math
functions ``sqrt exp log1p tanh fabs``, ``positive_part`` and ``keep_where`` (a select,
``c ? v : 0``) from :data:`PREAMBLE`, and constants written ``T(0.5)`` so that ``float32``
math stays in ``float32`` — so that a machine without a GPU can still run them on NumPy
arrays (``tests/emulated_cupy.py``) and compile them with NVRTC (``tests/test_cupy_kernels.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KERNELS", "PREAMBLE", "ElementwiseSource"]


@dataclass(frozen=True)
class ElementwiseSource:
    """One kernel: ``inputs`` and ``outputs`` as ElementwiseKernel parameter lists
    (``"T g, T x"``; ``T`` is the floating type of the arrays), and the per-element ``body``."""

    inputs: str
    outputs: str
    body: str


PREAMBLE = """
template <typename T> __device__ T positive_part(T x) { return x > T(0) ? x : T(0); }
template <typename T> __device__ T keep_where(bool c, T v) { return c ? v : T(0); }
"""

_GELU_INNER = "T(0.7978845608028654) * (x + T(0.044715) * x * x * x)"

KERNELS: dict[str, ElementwiseSource] = {
    # Activations: forward where it is more than one xp call, and every gradient rule.
    "tanh_backward": ElementwiseSource("T g, T y", "T dx", "dx = g * (1 - y * y)"),
    # e^-|x| never overflows; for x < 0, e / (1 + e) keeps full relative precision.
    "sigmoid": ElementwiseSource(
        "T x",
        "T y",
        "y = (x >= 0) * (1 / (1 + exp(-fabs(x)))) + (x < 0) * (exp(-fabs(x)) / (1 + exp(-fabs(x))))",
    ),
    "sigmoid_backward": ElementwiseSource("T g, T y", "T dx", "dx = g * y * (1 - y)"),
    # A select, not g·(x > 0): 0 where x <= 0 even for an infinite g, as PyTorch.
    "relu_backward": ElementwiseSource("T g, T x", "T dx", "dx = keep_where(x > 0, g)"),
    "leaky_relu": ElementwiseSource("T x, T slope", "T y", "y = x * ((x > 0) * (1 - slope) + slope)"),
    "leaky_relu_backward": ElementwiseSource("T g, T x, T slope", "T dx", "dx = g * ((x > 0) * (1 - slope) + slope)"),
    "gelu": ElementwiseSource("T x", "T y, T t", f"t = tanh({_GELU_INNER}); y = T(0.5) * x * (1 + t)"),
    "gelu_backward": ElementwiseSource(
        "T g, T x, T t",
        "T dx",
        "dx = g * (T(0.5) * (1 + t) + T(0.5) * x * (1 - t * t)"
        " * T(0.7978845608028654) * (1 + T(3 * 0.044715) * x * x))",
    ),
    "softplus": ElementwiseSource("T x", "T y", "y = positive_part(x) + log1p(exp(-fabs(x)))"),
    "softplus_backward": ElementwiseSource(
        "T g, T x",
        "T dx",
        "dx = g * ((x >= 0) * (1 / (1 + exp(-fabs(x)))) + (x < 0) * (exp(-fabs(x)) / (1 + exp(-fabs(x)))))",
    ),
    # Optimizer updates, in place on the parameter and its state.
    "adam": ElementwiseSource(
        "T g, T step_size, T beta1, T beta2, T eps, T inv_bias2_sqrt",
        "T p, T m, T v",
        "m = beta1 * m + (1 - beta1) * g; v = beta2 * v + (1 - beta2) * g * g;"
        " p = p - step_size * m / (sqrt(v) * inv_bias2_sqrt + eps)",
    ),
    "sgd_momentum": ElementwiseSource(
        "T g, T lr, T momentum", "T p, T buf", "buf = momentum * buf + g; p = p - lr * buf"
    ),
    "sgd_nesterov": ElementwiseSource(
        "T g, T lr, T momentum", "T p, T buf", "buf = momentum * buf + g; p = p - lr * (g + momentum * buf)"
    ),
}
