# pyright: reportPrivateUsage=true
"""The optimizers. Each docstring gives the update as math; state is updated in place.

Each optimizer's settings are validated and set by its ``_configure``, once for its own
(on the optimizer) and once per ``Group`` (on the group's namespace); ``_apply`` reads them
from ``hp``, so one parameter group's update never sees another's settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._backend import fused_kernel
from ._base import LearningRate, M, Optimizer, UnusedPolicy, require
from ._groups import Group

__all__ = ["Adadelta", "Adagrad", "Adam", "AdamW", "RMSprop", "Sgd", "apply_weight_decay"]


def apply_weight_decay(param: Any, grad: Any, lr: float, weight_decay: float, decoupled: bool) -> Any:
    """The gradient to use after weight decay: decoupled decay shrinks ``param`` in place
    (``p ← p·(1 - lr·wd)``, AdamW) and leaves ``grad``; L2 decay returns ``grad + wd·p``."""
    if not weight_decay:
        return grad
    if decoupled:
        param *= 1 - lr * weight_decay
        return grad
    return grad + weight_decay * param


def _require_weight_decay(weight_decay: float) -> None:
    require(weight_decay >= 0, "weight_decay >= 0", weight_decay)


def _configure_sgd(
    target: Any,
    *,
    momentum: float,
    dampening: float,
    nesterov: bool,
    weight_decay: float,
    decoupled_weight_decay: bool,
) -> None:
    require(momentum >= 0, "momentum >= 0", momentum)
    require(0 <= dampening <= 1, "dampening in [0, 1]", dampening)
    _require_weight_decay(weight_decay)
    if nesterov:
        require(
            momentum > 0 and dampening == 0,
            "momentum > 0 and dampening 0 with nesterov=True",
            {"momentum": momentum, "dampening": dampening},
        )
    target.momentum, target.nesterov, target.dampening = momentum, nesterov, dampening
    target.weight_decay, target.decoupled = weight_decay, decoupled_weight_decay
    target.kernel = "sgd_nesterov" if nesterov else "sgd_momentum"


class Sgd(Optimizer[M]):
    """Stochastic gradient descent, as ``torch.optim.SGD`` (its default: ``lr=1e-3``).

    ``g ← g + wd·p`` (L2, ``decoupled_weight_decay=False``) or ``p ← p·(1 - lr·wd)``
    (decoupled); with momentum μ: ``b ← μ·b + (1 - τ)·g`` (dampening τ; ``b = g`` at the
    first step), then ``g ← g + μ·b`` (Nesterov) or ``g ← b``; finally ``p ← p - lr·g``.
    ``maximize=True``: ``g ← -g`` first, gradient ascent (every optimizer here has it).

    Examples:
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> model = sg.nn.Linear[L[2], L[1]]()
        >>> opt = sg.optim.Sgd(model, lr=0.1, momentum=0.9)
        >>> w = sg.nn.Linear[L[1], L[1]](bias=False)
        >>> grads = w.alloc_grads()
        >>> before = w.weight.item()
        >>> _ = w(sg.ones(1, 1).trace(grads)).sum().backward()  # d/dw = 1
        >>> sg.optim.Sgd(w, lr=0.5, maximize=True).update(w, grads)  # ascent: w + 0.5
        >>> round(w.weight.item() - before, 4)
        0.5
    """

    def __init__(
        self,
        model: M,
        *,
        lr: LearningRate = 1e-3,
        momentum: float = 0.0,
        nesterov: bool = False,
        weight_decay: float = 0.0,
        decoupled_weight_decay: bool = False,
        unused: UnusedPolicy = "error",
        clip_norm: float | None = None,
        groups: Sequence[Group] = (),
        maximize: bool = False,
        dampening: float = 0.0,
    ) -> None:
        settings = {
            "momentum": momentum,
            "dampening": dampening,
            "nesterov": nesterov,
            "weight_decay": weight_decay,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(
            model, lr=lr, unused=unused, clip_norm=clip_norm, groups=groups, settings=settings, maximize=maximize
        )

    def _configure(self, target: Any, settings: dict[str, Any]) -> None:
        _configure_sgd(target, **settings)

    def _init_state(self, xp: Any, param: Any, hp: Any) -> dict[str, Any]:
        return {"momentum": xp.zeros_like(param)} if hp.momentum else {}

    def _apply(
        self, backend: Any, param: Any, grad: Any, state: dict[str, Any], lr: float, step: int, hp: Any = None
    ) -> None:
        hp = self if hp is None else hp
        g = apply_weight_decay(param, grad, lr, hp.weight_decay, hp.decoupled)
        if hp.momentum:
            buf = state["momentum"]
            # A backend may offer one kernel for the momentum update; the formula is the same.
            fused = fused_kernel(backend, hp.kernel, param.dtype) if step > 1 and not hp.dampening else None
            if fused is not None:
                dtype = param.dtype.type
                fused(g, dtype(lr), dtype(hp.momentum), param, buf)
                return
            if step == 1:
                buf[...] = g
            else:
                buf *= hp.momentum
                buf += (1 - hp.dampening) * g if hp.dampening else g
            g = g + hp.momentum * buf if hp.nesterov else buf
        param -= lr * g


def _configure_adam(target: Any, *, betas: tuple[float, float], eps: float, weight_decay: float, amsgrad: bool) -> None:
    for i, beta in enumerate(betas):
        require(0.0 <= beta < 1.0, f"betas[{i}] in [0, 1)", beta)
    require(eps >= 0, "eps >= 0", eps)  # as PyTorch: 0 is allowed
    _require_weight_decay(weight_decay)
    require(isinstance(amsgrad, bool), "amsgrad a bool", amsgrad)  # pyright: ignore[reportUnnecessaryIsInstance] -- callers may be untyped
    target.beta1, target.beta2 = betas
    target.eps, target.weight_decay, target.amsgrad = eps, weight_decay, amsgrad


class Adam(Optimizer[M]):
    """Adam, as ``torch.optim.Adam`` (L2 weight decay added to the gradient).

    ``m ← β₁m + (1-β₁)g``, ``v ← β₂v + (1-β₂)g²``,
    ``p ← p - lr · (m / (1-β₁ᵗ)) / (√(v / (1-β₂ᵗ)) + ε)``.

    ``amsgrad=True`` (AMSGrad, as PyTorch's): the state also keeps the running maximum
    ``v̂ ← max(v̂, v)`` (``max_exp_avg_sq``, saved with the optimizer's checkpoint), and the
    denominator is ``√(v̂ / (1-β₂ᵗ)) + ε``. A ``Group`` may set it for its parameters alone.
    The update runs as the ``xp`` math (no backend's fused Adam kernel keeps ``v̂``).
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
        groups: Sequence[Group] = (),
        maximize: bool = False,
        amsgrad: bool = False,
    ) -> None:
        settings = {"betas": betas, "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad}
        super().__init__(
            model, lr=lr, unused=unused, clip_norm=clip_norm, groups=groups, settings=settings, maximize=maximize
        )

    def _configure(self, target: Any, settings: dict[str, Any]) -> None:
        _configure_adam(target, **settings)

    def _init_state(self, xp: Any, param: Any, hp: Any) -> dict[str, Any]:
        state = {"exp_avg": xp.zeros_like(param), "exp_avg_sq": xp.zeros_like(param)}
        if hp.amsgrad:
            state["max_exp_avg_sq"] = xp.zeros_like(param)
        return state

    def _apply(
        self, backend: Any, param: Any, grad: Any, state: dict[str, Any], lr: float, step: int, hp: Any = None
    ) -> None:
        hp = self if hp is None else hp
        xp = backend.xp
        g = apply_weight_decay(param, grad, lr, hp.weight_decay, self.decoupled)
        m, v = state["exp_avg"], state["exp_avg_sq"]
        beta1, beta2, eps = hp.beta1, hp.beta2, hp.eps
        bias1 = 1 - beta1**step
        bias2 = 1 - beta2**step
        # A backend may offer the same update as one in-place kernel (NumPy: no temporaries;
        # CuPy: one launch); this xp math is the reference it is tested against. The kernel
        # keeps no running maximum: AMSGrad never asks for it.
        fused = None if hp.amsgrad else fused_kernel(backend, "adam", param.dtype)
        if fused is not None:
            scalar = param.dtype.type
            fused(g, *map(scalar, (lr / bias1, beta1, beta2, eps, bias2**-0.5)), param, m, v)
            return
        m *= beta1
        m += (1 - beta1) * g
        v *= beta2
        v += (1 - beta2) * (g * g)
        if hp.amsgrad:
            peak = state["max_exp_avg_sq"]
            peak[...] = xp.maximum(peak, v)  # PyTorch: torch.maximum(max_exp_avg_sq, exp_avg_sq)
            v = peak
        denom = xp.sqrt(v) / (bias2**0.5)
        denom += eps
        param -= (lr / bias1) * (m / denom)


class AdamW(Adam[M]):
    """Adam with decoupled weight decay, as ``torch.optim.AdamW``: ``p ← p·(1 - lr·wd)``
    before the Adam step (default ``weight_decay=0.01``); ``amsgrad=True`` as ``Adam``'s."""

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
        groups: Sequence[Group] = (),
        maximize: bool = False,
        amsgrad: bool = False,
    ) -> None:
        super().__init__(
            model,
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            unused=unused,
            clip_norm=clip_norm,
            groups=groups,
            amsgrad=amsgrad,
            maximize=maximize,
        )


def _configure_rmsprop(
    target: Any, *, alpha: float, eps: float, momentum: float, centered: bool, weight_decay: float
) -> None:
    require(0.0 <= alpha <= 1.0, "alpha in [0, 1]", alpha)
    require(eps >= 0, "eps >= 0", eps)  # as PyTorch: 0 is allowed
    require(momentum >= 0, "momentum >= 0", momentum)
    _require_weight_decay(weight_decay)
    target.alpha, target.eps, target.momentum = alpha, eps, momentum
    target.centered, target.weight_decay = centered, weight_decay


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
        groups: Sequence[Group] = (),
        maximize: bool = False,
    ) -> None:
        settings = {
            "alpha": alpha,
            "eps": eps,
            "momentum": momentum,
            "centered": centered,
            "weight_decay": weight_decay,
        }
        super().__init__(
            model, lr=lr, unused=unused, clip_norm=clip_norm, groups=groups, settings=settings, maximize=maximize
        )

    def _configure(self, target: Any, settings: dict[str, Any]) -> None:
        _configure_rmsprop(target, **settings)

    def _init_state(self, xp: Any, param: Any, hp: Any) -> dict[str, Any]:
        state = {"square_avg": xp.zeros_like(param)}
        if hp.centered:
            state["grad_avg"] = xp.zeros_like(param)
        if hp.momentum:
            state["momentum"] = xp.zeros_like(param)
        return state

    def _apply(
        self, backend: Any, param: Any, grad: Any, state: dict[str, Any], lr: float, step: int, hp: Any = None
    ) -> None:
        hp = self if hp is None else hp
        xp = backend.xp
        g = apply_weight_decay(param, grad, lr, hp.weight_decay, decoupled=False)
        sq = state["square_avg"]
        sq *= hp.alpha
        sq += (1 - hp.alpha) * (g * g)
        if hp.centered:
            avg = state["grad_avg"]
            avg *= hp.alpha
            avg += (1 - hp.alpha) * g
            denom = xp.sqrt(sq - avg * avg) + hp.eps
        else:
            denom = xp.sqrt(sq) + hp.eps
        if hp.momentum:
            buf = state["momentum"]
            buf *= hp.momentum
            buf += g / denom
            param -= lr * buf
        else:
            param -= lr * (g / denom)


def _configure_adagrad(
    target: Any, *, lr_decay: float, weight_decay: float, initial_accumulator_value: float, eps: float
) -> None:
    require(lr_decay >= 0, "lr_decay >= 0", lr_decay)
    _require_weight_decay(weight_decay)
    require(initial_accumulator_value >= 0, "initial_accumulator_value >= 0", initial_accumulator_value)
    require(eps >= 0, "eps >= 0", eps)
    target.lr_decay, target.weight_decay = lr_decay, weight_decay
    target.initial_accumulator_value, target.eps = initial_accumulator_value, eps


class Adagrad(Optimizer[M]):
    """Adagrad, as ``torch.optim.Adagrad`` (its defaults: ``lr=1e-2``, ``eps=1e-10``).

    ``g ← g + wd·p``; ``s ← s + g²`` (``s`` starts at ``initial_accumulator_value``);
    ``p ← p - lr / (1 + (t-1)·lr_decay) · g / (√s + ε)``.
    """

    def __init__(
        self,
        model: M,
        *,
        lr: LearningRate = 1e-2,
        lr_decay: float = 0.0,
        weight_decay: float = 0.0,
        initial_accumulator_value: float = 0.0,
        eps: float = 1e-10,
        unused: UnusedPolicy = "error",
        clip_norm: float | None = None,
        groups: Sequence[Group] = (),
        maximize: bool = False,
    ) -> None:
        settings = {
            "lr_decay": lr_decay,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "eps": eps,
        }
        super().__init__(
            model, lr=lr, unused=unused, clip_norm=clip_norm, groups=groups, settings=settings, maximize=maximize
        )

    def _configure(self, target: Any, settings: dict[str, Any]) -> None:
        _configure_adagrad(target, **settings)

    def _init_state(self, xp: Any, param: Any, hp: Any) -> dict[str, Any]:
        return {"sum": xp.full_like(param, hp.initial_accumulator_value)}

    def _apply(
        self, backend: Any, param: Any, grad: Any, state: dict[str, Any], lr: float, step: int, hp: Any = None
    ) -> None:
        hp = self if hp is None else hp
        xp = backend.xp
        g = apply_weight_decay(param, grad, lr, hp.weight_decay, decoupled=False)
        total = state["sum"]
        total += g * g
        rate = lr / (1 + (step - 1) * hp.lr_decay)
        param -= rate * (g / (xp.sqrt(total) + hp.eps))


def _configure_adadelta(target: Any, *, rho: float, eps: float, weight_decay: float) -> None:
    require(0.0 <= rho <= 1.0, "rho in [0, 1]", rho)
    require(eps >= 0, "eps >= 0", eps)
    _require_weight_decay(weight_decay)
    target.rho, target.eps, target.weight_decay = rho, eps, weight_decay


class Adadelta(Optimizer[M]):
    """Adadelta, as ``torch.optim.Adadelta`` (its defaults: ``lr=1.0``, ``rho=0.9``,
    ``eps=1e-6``).

    ``g ← g + wd·p``; ``s ← ρs + (1-ρ)g²``; ``Δ = √(u + ε) / √(s + ε) · g``;
    ``u ← ρu + (1-ρ)Δ²``; ``p ← p - lr·Δ``.
    """

    def __init__(
        self,
        model: M,
        *,
        lr: LearningRate = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        unused: UnusedPolicy = "error",
        clip_norm: float | None = None,
        groups: Sequence[Group] = (),
        maximize: bool = False,
    ) -> None:
        settings = {"rho": rho, "eps": eps, "weight_decay": weight_decay}
        super().__init__(
            model, lr=lr, unused=unused, clip_norm=clip_norm, groups=groups, settings=settings, maximize=maximize
        )

    def _configure(self, target: Any, settings: dict[str, Any]) -> None:
        _configure_adadelta(target, **settings)

    def _init_state(self, xp: Any, param: Any, hp: Any) -> dict[str, Any]:
        return {"square_avg": xp.zeros_like(param), "acc_delta": xp.zeros_like(param)}

    def _apply(
        self, backend: Any, param: Any, grad: Any, state: dict[str, Any], lr: float, step: int, hp: Any = None
    ) -> None:
        hp = self if hp is None else hp
        xp = backend.xp
        g = apply_weight_decay(param, grad, lr, hp.weight_decay, decoupled=False)
        square, acc = state["square_avg"], state["acc_delta"]
        square *= hp.rho
        square += (1 - hp.rho) * (g * g)
        delta = xp.sqrt(acc + hp.eps) / xp.sqrt(square + hp.eps) * g
        acc *= hp.rho
        acc += (1 - hp.rho) * (delta * delta)
        param -= lr * delta
