"""The optimizers. Each docstring gives the update as math; state is updated in place."""

from __future__ import annotations

from typing import Any

from .._backend import fused_kernel
from .._errors import ShapegradError
from ._base import LearningRate, M, Optimizer, UnusedPolicy, require

__all__ = ["Adam", "AdamW", "RMSprop", "Sgd", "apply_weight_decay"]


def apply_weight_decay(param: Any, grad: Any, lr: float, weight_decay: float, decoupled: bool) -> Any:
    """The gradient to use after weight decay: decoupled decay shrinks ``param`` in place
    (``p ← p·(1 - lr·wd)``, AdamW) and leaves ``grad``; L2 decay returns ``grad + wd·p``."""
    if not weight_decay:
        return grad
    if decoupled:
        param *= 1 - lr * weight_decay
        return grad
    return grad + weight_decay * param


class Sgd(Optimizer[M]):
    """Stochastic gradient descent, as ``torch.optim.SGD``.

    ``g ← g + wd·p`` (L2, ``decoupled_weight_decay=False``) or ``p ← p·(1 - lr·wd)``
    (decoupled); with momentum μ: ``b ← μ·b + g`` (``b = g`` at the first step), then
    ``g ← g + μ·b`` (Nesterov) or ``g ← b``; finally ``p ← p - lr·g``.

    Examples:
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> model = sg.nn.Linear[L[2], L[1]]()
        >>> opt = sg.optim.Sgd(model, lr=0.1, momentum=0.9)
    """

    def __init__(
        self,
        model: M,
        *,
        lr: LearningRate = 1e-2,
        momentum: float = 0.0,
        nesterov: bool = False,
        weight_decay: float = 0.0,
        decoupled_weight_decay: bool = False,
        unused: UnusedPolicy = "error",
        clip_norm: float | None = None,
    ) -> None:
        require(momentum >= 0, "momentum >= 0", momentum)
        require(weight_decay >= 0, "weight_decay >= 0", weight_decay)
        if nesterov and momentum <= 0:
            raise ShapegradError("Nesterov momentum expects momentum > 0")
        self.momentum, self.nesterov = momentum, nesterov
        self.weight_decay, self.decoupled = weight_decay, decoupled_weight_decay
        super().__init__(model, lr=lr, unused=unused, clip_norm=clip_norm)
        self._kernel = "sgd_nesterov" if nesterov else "sgd_momentum"

    def _init_state(self, xp: Any, param: Any) -> dict[str, Any]:
        return {"momentum": xp.zeros_like(param)} if self.momentum else {}

    def _apply(self, backend: Any, param: Any, grad: Any, state: dict[str, Any], lr: float, step: int) -> None:
        g = apply_weight_decay(param, grad, lr, self.weight_decay, self.decoupled)
        if self.momentum:
            buf = state["momentum"]
            # A backend may offer one kernel for the momentum update; the formula is the same.
            fused = fused_kernel(backend, self._kernel, param.dtype) if step > 1 else None
            if fused is not None:
                dtype = param.dtype.type
                fused(g, dtype(lr), dtype(self.momentum), param, buf)
                return
            if step == 1:
                buf[...] = g
            else:
                buf *= self.momentum
                buf += g
            g = g + self.momentum * buf if self.nesterov else buf
        param -= lr * g


class Adam(Optimizer[M]):
    """Adam, as ``torch.optim.Adam`` (L2 weight decay added to the gradient).

    ``m ← β₁m + (1-β₁)g``, ``v ← β₂v + (1-β₂)g²``,
    ``p ← p - lr · (m / (1-β₁ᵗ)) / (√(v / (1-β₂ᵗ)) + ε)``.
    """

    decoupled = False

    def __init__(
        self,
        model: M,
        *,
        lr: LearningRate = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        unused: UnusedPolicy = "error",
        clip_norm: float | None = None,
    ) -> None:
        for i, beta in enumerate(betas):
            require(0.0 <= beta < 1.0, f"betas[{i}] in [0, 1)", beta)
        require(eps > 0, "eps > 0", eps)
        require(weight_decay >= 0, "weight_decay >= 0", weight_decay)
        self.beta1, self.beta2 = betas
        self.eps, self.weight_decay = eps, weight_decay
        super().__init__(model, lr=lr, unused=unused, clip_norm=clip_norm)

    def _init_state(self, xp: Any, param: Any) -> dict[str, Any]:
        return {"exp_avg": xp.zeros_like(param), "exp_avg_sq": xp.zeros_like(param)}

    def _apply(self, backend: Any, param: Any, grad: Any, state: dict[str, Any], lr: float, step: int) -> None:
        xp = backend.xp
        g = apply_weight_decay(param, grad, lr, self.weight_decay, self.decoupled)
        m, v = state["exp_avg"], state["exp_avg_sq"]
        bias1 = 1 - self.beta1**step
        bias2 = 1 - self.beta2**step
        # A backend may offer the same update as one in-place kernel (NumPy: no temporaries;
        # CuPy: one launch); this xp math is the reference it is tested against.
        fused = fused_kernel(backend, "adam", param.dtype)
        if fused is not None:
            scalar = param.dtype.type
            fused(g, *map(scalar, (lr / bias1, self.beta1, self.beta2, self.eps, bias2**-0.5)), param, m, v)
            return
        m *= self.beta1
        m += (1 - self.beta1) * g
        v *= self.beta2
        v += (1 - self.beta2) * (g * g)
        denom = xp.sqrt(v) / (bias2**0.5)
        denom += self.eps
        param -= (lr / bias1) * (m / denom)


class AdamW(Adam[M]):
    """Adam with decoupled weight decay, as ``torch.optim.AdamW``: ``p ← p·(1 - lr·wd)``
    before the Adam step (default ``weight_decay=0.01``)."""

    decoupled = True

    def __init__(
        self,
        model: M,
        *,
        lr: LearningRate = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        unused: UnusedPolicy = "error",
        clip_norm: float | None = None,
    ) -> None:
        super().__init__(
            model, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, unused=unused, clip_norm=clip_norm
        )


class RMSprop(Optimizer[M]):
    """RMSprop, as ``torch.optim.RMSprop``.

    ``s ← αs + (1-α)g²``; centered: ``a ← αa + (1-α)g`` and ``d = √(s - a²) + ε``, else
    ``d = √s + ε``; with momentum μ: ``b ← μb + g/d``, ``p ← p - lr·b``; else
    ``p ← p - lr·g/d``.
    """

    def __init__(
        self,
        model: M,
        *,
        lr: LearningRate = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        momentum: float = 0.0,
        centered: bool = False,
        weight_decay: float = 0.0,
        unused: UnusedPolicy = "error",
        clip_norm: float | None = None,
    ) -> None:
        require(0.0 <= alpha <= 1.0, "alpha in [0, 1]", alpha)
        require(eps > 0, "eps > 0", eps)
        require(momentum >= 0, "momentum >= 0", momentum)
        require(weight_decay >= 0, "weight_decay >= 0", weight_decay)
        self.alpha, self.eps, self.momentum, self.centered, self.weight_decay = (
            alpha,
            eps,
            momentum,
            centered,
            weight_decay,
        )
        super().__init__(model, lr=lr, unused=unused, clip_norm=clip_norm)

    def _init_state(self, xp: Any, param: Any) -> dict[str, Any]:
        state = {"square_avg": xp.zeros_like(param)}
        if self.centered:
            state["grad_avg"] = xp.zeros_like(param)
        if self.momentum:
            state["momentum"] = xp.zeros_like(param)
        return state

    def _apply(self, backend: Any, param: Any, grad: Any, state: dict[str, Any], lr: float, step: int) -> None:
        xp = backend.xp
        g = apply_weight_decay(param, grad, lr, self.weight_decay, decoupled=False)
        sq = state["square_avg"]
        sq *= self.alpha
        sq += (1 - self.alpha) * (g * g)
        if self.centered:
            avg = state["grad_avg"]
            avg *= self.alpha
            avg += (1 - self.alpha) * g
            denom = xp.sqrt(sq - avg * avg) + self.eps
        else:
            denom = xp.sqrt(sq) + self.eps
        if self.momentum:
            buf = state["momentum"]
            buf *= self.momentum
            buf += g / denom
            param -= lr * buf
        else:
            param -= lr * (g / denom)
