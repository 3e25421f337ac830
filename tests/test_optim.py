"""The optimizer table: trajectories against the published update formulas, convergence on
a parabola and on Rosenbrock, and the contract every optimizer keeps (refusals change
nothing)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal as L

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import nn


class Point(nn.Module):
    """Two coordinates to optimize, as a model with one parameter."""

    def __init__(self, start: list[float]) -> None:
        self.xy = nn.parameter(sg.tensor(np.asarray(start, dtype=np.float64)))


def _decay(p: np.ndarray, g: np.ndarray, lr: float, wd: float, decoupled: bool) -> tuple[np.ndarray, np.ndarray]:
    """Weight decay as the published formulas write it: on the parameter, or on the gradient."""
    if not wd:
        return p, g
    return (p * (1 - lr * wd), g) if decoupled else (p, g + wd * p)


def reference_sgd(
    lr: float, momentum: float = 0.0, nesterov: bool = False, wd: float = 0.0, decoupled: bool = False
) -> Callable[..., Any]:
    def step(p: np.ndarray, g: np.ndarray, s: dict[str, Any], t: int) -> np.ndarray:
        p, g = _decay(p, g, lr, wd, decoupled)
        if momentum:
            s["b"] = g.copy() if t == 1 else momentum * s["b"] + g
            g = g + momentum * s["b"] if nesterov else s["b"]
        return p - lr * g

    return step


def reference_adam(
    lr: float,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    wd: float = 0.0,
    decoupled: bool = False,
    amsgrad: bool = False,
) -> Callable[..., Any]:
    def step(p: np.ndarray, g: np.ndarray, s: dict[str, Any], t: int) -> np.ndarray:
        p, g = _decay(p, g, lr, wd, decoupled)
        s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
        if amsgrad:  # AMSGrad (Reddi et al. 2018) as PyTorch: the running maximum of v, bias-corrected
            s["v_max"] = np.maximum(s.get("v_max", 0), s["v"])
        m_hat = s["m"] / (1 - b1**t)
        v_hat = s["v_max" if amsgrad else "v"] / (1 - b2**t)
        return p - lr * m_hat / (np.sqrt(v_hat) + eps)

    return step


def reference_rmsprop(
    lr: float, alpha: float = 0.99, eps: float = 1e-8, momentum: float = 0.0, centered: bool = False
) -> Callable[..., Any]:
    def step(p: np.ndarray, g: np.ndarray, s: dict[str, Any], t: int) -> np.ndarray:
        s["sq"] = alpha * s.get("sq", 0) + (1 - alpha) * g * g
        if centered:
            s["avg"] = alpha * s.get("avg", 0) + (1 - alpha) * g
            denom = np.sqrt(s["sq"] - s["avg"] ** 2) + eps
        else:
            denom = np.sqrt(s["sq"]) + eps
        if momentum:
            s["b"] = momentum * s.get("b", 0) + g / denom
            return p - lr * s["b"]
        return p - lr * g / denom

    return step


def reference_adagrad(
    lr: float, lr_decay: float = 0.0, wd: float = 0.0, initial: float = 0.0, eps: float = 1e-10
) -> Callable[..., Any]:
    def step(p: np.ndarray, g: np.ndarray, s: dict[str, Any], t: int) -> np.ndarray:
        p, g = _decay(p, g, lr, wd, False)
        s["sum"] = s.get("sum", initial) + g * g
        return p - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(s["sum"]) + eps)

    return step


def reference_adadelta(lr: float, rho: float = 0.9, eps: float = 1e-6, wd: float = 0.0) -> Callable[..., Any]:
    def step(p: np.ndarray, g: np.ndarray, s: dict[str, Any], t: int) -> np.ndarray:
        p, g = _decay(p, g, lr, wd, False)
        s["sq"] = rho * s.get("sq", 0) + (1 - rho) * g * g
        delta = np.sqrt(s.get("u", 0) + eps) / np.sqrt(s["sq"] + eps) * g
        s["u"] = rho * s.get("u", 0) + (1 - rho) * delta * delta
        return p - lr * delta

    return step


@dataclass(frozen=True)
class OptCase:
    name: str
    make: Callable[[Any, float], Any]  # (model, lr) -> optimizer
    reference: Callable[[float], Callable[..., Any]]  # lr -> one reference step
    trajectory_lr: float  # small enough not to diverge on Rosenbrock
    fit_lr: float  # converges on the parabola within 600 steps


OPTIMIZERS = [
    OptCase("sgd", lambda m, lr: sg.optim.Sgd(m, lr=lr), lambda lr: reference_sgd(lr), 1e-3, 0.05),
    OptCase(
        "sgd_momentum",
        lambda m, lr: sg.optim.Sgd(m, lr=lr, momentum=0.9),
        lambda lr: reference_sgd(lr, 0.9),
        1e-3,
        0.02,
    ),
    OptCase(
        "sgd_nesterov_l2",
        lambda m, lr: sg.optim.Sgd(m, lr=lr, momentum=0.9, nesterov=True, weight_decay=0.1),
        lambda lr: reference_sgd(lr, 0.9, True, 0.1),
        1e-3,
        0.02,
    ),
    OptCase(
        "sgd_decoupled",
        lambda m, lr: sg.optim.Sgd(m, lr=lr, weight_decay=0.1, decoupled_weight_decay=True),
        lambda lr: reference_sgd(lr, wd=0.1, decoupled=True),
        1e-3,
        0.05,
    ),
    OptCase("adam", lambda m, lr: sg.optim.Adam(m, lr=lr), lambda lr: reference_adam(lr), 0.05, 0.05),
    OptCase(
        "adam_l2",
        lambda m, lr: sg.optim.Adam(m, lr=lr, weight_decay=0.1),
        lambda lr: reference_adam(lr, wd=0.1),
        0.05,
        0.05,
    ),
    OptCase(
        "adamw",
        lambda m, lr: sg.optim.AdamW(m, lr=lr, weight_decay=0.1),
        lambda lr: reference_adam(lr, wd=0.1, decoupled=True),
        0.05,
        0.05,
    ),
    OptCase(
        "adam_amsgrad",
        lambda m, lr: sg.optim.Adam(m, lr=lr, betas=(0.9, 0.5), amsgrad=True),
        lambda lr: reference_adam(lr, b2=0.5, amsgrad=True),
        0.05,
        0.05,
    ),
    OptCase(
        "adamw_amsgrad",
        lambda m, lr: sg.optim.AdamW(m, lr=lr, weight_decay=0.1, betas=(0.9, 0.5), amsgrad=True),
        lambda lr: reference_adam(lr, b2=0.5, wd=0.1, decoupled=True, amsgrad=True),
        0.05,
        0.05,
    ),
    OptCase("rmsprop", lambda m, lr: sg.optim.RMSprop(m, lr=lr), lambda lr: reference_rmsprop(lr), 0.01, 0.01),
    OptCase(
        "rmsprop_centered_momentum",
        lambda m, lr: sg.optim.RMSprop(m, lr=lr, momentum=0.5, centered=True),
        lambda lr: reference_rmsprop(lr, momentum=0.5, centered=True),
        0.01,
        0.01,
    ),
    OptCase("adagrad", lambda m, lr: sg.optim.Adagrad(m, lr=lr), lambda lr: reference_adagrad(lr), 0.05, 0.5),
    OptCase(
        "adagrad_decay_l2_initial",
        lambda m, lr: sg.optim.Adagrad(m, lr=lr, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.5),
        lambda lr: reference_adagrad(lr, 0.01, 0.1, 0.5),
        0.05,
        0.5,
    ),
    OptCase("adadelta", lambda m, lr: sg.optim.Adadelta(m, lr=lr), lambda lr: reference_adadelta(lr), 1.0, 1.0),
    OptCase(
        "adadelta_l2",
        lambda m, lr: sg.optim.Adadelta(m, lr=lr, rho=0.8, weight_decay=0.1),
        lambda lr: reference_adadelta(lr, 0.8, wd=0.1),
        1.0,
        1.0,
    ),
]


def rosenbrock(xy: Any) -> Any:
    x, y = xy[0], xy[1]
    return (1.0 - x) ** 2 + 100.0 * (y - x * x) ** 2


def parabola(xy: Any) -> Any:
    return (xy * xy * sg.tensor(np.array([1.0, 10.0]))).sum()


def _grad_rosenbrock(p: np.ndarray) -> np.ndarray:
    x, y = p
    return np.array([-2 * (1 - x) - 400 * x * (y - x * x), 200 * (y - x * x)])


def run(case: OptCase, loss_fn: Callable[[Any], Any], start: list[float], steps: int, lr: float) -> list[np.ndarray]:
    model = Point(start)
    opt = case.make(model, lr)
    grads = model.alloc_grads()
    path = []
    for _ in range(steps):
        grads.zero()
        loss_fn(model.xy.trace(grads)).backward()
        opt.update(model, grads)
        path.append(model.xy.numpy().copy())
    return path


@pytest.mark.parametrize("case", OPTIMIZERS, ids=[c.name for c in OPTIMIZERS])
def test_trajectory_follows_the_published_formula(case: OptCase, backend: str) -> None:
    found = run(case, rosenbrock, [-1.0, 1.5], 20, case.trajectory_lr)
    p = np.array([-1.0, 1.5])
    state: dict[str, Any] = {}
    reference = case.reference(case.trajectory_lr)
    for t in range(1, 21):
        p = reference(p, _grad_rosenbrock(p), state, t)
        np.testing.assert_allclose(found[t - 1], p, rtol=1e-10, atol=1e-12, err_msg=f"step {t}")


@pytest.mark.parametrize("case", OPTIMIZERS, ids=[c.name for c in OPTIMIZERS])
def test_converges_on_a_parabola(case: OptCase, numpy_backend: str) -> None:
    path = run(case, parabola, [1.0, -1.0], 600, case.fit_lr)
    assert np.abs(path[-1]).max() < 0.05, path[-1]


@pytest.mark.parametrize("name", ["adam", "sgd_momentum"])
def test_makes_progress_on_rosenbrock(name: str, numpy_backend: str) -> None:
    case = next(c for c in OPTIMIZERS if c.name == name)
    start = np.array([-1.0, 1.5])
    path = run(case, rosenbrock, list(start), 2000, case.trajectory_lr)
    final = path[-1]
    assert np.linalg.norm(final - 1.0) < 0.5 * np.linalg.norm(start - 1.0)


# --------------------------------------------------------------------------- the contract
class TwoLayers(nn.Module):
    def __init__(self) -> None:
        self.used = nn.Linear[L[3], L[2]](generator=sg.Generator(0))
        self.unused = nn.Linear[L[3], L[2]](generator=sg.Generator(1))

    def __call__(self, x: Any) -> Any:
        return self.used(x)


def snapshot(model: nn.Module) -> dict[str, np.ndarray]:
    return {n: t.numpy().copy() for n, t in model.named_parameters()}


def assert_unchanged(model: nn.Module, before: dict[str, np.ndarray]) -> None:
    for name, value in snapshot(model).items():
        np.testing.assert_array_equal(value, before[name], err_msg=name)


def _backward(model: TwoLayers, grads: Any) -> None:
    model(sg.ones(4, 3).trace(grads)).sum().backward()


@pytest.mark.parametrize("case", OPTIMIZERS, ids=[c.name for c in OPTIMIZERS])
def test_unused_parameter_is_named_and_nothing_changes(case: OptCase, numpy_backend: str) -> None:
    model = TwoLayers()
    opt = case.make(model, case.trajectory_lr)
    grads = model.alloc_grads()
    _backward(model, grads)
    before = snapshot(model)
    with pytest.raises(sg.UnusedParameterError, match=r"'unused\.weight', 'unused\.bias'") as info:
        opt.update(model, grads)
    assert info.value.paths == ("unused.weight", "unused.bias")
    assert_unchanged(model, before)


def test_preallocated_buffers_do_not_hide_an_unused_parameter(numpy_backend: str) -> None:
    model = TwoLayers()
    opt = sg.optim.Adam(model, unused="ignore")
    grads = model.alloc_grads()
    # A first step in which both layers take part fills both buffers...
    (model.used(sg.ones(2, 3).trace(grads)) + model.unused(sg.ones(2, 3).trace(grads))).sum().backward()
    opt.update(model, grads)
    # ...then a step without the second layer must not move it with stale buffers.
    strict = sg.optim.Adam(model)
    grads.zero()
    _backward(model, grads)
    with pytest.raises(sg.UnusedParameterError):
        strict.update(model, grads)
    before = snapshot(model)
    opt.update(model, grads)
    after = snapshot(model)
    np.testing.assert_array_equal(after["unused.weight"], before["unused.weight"])
    assert not np.array_equal(after["used.weight"], before["used.weight"])


def test_unused_warn_warns_and_updates_the_rest(numpy_backend: str) -> None:
    model = TwoLayers()
    opt = sg.optim.Sgd(model, lr=0.1, unused="warn")
    grads = model.alloc_grads()
    _backward(model, grads)
    before = snapshot(model)
    with pytest.warns(RuntimeWarning, match="unused.weight"):
        opt.update(model, grads)
    after = snapshot(model)
    np.testing.assert_array_equal(after["unused.bias"], before["unused.bias"])
    assert not np.array_equal(after["used.bias"], before["used.bias"])


def test_frozen_parameters_are_neither_updated_nor_reported(numpy_backend: str) -> None:
    model = TwoLayers().freeze("unused")
    opt = sg.optim.Adam(model)
    grads = model.alloc_grads()
    _backward(model, grads)
    before = snapshot(model)
    opt.update(model, grads)
    np.testing.assert_array_equal(snapshot(model)["unused.weight"], before["unused.weight"])


@pytest.mark.parametrize("other", ["copy", "another_instance", "free"])
def test_gradients_of_another_model_are_refused(other: str, numpy_backend: str) -> None:
    model = TwoLayers()
    opt = sg.optim.Adam(model, unused="ignore")
    source = {"copy": copy.deepcopy(model), "another_instance": TwoLayers(), "free": None}[other]
    grads = sg.Gradients() if source is None else source.alloc_grads()
    if source is not None:
        _backward(source, grads)
    before = snapshot(model)
    with pytest.raises(sg.GradientsMismatchError, match="allocated by this model"):
        opt.update(model, grads)
    assert_unchanged(model, before)


def test_a_copied_model_never_feeds_the_original(numpy_backend: str) -> None:
    model = TwoLayers()
    clone = copy.deepcopy(model)
    grads = model.alloc_grads()
    clone(sg.ones(1, 3).trace(grads)).sum().backward()
    assert grads.received() == []


def test_optimizer_for_another_model_is_refused(numpy_backend: str) -> None:
    a, b = TwoLayers(), TwoLayers()
    opt = sg.optim.Sgd(a, lr=0.1)
    grads = b.alloc_grads()
    _backward(b, grads)
    with pytest.raises(sg.GradientsMismatchError, match="built for another model"):
        opt.update(b, grads)


def test_a_model_changed_after_alloc_grads_is_refused(numpy_backend: str) -> None:
    model = TwoLayers()
    opt = sg.optim.Sgd(model, lr=0.1, unused="ignore")
    grads = model.alloc_grads()
    model.used = nn.Linear[L[3], L[2]]()
    _backward(model, grads)
    with pytest.raises(sg.GradientsMismatchError, match="changed since"):
        opt.update(model, grads)


def test_global_norm_clipping(numpy_backend: str) -> None:
    model = Point([3.0, 4.0])
    grads = model.alloc_grads()
    (model.xy.trace(grads) * model.xy.trace(grads)).sum().backward()  # gradient (6, 8), norm 10
    norm = sg.optim.clip_grad_norm(grads, 1.0)
    assert norm == pytest.approx(10.0)
    np.testing.assert_allclose(grads[model.xy].numpy(), [0.6, 0.8], rtol=1e-5)


def test_schedules() -> None:
    s = sg.optim.schedules
    assert s.step(1.0, 10, 0.5)(25) == 0.25
    cos = s.cosine(1.0, 100, 0.1)
    assert cos(0) == 1.0 and cos(100) == pytest.approx(0.1) and cos(50) == pytest.approx(0.55)
    warm = s.warmup(1.0, 4)
    assert [warm(t) for t in range(6)] == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]


def test_cosine_follows_cosine_annealing_lr_then_stays_at_its_floor() -> None:
    """The docstring said "as CosineAnnealingLR", whose rate rises again past T_max (attack
    round 14): the same rates up to total_steps, then min_lr, as it now says."""
    torch = pytest.importorskip("torch")
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=1.0)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10, eta_min=0.1)
    theirs = []
    for _ in range(15):
        theirs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    ours = sg.optim.schedules.cosine(1.0, 10, 0.1)
    np.testing.assert_allclose([ours(t) for t in range(11)], theirs[:11], rtol=1e-12)
    assert [ours(t) for t in range(11, 15)] == [0.1] * 4 and theirs[14] > 0.2


def test_optimizer_uses_a_schedule(numpy_backend: str) -> None:
    model = Point([1.0, 1.0])
    opt = sg.optim.Sgd(model, lr=sg.optim.schedules.step(0.1, 1, 0.5))
    grads = model.alloc_grads()
    for _ in range(2):
        grads.zero()
        model.xy.trace(grads).sum().backward()
        opt.update(model, grads)
    np.testing.assert_allclose(model.xy.numpy(), [1 - 0.1 - 0.05] * 2)


def test_a_model_with_two_inputs_and_two_outputs_trains_without_threading(numpy_backend: str) -> None:
    class TwoHeads(nn.Module):
        def __init__(self) -> None:
            self.image = nn.Linear[L[4], L[3]](generator=sg.Generator(0))
            self.text = nn.Linear[L[2], L[3]](generator=sg.Generator(1))
            self.classify = nn.Linear[L[3], L[2]](generator=sg.Generator(2))
            self.regress = nn.Linear[L[3], L[1]](generator=sg.Generator(3))

        def __call__(self, image: Any, text: Any) -> tuple[Any, Any]:
            joint = (self.image(image) + self.text(text)).tanh()
            return self.classify(joint), self.regress(joint)

    model = TwoHeads()
    grads = model.alloc_grads()
    opt = sg.optim.Adam(model, lr=0.05)
    rng = np.random.default_rng(0)
    image, text = (sg.tensor(rng.standard_normal(s), dtype="float32") for s in ((16, 4), (16, 2)))
    labels, targets = sg.tensor(rng.integers(0, 2, 16)), sg.tensor(rng.standard_normal((16, 1)))
    first = last = 0.0
    for step in range(60):
        grads.zero()
        logits, values = model(image.trace(grads), text.trace(grads))
        ce, mse = sg.losses.cross_entropy(logits, labels), sg.losses.mse(values, targets)
        sg.backward(ce, mse)  # one pass over both outputs; no parameter is missed
        opt.update(model, grads)
        total = ce.item() + mse.item()
        first = total if step == 0 else first
        last = total
    assert sorted(grads.received()) == sorted(p for p, _ in model.named_parameters())
    assert last < 0.5 * first


# --------------------------------------------------------------------------- parameter groups
def test_a_group_overriding_an_unknown_setting_names_it_and_the_settings(numpy_backend: str) -> None:
    """issue #25: Adam has no momentum: the group, the setting and Adam's settings are named."""
    with pytest.raises(
        sg.HyperparameterError,
        match=r"group 0 Group\(select='\*\.bias', momentum=0\.9\) overrides 'momentum', which is no setting of Adam; "
        r"expected one of lr, betas, eps, weight_decay",
    ):
        sg.optim.Adam(TwoLayers(), groups=[sg.optim.Group("*.bias", momentum=0.9)])


def test_a_group_that_selects_nothing_is_named(numpy_backend: str) -> None:
    """issue #25: a glob that matches no trainable parameter (a typo, a frozen layer) is refused."""
    model = TwoLayers()
    model.freeze("unused")
    with pytest.raises(
        sg.HyperparameterError, match=r"group 1 Group\(select='unused\.\*', lr=0\.1\) selects no trainable"
    ):
        sg.optim.Sgd(model, groups=[sg.optim.Group("*.bias", lr=0.0), sg.optim.Group("unused.*", lr=0.1)])
    with pytest.raises(
        sg.HyperparameterError, match=r"group 1 .* selects only parameters an earlier group already holds"
    ):
        sg.optim.Sgd(model, groups=[sg.optim.Group("used.*"), sg.optim.Group("used.bias", lr=0.1)])


def test_group_settings_are_validated_like_the_optimizer_s(numpy_backend: str) -> None:
    """issue #25: a group's values are checked at construction, as the optimizer's are."""
    with pytest.raises(sg.HyperparameterError, match=r"expected betas\[0\] in \[0, 1\), found 1\.5"):
        sg.optim.Adam(TwoLayers(), groups=[sg.optim.Group("*", betas=(1.5, 0.9))])
    with pytest.raises(sg.HyperparameterError, match="expected lr >= 0, found -1"):
        sg.optim.Adagrad(TwoLayers(), groups=[sg.optim.Group("*", lr=-1)])
    with pytest.raises(sg.HyperparameterError, match="glob over dotted paths or a function"):
        sg.optim.Group(3)  # pyright: ignore[reportArgumentType] -- the refusal under test


def test_maximize_ascends_leaves_the_gradients_and_may_be_a_group_s(numpy_backend: str) -> None:
    """maximize=True (PyTorch's): p ← p + lr·g for Sgd; the gradients are read, not negated in
    place; a Group may set it for its parameters alone; it must be a bool."""
    model = TwoLayers()
    grads = model.alloc_grads()
    opt = sg.optim.Sgd(model, lr=0.1, unused="ignore", groups=[sg.optim.Group("*.bias", maximize=True)])
    used = [(path, p) for path, p in model.named_parameters() if path.startswith("used.")]
    before = {path: p.numpy().copy() for path, p in used}
    model(sg.ones(2, 3).trace(grads)).sum().backward()
    given = {path: grads[p].numpy().copy() for path, p in used}
    opt.update(model, grads)
    for path, p in used:
        sign = 1.0 if path.endswith("bias") else -1.0
        np.testing.assert_allclose(p.numpy(), before[path] + sign * 0.1 * given[path], rtol=1e-6)
        np.testing.assert_array_equal(grads[p].numpy(), given[path])
    with pytest.raises(sg.HyperparameterError, match="expected maximize a bool, found 1"):
        sg.optim.Adam(TwoLayers(), maximize=1)  # pyright: ignore[reportArgumentType] -- the refusal under test


def test_maximize_of_a_float16_parameter_ascends(numpy_backend: str) -> None:
    """The float32 update of a float16 parameter negates the widened gradient."""
    model = TwoLayers().to(dtype="float16")
    grads = model.alloc_grads()
    before = model.used.weight.numpy().astype(np.float32)
    model(sg.ones(2, 3, dtype="float16").trace(grads)).sum().backward()
    step = grads[model.used.weight].numpy().astype(np.float32)
    sg.optim.Sgd(model, lr=0.01, maximize=True, unused="ignore").update(model, grads)
    np.testing.assert_allclose(model.used.weight.numpy().astype(np.float32), before + 0.01 * step, rtol=2e-3)


def test_the_first_group_that_selects_a_parameter_wins(numpy_backend: str) -> None:
    """issue #25 (documented on Group): used.bias is in both groups and takes the first's lr=0."""
    model = TwoLayers()
    model.freeze("unused")
    opt = sg.optim.Sgd(model, lr=0.5, groups=[sg.optim.Group("*.bias", lr=0.0), sg.optim.Group("used.*", lr=0.1)])
    grads = model.alloc_grads()
    before = snapshot(model)
    model(sg.ones(4, 3).trace(grads)).sum().backward()
    opt.update(model, grads)
    after = snapshot(model)
    np.testing.assert_array_equal(after["used.bias"], before["used.bias"])
    np.testing.assert_allclose(after["used.weight"], before["used.weight"] - 0.1 * grads[model.used.weight].numpy())


def test_a_group_s_schedule_is_called_with_the_step(numpy_backend: str) -> None:
    """issue #25: a group's lr may be a schedule, as the optimizer's."""
    model = Point([1.0, 2.0])
    opt = sg.optim.Sgd(model, lr=99.0, groups=[sg.optim.Group("xy", lr=lambda step: 0.1 * (step + 1))])
    grads = model.alloc_grads()
    for _ in range(2):
        grads.zero()
        (model.xy.trace(grads) * 1.0).sum().backward()
        opt.update(model, grads)
    np.testing.assert_allclose(model.xy.numpy(), [1.0 - 0.1 - 0.2, 2.0 - 0.1 - 0.2])


def test_a_group_selects_a_tied_weight_by_any_of_its_paths(numpy_backend: str) -> None:
    """Group("b.*") left b.weight out when it is a.weight (its first path), silently; a
    function selector is asked with each path."""

    class Tied(nn.Module, checked=False):
        def __init__(self) -> None:
            self.a = nn.Linear[L[3], L[3]]()
            self.b = nn.Linear[L[3], L[3]]()
            self.b.weight = self.a.weight

        def __call__(self, x: Any) -> Any:
            return self.b(self.a(x).tanh())

    for select in ("b.*", lambda path, p: path.startswith("b.")):
        model = Tied()
        opt = sg.optim.Sgd(model, lr=0.5, groups=[sg.optim.Group(select, lr=0.0)])
        grads = model.alloc_grads()
        before = snapshot(model)
        model(sg.ones(4, 3).trace(grads)).sum().backward()
        opt.update(model, grads)
        after = snapshot(model)
        for path in ("a.weight", "b.bias"):
            np.testing.assert_array_equal(after[path], before[path])
        assert not np.array_equal(after["a.bias"], before["a.bias"])
