"""sg.compile: a replayed step gives what the eager step gives, or the step runs eagerly."""

from __future__ import annotations

import collections
import copy
import dataclasses
import types
import warnings
from collections.abc import Callable
from typing import Any, Literal as L, NamedTuple

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import nn

RTOL = 1e-6


@pytest.fixture(autouse=True)
def _records_on_numpy(numpy_backend: str) -> None:
    """sg.compile records on the NumPy backend only (any other runs eagerly, tested below by
    name): every test here builds on NumPy, also in the suite's emulated-CuPy default run."""


# --------------------------------------------------------------------------- models
class MLP(nn.Module):
    def __init__(self, generator: sg.Generator, dropout: float = 0.0) -> None:
        self.l1 = nn.Linear[L[8], L[16]](generator=generator)
        self.l2 = nn.Linear[L[16], L[3]](generator=generator)
        self.drop = nn.Dropout(dropout, generator=sg.Generator(7)) if dropout else None

    def __call__(self, x: Any) -> Any:
        h = self.l1(x).relu()
        if self.drop is not None:
            h = self.drop(h)
        return self.l2(h)


class SmallCNN(nn.Module):
    def __init__(self, generator: sg.Generator) -> None:
        self.conv1 = nn.Conv2d[L[3], L[4]](kernel_size=3, padding=1, generator=generator)
        self.norm = nn.BatchNorm2d[L[4]]()
        self.conv2 = nn.Conv2d[L[4], L[6]](kernel_size=3, padding=1, generator=generator)
        self.pool = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.head = nn.Linear[L[24], L[3]](generator=generator)

    def __call__(self, x: Any) -> Any:
        h = self.pool(self.norm(self.conv1(x)).relu())
        h = self.pool(self.conv2(h).relu())
        return self.head(self.flatten(h))


class GRUNet(nn.Module):
    """A GRU layer (the recurrent kernels) and a hand-written cell (many small ops)."""

    def __init__(self, generator: sg.Generator) -> None:
        self.gru = nn.GRU[L[5], L[6]](generator=generator)
        self.x_gates = nn.Linear[L[5], L[18]](generator=generator)
        self.h_gates = nn.Linear[L[6], L[18]](generator=generator)
        self.head = nn.Linear[L[12], L[3]](generator=generator)

    def __call__(self, xs: Any) -> Any:
        out, _ = self.gru(xs)
        n = 6
        h: Any = sg.zeros(xs.shape[0], n)
        for t in range(xs.shape[1]):
            gx, gh = self.x_gates(xs[:, t]), self.h_gates(h)
            r = (gx[:, :n] + gh[:, :n]).sigmoid()
            z = (gx[:, n : 2 * n] + gh[:, n : 2 * n]).sigmoid()
            candidate = (gx[:, 2 * n :] + r * gh[:, 2 * n :]).tanh()
            h = (1.0 - z) * candidate + z * h
        return self.head(sg.concat([out[:, -1], h], axis=-1))


def _data(shape: tuple[int, ...], classes: int = 3, seed: int = 0) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    x = sg.tensor(rng.standard_normal(shape).astype(np.float32))
    return x, sg.tensor(rng.integers(0, classes, shape[0]))


def _trainer(model: Any, opt: Any, grads: Any) -> Callable[[Any, Any], Any]:
    def step(x: Any, y: Any) -> Any:
        grads.zero()
        loss = sg.losses.cross_entropy(model(x.trace(grads)), y)
        loss.backward()
        opt.update(model, grads)
        return loss

    return step


def _weights(model: Any) -> list[np.ndarray]:
    return [t.numpy().copy() for _, t in model.named_parameters()]


def _assert_same_weights(ours: Any, theirs: Any) -> None:
    """The compiled twin's state (parameters and buffers) equals the eager twin's, bit for bit."""
    twin = theirs.state_dict()
    for name, value in ours.state_dict().items():
        np.testing.assert_array_equal(value, twin[name])


def _compare(build: Callable[[], Any], x: Any, y: Any, steps: int = 50, **adam: Any) -> Any:
    """Eager and compiled training from the same initialisation: the same losses and weights."""
    runs = []
    for compiled in (False, True):
        model = build()
        opt, grads = sg.optim.Adam(model, **adam), model.alloc_grads()
        step = _trainer(model, opt, grads)
        run = sg.compile(step) if compiled else step
        losses = [run(x, y).item() for _ in range(steps)]
        runs.append((losses, _weights(model), run))
    (eager_losses, eager_weights, _), (losses, weights, compiled_step) = runs
    np.testing.assert_allclose(losses, eager_losses, rtol=RTOL)
    for mine, theirs in zip(weights, eager_weights, strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=RTOL, atol=1e-7)
    return compiled_step


# --------------------------------------------------------------------------- equal to eager
def test_mlp_with_adam_replays_and_equals_eager() -> None:
    x, y = _data((5, 8))
    compiled = _compare(lambda: MLP(sg.Generator(0)), x, y)
    assert compiled.eager_reason is None
    (recording,) = compiled.recordings
    assert recording.replays == 49 and recording.host_calls == 1 and recording.operations > 10


def test_small_cnn_with_batch_norm_equals_eager() -> None:
    x, y = _data((4, 3, 8, 8))
    models: list[Any] = []

    def build() -> Any:
        models.append(SmallCNN(sg.Generator(1)))
        return models[-1]

    compiled = _compare(build, x, y)
    assert compiled.recordings[0].replays == 49
    eager, replayed = models
    # the running statistics are updated by every replay as by every eager step
    np.testing.assert_allclose(replayed.norm.running_mean.numpy(), eager.norm.running_mean.numpy(), rtol=RTOL)
    np.testing.assert_allclose(replayed.norm.running_var.numpy(), eager.norm.running_var.numpy(), rtol=RTOL)


def test_gru_step_equals_eager() -> None:
    x, y = _data((3, 4, 5))
    compiled = _compare(lambda: GRUNet(sg.Generator(2)), x, y)
    assert compiled.recordings[0].replays == 49


def test_the_gate_gradients_of_a_hand_written_gru_are_written_slice_by_slice() -> None:
    x, y = _data((3, 4, 5))
    compiled = _compare(lambda: GRUNet(sg.Generator(2)), x, y)
    (recording,) = compiled.recordings
    # per time step, the three gates' gradients into gx and into gh: two sums each
    assert recording.scattered_operations >= 4 * 4, recording


@pytest.mark.usefixtures("direct_products")  # else BLAS's swapped call reads the weight untransposed
def test_the_recurrent_weight_of_a_long_gru_step_is_transposed_once() -> None:
    x, y = _data((32, 10, 5))
    compiled = _compare(lambda: GRUNet(sg.Generator(2)), x, y, steps=10)
    (recording,) = compiled.recordings
    # the hand-written cell's h_gates weight, in each time step's input gradient but the first's
    assert recording.transposed_once == 9, recording


def test_forward_only_function_follows_its_inputs() -> None:
    model = MLP(sg.Generator(3))
    forward = sg.compile(lambda x: model(x))
    for seed in range(4):
        x, _ = _data((5, 8), seed=seed)
        out = forward(x)
        np.testing.assert_allclose(out.numpy(), model(x).numpy(), rtol=RTOL)
        assert not out.traced
    assert forward.recordings[0].replays == 3


def test_replayed_results_are_not_overwritten_by_the_next_replay() -> None:
    model = MLP(sg.Generator(3))
    forward = sg.compile(lambda x: model(x) * 2.0)
    a, _ = _data((5, 8), seed=1)
    b, _ = _data((5, 8), seed=2)
    forward(a)
    first = forward(a)
    kept = first.numpy().copy()
    forward(b)
    np.testing.assert_array_equal(first.numpy(), kept)


def test_weights_changed_between_calls_are_read_by_the_replay() -> None:
    model = MLP(sg.Generator(3))
    forward = sg.compile(lambda x: model(x))
    x, _ = _data((5, 8))
    forward(x)
    forward(x)
    model.l2.bias[...] = 1.0  # written in place outside the step
    np.testing.assert_allclose(forward(x).numpy(), model(x).numpy(), rtol=RTOL)


def test_dropout_draws_fresh_numbers_as_eager_does() -> None:
    x, y = _data((6, 8))
    compiled = _compare(lambda: MLP(sg.Generator(4), dropout=0.5), x, y, steps=20)
    assert compiled.recordings[0].replays == 19


def test_dropout_generator_advances_as_in_eager() -> None:
    model = MLP(sg.Generator(4), dropout=0.5)
    forward = sg.compile(lambda x: model(x))
    x, _ = _data((6, 8))
    outs = [forward(x).numpy() for _ in range(3)]
    assert not np.allclose(outs[1], outs[2])  # a replay draws a new mask
    twin = MLP(sg.Generator(4), dropout=0.5)
    np.testing.assert_allclose(outs, [twin(x).numpy() for _ in range(3)], rtol=RTOL)


@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial_sampling_replays_with_eager_draws(replacement: bool) -> None:
    """A decoding step that samples its next token (softmax, then sg.multinomial from a
    generator) replays, drawing on from the generator as eager does: multinomial read the
    probabilities in Python, and the step ran eagerly with the warning. Its checks still
    raise at a replay."""
    model = MLP(sg.Generator(4))

    def sample(gen: sg.Generator) -> Callable[[Any], Any]:
        return lambda x: sg.multinomial(sg.softmax(model(x), axis=-1), 2, replacement, generator=gen)

    step, eager = sg.compile(sample(sg.Generator(9))), sample(sg.Generator(9))
    x, _ = _data((6, 8))
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        drawn = [step(x).numpy() for _ in range(12)]
    assert step.eager_reason is None and step.recordings[0].replays == 11
    assert len({d.tobytes() for d in drawn}) > 1  # fresh draws at every replay
    np.testing.assert_array_equal(drawn, [eager(x).numpy() for _ in range(12)])
    with warnings.catch_warnings(), pytest.raises(sg.HyperparameterError, match="finite, non-negative"):
        warnings.simplefilter("ignore", RuntimeWarning)  # NaN through the layers
        step(x * float("nan"))  # the signature recorded: a replay checks
    assert step.recordings[0].replays == 12


# --------------------------------------------------------------------------- optimizer settings
def test_learning_rate_schedule_and_changed_lr_take_effect() -> None:
    x, y = _data((5, 8))
    _compare(lambda: MLP(sg.Generator(0)), x, y, steps=20, lr=lambda step: 0.05 * 0.8**step)
    runs = []
    for compiled in (False, True):
        model = MLP(sg.Generator(0))
        opt, grads = sg.optim.Adam(model, lr=0.01), model.alloc_grads()
        step = _trainer(model, opt, grads)
        run = sg.compile(step) if compiled else step
        losses = []
        for i in range(12):
            opt.lr = 0.01 if i < 6 else 0.2  # read at each replay (the update is a host call)
            losses.append(run(x, y).item())
        runs.append(losses)
    np.testing.assert_allclose(runs[1], runs[0], rtol=RTOL)


def test_gradient_clipping_works_above_and_below_the_norm() -> None:
    x, y = _data((5, 8))
    for clip in (1e-3, 1e3):
        _compare(lambda: MLP(sg.Generator(0)), x, y, steps=10, clip_norm=clip)


def test_sgd_with_momentum_equals_eager() -> None:
    x, y = _data((5, 8))
    runs = []
    for compiled in (False, True):
        model = MLP(sg.Generator(0))
        opt, grads = sg.optim.Sgd(model, lr=0.1, momentum=0.9), model.alloc_grads()
        step = _trainer(model, opt, grads)
        run = sg.compile(step) if compiled else step
        runs.append([run(x, y).item() for _ in range(10)])
    np.testing.assert_allclose(runs[1], runs[0], rtol=RTOL)


# --------------------------------------------------------------------------- value-dependent code
READS: dict[str, Callable[[Any], Any]] = {
    "item": lambda loss: loss.item() > 1.0,
    "float": lambda loss: float(loss) > 1.0,
    "bool": lambda loss: bool(loss > 1.0),
    "if": lambda loss: 1 if loss > 1.0 else 0,
    "tolist": lambda loss: loss.tolist(),
    "numpy": lambda loss: loss.numpy(),
}


def _reading_step(model: Any, read: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    opt, grads = sg.optim.Adam(model, lr=0.05), model.alloc_grads()

    def step(x: Any, y: Any) -> Any:
        grads.zero()
        loss = sg.losses.cross_entropy(model(x.trace(grads)), y)
        loss.backward()
        if read(loss):  # the step's control flow depends on the loss
            opt.update(model, grads)
        return loss

    return step


@pytest.mark.parametrize("read", sorted(READS))
def test_value_dependent_step_runs_eagerly_with_one_warning(read: str) -> None:
    x, y = _data((5, 8))
    runs = []
    for compiled in (False, True):
        model = MLP(sg.Generator(0))
        step = _reading_step(model, READS[read])
        run = sg.compile(step) if compiled else step
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            losses = [run(x, y).item() for _ in range(8)]
        if compiled:
            assert [w.category for w in caught] == [sg.CompileWarning]
            assert "runs eagerly" in str(caught[0].message)
            assert run.eager_reason is not None and run.recordings == []
        runs.append((losses, _weights(model)))
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=RTOL)
    for mine, theirs in zip(runs[1][1], runs[0][1], strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=RTOL)


def test_ignored_labels_in_a_later_call_record_again() -> None:
    # cross_entropy asks whether a label is ignore_index: a guard on the inputs, asked before
    # each replay
    model = MLP(sg.Generator(0))
    forward = sg.compile(lambda x, y: sg.losses.cross_entropy(model(x), y))
    x, y = _data((5, 8))
    ignored = sg.tensor(np.array([0, -100, 1, 2, -100]))
    for labels in (y, y, ignored, ignored, y):
        np.testing.assert_allclose(forward(x, labels).item(), sg.losses.cross_entropy(model(x), labels).item())
    assert [r.replays for r in forward.recordings] == [1, 2]  # least recently used first


def test_label_range_check_still_raises_at_replay() -> None:
    model = MLP(sg.Generator(0))
    forward = sg.compile(lambda x, y: sg.losses.cross_entropy(model(x), y))
    x, y = _data((5, 8))
    forward(x, y)
    forward(x, y)
    with pytest.raises(sg.ShapeError, match="labels must lie in"):
        forward(x, sg.tensor(np.array([0, 1, 2, 3, 0])))


# --------------------------------------------------------------------------- signatures
def test_new_signature_records_again_and_the_cache_is_bounded() -> None:
    model = MLP(sg.Generator(0))
    forward = sg.compile(lambda x: model(x), max_recordings=2)
    for batch in (2, 3, 2, 4, 4):
        x, _ = _data((batch, 8))
        np.testing.assert_allclose(forward(x).numpy(), model(x).numpy(), rtol=RTOL)
    # 2 and 3 recorded, 2 replayed, 4 recorded (3's recording, the least recently used,
    # dropped), 4 replayed
    assert [(r.signature[0][0][1], r.replays) for r in forward.recordings] == [((2, 8), 1), ((4, 8), 1)]


def test_train_and_eval_modes_are_recorded_apart() -> None:
    model = MLP(sg.Generator(4), dropout=0.5)
    forward = sg.compile(lambda x: model(x))
    x, _ = _data((6, 8))
    forward(x)
    model.eval()
    np.testing.assert_allclose(forward(x).numpy(), model(x).numpy(), rtol=RTOL)
    np.testing.assert_allclose(forward(x).numpy(), model(x).numpy(), rtol=RTOL)
    assert len(forward.recordings) == 2


class _Holder(nn.Module):
    """Modules in the places a user replaces them: an attribute, a list, a dict; a number
    read by Python; a dropout that the mode switches."""

    def __init__(self) -> None:
        self.head = nn.Linear[L[8], L[3]](generator=sg.Generator(0))
        self.blocks = [nn.Linear[L[8], L[8]](generator=sg.Generator(1))]
        self.extra = {"out": nn.Linear[L[3], L[3]](generator=sg.Generator(2))}
        self.drop = nn.Dropout(0.5, generator=sg.Generator(3))
        self.scale = 1.0

    def __call__(self, x: Any) -> Any:
        for block in self.blocks:
            x = block(x).relu()
        return self.extra["out"](self.drop(self.head(x))) * self.scale


def _replace(model: _Holder, how: str) -> None:
    if how == "attribute":
        model.head = nn.Linear[L[8], L[3]](generator=sg.Generator(10))
    elif how == "list item":
        model.blocks[0] = nn.Linear[L[8], L[8]](generator=sg.Generator(11))
    elif how == "list length":
        model.blocks.append(nn.Linear[L[8], L[8]](generator=sg.Generator(12)))
    elif how == "dict item":
        model.extra["out"] = nn.Linear[L[3], L[3]](generator=sg.Generator(13))
    elif how == "parameter":
        model.head.weight = nn.parameter(sg.tensor(np.full((8, 3), 0.5, np.float32)))
    elif how == "number":
        model.scale = 2.0
    else:
        model.eval()


@pytest.mark.parametrize("how", ["attribute", "list item", "list length", "dict item", "parameter", "number", "mode"])
def test_a_module_changed_after_recording_is_recorded_again_not_replayed(how: str) -> None:
    model = _Holder()
    if how != "mode":
        model.eval()  # no dropout draws: the compiled and eager results compare exactly
    forward = sg.compile(lambda x: model(x))
    x, _ = _data((4, 8))
    forward(x)
    forward(x)
    _replace(model, how)
    np.testing.assert_allclose(forward(x).numpy(), model(x).numpy(), rtol=RTOL)
    assert len(forward.recordings) == 2
    assert forward.eager_reason is None


def test_another_model_under_the_same_name_is_recorded_again() -> None:
    global _swapped
    _swapped = _Holder().eval()
    forward = sg.compile(lambda x: _swapped(x))
    x, _ = _data((4, 8))
    forward(x)
    _swapped = _Holder().eval()
    _swapped.head = nn.Linear[L[8], L[3]](generator=sg.Generator(20))
    np.testing.assert_allclose(forward(x).numpy(), _swapped(x).numpy(), rtol=RTOL)


_swapped: Any = None


def test_a_step_changing_its_modules_at_every_call_runs_eagerly_with_one_warning() -> None:
    class Counting(nn.Module):
        def __init__(self) -> None:
            self.layer = nn.Linear[L[8], L[3]](generator=sg.Generator(0))
            self.calls = 0

        def __call__(self, x: Any) -> Any:
            self.calls += 1  # Python state a replay would not advance
            return self.layer(x) * float(self.calls)

    model = Counting()
    forward = sg.compile(lambda x: model(x))
    x, _ = _data((4, 8))
    with pytest.warns(sg.CompileWarning, match=r"changes what it reads at every call \(Counting.calls was replaced\)"):
        results = [forward(x).numpy() for _ in range(6)]
    assert model.calls == 6
    for k, result in enumerate(results, start=1):
        np.testing.assert_allclose(result, (model.layer(x) * float(k)).numpy(), rtol=RTOL)
    assert forward.eager_reason is not None


def test_modules_changed_before_every_call_run_eagerly_with_one_warning() -> None:
    model = _Holder().eval()
    forward = sg.compile(lambda x: model(x), max_recordings=2)
    x, _ = _data((4, 8))
    with pytest.warns(sg.CompileWarning, match=r"changes from call to call \(_Holder.scale was replaced"):
        for k in range(6):
            model.scale = float(k)
            np.testing.assert_allclose(forward(x).numpy(), model(x).numpy(), rtol=RTOL)
    assert forward.eager_reason is not None


_table: Any = None
_factor = 2.0


def test_a_rebound_global_tensor_or_number_is_recorded_again() -> None:
    global _table, _factor
    _table = sg.tensor(np.ones((4, 3), np.float32))

    def step(x: Any) -> Any:
        return x[:, :3] * _table * _factor

    forward = sg.compile(step)
    x, _ = _data((4, 8))
    forward(x)
    forward(x)
    _table = sg.tensor(np.full((4, 3), 3.0, np.float32))
    np.testing.assert_allclose(forward(x).numpy(), step(x).numpy(), rtol=RTOL)
    _factor = 5.0
    np.testing.assert_allclose(forward(x).numpy(), step(x).numpy(), rtol=RTOL)
    assert len(forward.recordings) == 3


def test_a_step_advancing_a_closure_counter_runs_eagerly_with_one_warning() -> None:
    calls = 0

    def step(x: Any) -> Any:
        nonlocal calls
        calls += 1
        return x * float(calls)

    forward = sg.compile(step)
    x, _ = _data((4, 8))
    with pytest.warns(sg.CompileWarning, match="changes what it reads at every call"):
        results = [forward(x).numpy() for _ in range(4)]
    for k, result in enumerate(results, start=1):
        np.testing.assert_allclose(result, x.numpy() * k, rtol=RTOL)


def test_a_step_that_switches_modes_leaves_them_as_eager_does() -> None:
    model = MLP(sg.Generator(4), dropout=0.5)

    def evaluate(x: Any) -> Any:
        model.eval()
        out = model(x)
        model.train()
        return out

    forward = sg.compile(evaluate)
    x, _ = _data((6, 8))
    for _ in range(3):
        np.testing.assert_allclose(forward(x).numpy(), evaluate(x).numpy(), rtol=RTOL)
        assert model.training
    assert [r.replays for r in forward.recordings] == [2]


def test_steps_that_each_set_the_mode_they_need_replay_when_called_in_turn() -> None:
    """PyTorch's idiom: ``model.train()`` at the start of the training step, ``model.eval()``
    at the start of the evaluation, each run after the other. Each replays a recording of
    the mode it is entered in (it was checked against the mode it left: every evaluation
    recorded again, and after a few epochs it ran eagerly with the warning), and the
    results, dropout draws and weights are eager's."""
    models = [MLP(sg.Generator(4), dropout=0.5), MLP(sg.Generator(4), dropout=0.5)]

    def steps(model: MLP) -> tuple[Callable[[Any, Any], Any], Callable[[Any], Any]]:
        grads, opt = model.alloc_grads(), sg.optim.SGD(model, lr=0.1)

        def train(x: Any, y: Any) -> Any:
            model.train()
            grads.zero()
            loss = sg.losses.cross_entropy(model(x.trace(grads)), y)
            loss.backward()
            opt.update(model, grads)
            return loss

        def evaluate(x: Any) -> Any:
            model.eval()
            return model(x)

        return train, evaluate

    (train, evaluate), (eager_train, eager_evaluate) = steps(models[0]), steps(models[1])
    train, evaluate = sg.compile(train), sg.compile(evaluate)
    x, y = _data((6, 8))
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for _ in range(12):
            for _ in range(2):
                np.testing.assert_array_equal(train(x, y).numpy(), eager_train(x, y).numpy())
            np.testing.assert_array_equal(evaluate(x).numpy(), eager_evaluate(x).numpy())
            assert not models[0].training
    _assert_same_weights(*models)
    # entered in train mode (the first call) and in eval mode (after an evaluation)
    assert sorted(r.replays for r in train.recordings) == [10, 12]
    assert [r.replays for r in evaluate.recordings] == [11]


def test_several_cross_entropies_on_the_same_labels_replay() -> None:
    """A loss per time step over columns of one label array (a decoder's), and an auxiliary
    head's loss on the same labels: each cross-entropy asks whether a label is ignored. The
    fused cross-entropy kernel was taken to write its labels, so the second question could
    not be asked again before a replay and the step ran eagerly (with numba installed)."""
    models = [MLP(sg.Generator(2)), MLP(sg.Generator(2))]

    def stepper(model: MLP) -> Callable[[Any, Any], Any]:
        grads, opt = model.alloc_grads(), sg.optim.Adam(model, lr=0.01)

        def step(x: Any, ys: Any) -> Any:
            grads.zero()
            logits = model(x.trace(grads))
            loss = sg.losses.cross_entropy(logits, ys[:, 0])
            for t in range(1, ys.shape[1]):
                loss = loss + sg.losses.cross_entropy(logits * float(t), ys[:, t])
            loss = loss + 0.5 * sg.losses.cross_entropy(model.l2(model.l1(x.trace(grads)).tanh()), ys[:, 0])
            loss.backward()
            opt.update(model, grads)
            return loss

        return step

    compiled, eager = sg.compile(stepper(models[0])), stepper(models[1])
    rng = np.random.default_rng(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for _ in range(4):
            x = sg.tensor(rng.standard_normal((5, 8)).astype(np.float32))
            ys = sg.tensor(rng.integers(0, 3, (5, 3)))
            np.testing.assert_array_equal(compiled(x, ys).numpy(), eager(x, ys).numpy())
    _assert_same_weights(*models)
    assert [r.replays for r in compiled.recordings] == [3]


def test_a_validation_loss_after_the_update_replays() -> None:
    """A step that trains, then computes a validation loss in the same step: the validation
    cross-entropy asks whether a label is ignored after the optimizer's update, a host call.
    The update says what it writes (parameters, their state, the gradient buffers), so a
    question about the validation labels, which it does not write, is asked again before a
    replay (it ran the step eagerly); a changed answer (an ignored label) records again."""
    models = [MLP(sg.Generator(4)), MLP(sg.Generator(4))]

    def stepper(model: MLP) -> Callable[..., Any]:
        grads, opt = model.alloc_grads(), sg.optim.Adam(model, lr=0.01)

        def step(x: Any, y: Any, x_val: Any, y_val: Any) -> tuple[Any, Any]:
            grads.zero()
            loss = sg.losses.cross_entropy(model(x.trace(grads)), y)
            loss.backward()
            opt.update(model, grads)
            return loss, sg.losses.cross_entropy(model(x_val), y_val, ignore_index=-1)

        return step

    compiled, eager = sg.compile(stepper(models[0])), stepper(models[1])
    rng = np.random.default_rng(5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for call in range(6):
            x, y = _data((5, 8))
            x_val = sg.tensor(rng.standard_normal((4, 8)).astype(np.float32))
            labels = rng.integers(0, 3, 4)
            if call >= 3:
                labels[0] = -1  # ignored from here on: the question's answer changes
            y_val = sg.tensor(labels)
            ours, theirs = compiled(x, y, x_val, y_val), eager(x, y, x_val, y_val)
            for a, b in zip(ours, theirs, strict=True):
                np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert compiled.eager_reason is None
    assert sorted(r.replays for r in compiled.recordings) == [2, 2]
    _assert_same_weights(*models)


def test_a_value_read_after_the_update_from_what_it_wrote_runs_eagerly() -> None:
    """A question asked after the optimizer's update of an array the update writes (a
    parameter): before a replay the parameter still holds the previous step's value, so the
    answer cannot be asked again there, and the step runs eagerly with the warning."""
    models = [MLP(sg.Generator(6)), MLP(sg.Generator(6))]

    def stepper(model: MLP) -> Callable[..., Any]:
        grads, opt = model.alloc_grads(), sg.optim.SGD(model, lr=0.5)

        def step(x: Any, y: Any) -> Any:
            grads.zero()
            loss = sg.losses.cross_entropy(model(x.trace(grads)), y)
            loss.backward()
            opt.update(model, grads)
            return loss * 2.0 if (model.l1.weight > 0.3).any() else loss

        return step

    compiled, eager = sg.compile(stepper(models[0])), stepper(models[1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", sg.CompileWarning)
        for _ in range(3):
            x, y = _data((5, 8))
            np.testing.assert_array_equal(compiled(x, y).numpy(), eager(x, y).numpy())
    assert compiled.eager_reason is not None and "bool()" in compiled.eager_reason
    assert any(issubclass(w.category, sg.CompileWarning) for w in caught)


def test_clip_grad_norm_in_a_step_runs_eagerly_and_names_clip_norm() -> None:
    """``sg.optim.clip_grad_norm`` returns the norm as a Python float, which a replay cannot
    give: the step runs eagerly, and the warning points to the optimizer's ``clip_norm=``."""
    model = MLP(sg.Generator(8))
    grads, opt = model.alloc_grads(), sg.optim.SGD(model, lr=0.1)

    def step(x: Any, y: Any) -> Any:
        grads.zero()
        loss = sg.losses.cross_entropy(model(x.trace(grads)), y)
        loss.backward()
        sg.optim.clip_grad_norm(grads, 0.5)
        opt.update(model, grads)
        return loss

    compiled = sg.compile(step)
    x, y = _data((5, 8))
    with pytest.warns(sg.CompileWarning, match="clip_norm="):
        compiled(x, y)
    assert compiled.eager_reason is not None and "clip_grad_norm" in compiled.eager_reason


def test_a_growing_sequence_runs_eagerly_until_its_shape_settles() -> None:
    """A sequence that grows by one row per call (generation before the context is full) is
    a new signature at every call: recording each one cost more than running it and replayed
    nothing. After two new signatures in a row, a signature runs eagerly the first time it is
    met and records the second time (one warning once more than ``max_recordings`` came in a
    row): the length the sequence settles at (the context, cropped) replays from then on."""
    weight = sg.tensor(np.arange(8, dtype=np.float32))

    def step(x: Any) -> Any:
        return (x * weight).tanh().sum(0)

    compiled = sg.compile(step)
    rng = np.random.default_rng(9)
    lengths = [*range(1, 21), *[20] * 10]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", sg.CompileWarning)
        for n in lengths:
            x = sg.tensor(rng.standard_normal((n, 8)).astype(np.float32))
            np.testing.assert_array_equal(compiled(x).numpy(), step(x).numpy())
    said = [w for w in caught if issubclass(w.category, sg.CompileWarning)]
    assert len(said) == 1 and "(20, 8)" not in str(said[0].message) and "(9, 8)" in str(said[0].message)
    assert compiled.eager_reason is None
    recordings = compiled.recordings
    assert len(recordings) == 3  # the first two lengths, then the settled one
    assert recordings[-1].replays == 9 and all(r.replays == 0 for r in recordings[:-1])
    assert "argument 0: shape (8, 8) -> shape (9, 8)" in str(said[0].message)

    # inside lists and tuples, and a dtype where the shape is the same
    from shapegrad._compile import _signature_change

    def tensor(shape: tuple[int, ...], dtype: str = "float32") -> Any:
        return ("tensor", shape, dtype, 0)

    def change(before: Any, now: Any) -> str:
        return _signature_change(((before,), ()), ((now,), ()))

    pair = ("list", (("tuple", (tensor((1, 2)), tensor((1, 2)))),))
    grown = ("list", (("tuple", (tensor((1, 3)), tensor((1, 3)))),))
    assert change(pair, grown) == "argument 0[0][0]: shape (1, 2) -> shape (1, 3)"
    assert change(tensor((3,)), tensor((3,), "float64")) == "argument 0: dtype float32 -> dtype float64"
    assert change(("list", (tensor((1,)),)), ("list", (tensor((1,)), tensor((1,))))) == (
        "argument 0: a list of 1 -> a list of 2"
    )

    # a number passed by value that changes at every call (a step count): said by value
    def scaled(x: Any, count: int) -> Any:
        return x * float(count)

    counted = sg.compile(scaled)
    x = sg.ones(3)
    with pytest.warns(sg.CompileWarning, match="argument 1: 7 -> 8"):
        for count in range(12):
            np.testing.assert_array_equal(counted(x, count).numpy(), scaled(x, count).numpy())


def test_a_generation_loop_run_again_records_nothing() -> None:
    """A generation loop (a prompt that grows by a token per call up to the context, then
    cropped) run a second and third time meets its prefix's shapes again, more of them than
    ``max_recordings``: each was recorded in turn, dropping the recording of the settled
    length (replayed at every call) and recording it again, so that every later run
    recorded about 14 times (10-20x slower than eager). The second run records the prefix
    lengths met twice while the cache has room; the kept recordings stay."""
    weight = sg.tensor(np.arange(8, dtype=np.float32))

    def step(x: Any) -> Any:
        return (x * weight).tanh().sum(0)

    compiled = sg.compile(step)
    rng = np.random.default_rng(9)
    kept_before: list[list[Any]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.CompileWarning)
        for _ in range(3):
            kept_before.append(list(compiled.recordings))
            for n in [*range(3, 16), *[16] * 20]:
                x = sg.tensor(rng.standard_normal((n, 8)).astype(np.float32))
                np.testing.assert_array_equal(compiled(x).numpy(), step(x).numpy())
    assert len(kept_before[1]) == 3 and len(kept_before[2]) == 8  # the second run filled the cache
    assert kept_before[2] == compiled.recordings  # the third recorded nothing and dropped nothing
    assert compiled.recordings[-1].replays == 18 + 2 * 20  # met twice, recorded, then replayed

    # a new settled shape (another batch size) still records once met twice
    for _ in range(3):
        x = sg.tensor(rng.standard_normal((17, 8)).astype(np.float32))
        np.testing.assert_array_equal(compiled(x).numpy(), step(x).numpy())
    assert compiled.recordings[-1].replays == 1


@pytest.mark.parametrize("kind", ["tuples", "arrays"])
def test_a_list_argument_holding_tuples_or_arrays_replays(kind: str) -> None:
    """A KV cache kept by the user as a list of (key, value) tuples, passed in and returned,
    or a list of NumPy arrays: the recording run swaps the list's items for traced ones and
    puts them back in a loop whose variable was named ``key``, so the recording was kept
    under the list's index instead of its signature, and every call recorded again (a
    cached decoding loop 13-28x slower than eager)."""
    weight = sg.tensor(np.arange(4, dtype=np.float32))

    def step(x: Any, cache: list[Any]) -> Any:
        if kind == "tuples":
            return x * weight, [(k + x, v * 0.5) for k, v in cache]
        return x * weight + cache[0].sum(), [a * 0.5 for a in cache]

    compiled = sg.compile(step)
    x = sg.ones(4)
    make = (
        (lambda: [(sg.zeros(4), sg.ones(4)) for _ in range(2)])
        if kind == "tuples"
        else (lambda: [np.ones(4, np.float32) for _ in range(2)])
    )
    cache, twin = make(), make()
    for _ in range(5):
        out, cache = compiled(x, cache)
        expected, twin = step(x, twin)
        np.testing.assert_array_equal(out.numpy(), expected.numpy())
    assert [r.replays for r in compiled.recordings] == [4]


def test_a_tensor_made_from_a_numpy_array_in_the_step_is_a_constant() -> None:
    """``sg.tensor(np.arange(n) > pos)`` (a mask built with NumPy in the step) copied the
    array through ``xp.asarray``, an array the recording did not know: the step ran eagerly
    with the warning. It is a constant of the recording, a fresh copy at every replay."""

    def step(x: Any) -> Any:
        mask = sg.tensor(np.arange(4) > 1)
        scale = sg.tensor(np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32))
        return sg.where(mask, x * scale, 0.0), scale

    compiled = sg.compile(step)
    x = sg.ones(4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        outs = [compiled(x) for _ in range(3)]
    assert compiled.recordings[0].replays == 2
    outs[1][1][0] = 9.0  # the caller writes one result: the next replay's is fresh
    for out, scale in outs[::2]:
        np.testing.assert_array_equal(out.numpy(), step(x)[0].numpy())
        np.testing.assert_array_equal(scale.numpy(), [1.0, 2.0, 3.0, 4.0])


def test_a_numpy_array_the_step_converts_written_in_place_between_calls_records_again() -> None:
    """A NumPy array the step reads from a global or an object and converts (a mask or a
    table kept between calls, larger than the arrays the layout compares by value) is a
    constant of the recording: written in place between calls, the next call records again
    instead of replaying the old values."""
    table = np.zeros((80, 80), np.float32)  # 6,400 elements

    def step(x: Any) -> Any:
        return (x * sg.tensor(table)).sum()

    compiled = sg.compile(step)
    x = sg.ones(80, 80)
    seen = []
    for value in (0.0, 0.0, 1.0, 1.0, 2.0):
        table[:] = value
        seen.append(compiled(x).item())
        assert seen[-1] == step(x).item()
    assert seen == [0.0, 0.0, 6400.0, 6400.0, 12800.0]
    assert sorted(r.replays for r in compiled.recordings) == [0, 1, 1]


def test_multinomial_from_the_default_generator_reseeded_between_calls_records_again() -> None:
    """sg.multinomial without a generator draws from the default one; ``sg.seed`` between
    calls replaces it, so the next call records again and draws from the new one, as eager
    does (the recorded draw held the old generator)."""
    probs = sg.tensor(np.full((2, 40), 1 / 40, np.float32))

    def sample(p: Any) -> Any:
        return sg.multinomial(p, 3, replacement=True)

    compiled = sg.compile(sample)
    for seed in (1, 1, 2, 3):
        sg.seed(seed)
        ours = [compiled(probs).tolist() for _ in range(2)]
        sg.seed(seed)
        assert ours == [sample(probs).tolist() for _ in range(2)], seed


def test_python_arguments_are_part_of_the_signature() -> None:
    model = MLP(sg.Generator(0))
    forward = sg.compile(lambda x, scale: model(x) * scale)
    x, _ = _data((5, 8))
    for scale in (1.0, 2.0, 1.0, 2.0):
        np.testing.assert_allclose(forward(x, scale).numpy(), (model(x) * scale).numpy(), rtol=RTOL)
    assert [r.replays for r in forward.recordings] == [1, 1]


# --------------------------------------------------------------------------- errors and refusals
def test_mistakes_still_raise_in_the_recording_run() -> None:
    model = MLP(sg.Generator(0))
    other = MLP(sg.Generator(1))
    opt, grads = sg.optim.Adam(model), model.alloc_grads()
    forward = sg.compile(lambda x: model(x))
    with pytest.raises(sg.ShapeError):
        forward(sg.zeros(5, 7))

    def wrong_grads(x: Any, y: Any) -> Any:
        other_grads = other.alloc_grads()
        loss = sg.losses.cross_entropy(model(x.trace(grads)), y)
        loss.backward()
        opt.update(model, other_grads)
        return loss

    with pytest.raises(sg.GradientsMismatchError):
        sg.compile(wrong_grads)(*_data((5, 8)))
    with pytest.raises(sg.CompileError, match="untraced"):
        sg.compile(lambda x: x * 2)(sg.ones(3).trace(sg.Gradients()))
    with pytest.raises(sg.CompileError, match="max_recordings"):
        sg.compile(lambda x: x, max_recordings=0)


class _OneRank:
    """An MPI communicator of one process, as much of it as Comm uses with one rank."""

    def Get_rank(self) -> int:  # noqa: N802 -- mpi4py's name
        return 0

    def Get_size(self) -> int:  # noqa: N802
        return 1

    def allgather(self, value: Any) -> list[Any]:
        return [value]


def _data_parallel_step(comm: Any, model: Any, opt: Any, grads: Any) -> Callable[[Any, Any], Any]:
    def step(x: Any, y: Any) -> Any:
        grads.zero()
        loss = sg.losses.cross_entropy(model(x.trace(grads)), y)
        loss.backward()
        comm.allreduce_mean(grads)
        opt.update(model, grads)
        return loss

    return step


def test_allreduce_mean_is_recorded_as_a_host_call() -> None:
    """issue #26: comm.allreduce_mean inside a compiled step is a host call run at every
    replay (tests/support/mpi_worker.py's "compiled" scenario checks it on two ranks)."""
    from shapegrad import distributed

    results = []
    for compiled in (False, True):
        comm = distributed.Comm(_OneRank())
        model = MLP(sg.Generator(0))
        opt, grads = sg.optim.Adam(model), model.alloc_grads()
        step = _data_parallel_step(comm, model, opt, grads)
        run = sg.compile(step) if compiled else step
        losses = []
        for i in range(6):
            comm.samples = 5 + i % 2
            losses.append(run(*_data((5, 8), seed=i)).item())
        results.append((losses, [t.numpy().copy() for _, t in model.named_tensors()]))
        if compiled:
            assert isinstance(run, sg.CompiledStep) and run.eager_reason is None
            (recording,) = run.recordings
            assert (recording.host_calls, recording.replays) == (2, 5)
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-6)
    for ours, theirs in zip(results[1][1], results[0][1], strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7)


def test_other_collectives_and_overlap_inside_a_compiled_step_are_refused() -> None:
    from shapegrad import distributed

    comm = distributed.Comm(_OneRank())
    model = MLP(sg.Generator(0))
    opt, grads = sg.optim.Adam(model), model.alloc_grads()
    x, y = _data((5, 8))
    for call in (
        comm.barrier,
        lambda: comm.sum_int(1),
        lambda: comm.broadcast_object(1),
        lambda: comm.broadcast_parameters(model),
        lambda: comm.overlap(grads),
    ):
        with pytest.raises(sg.CompileError, match="records Comm.allreduce_mean only"):
            sg.compile(lambda x, call=call: call())(x)
    # Buckets reduced during the backward pass: refused as the recorded backward reaches the
    # first gradient, before any bucket starts (and in allreduce_mean where none did).
    comm.overlap(grads)
    step = sg.compile(_data_parallel_step(comm, model, opt, grads))
    before = model.l1.weight.numpy().copy()
    with pytest.raises(sg.CompileError, match="Comm.overlap"):
        step(x, y)
    with pytest.raises(sg.CompileError, match="Comm.overlap"):
        sg.compile(lambda: comm.allreduce_mean(grads))()
    np.testing.assert_array_equal(model.l1.weight.numpy(), before)


def test_other_backends_run_eagerly_with_a_warning() -> None:
    with sg.use_backend("strict"):
        x = sg.ones(2, 3)
        forward = sg.compile(lambda x: (x * 3.0).sum())
        with pytest.warns(sg.CompileWarning, match="NumPy backend only"):
            assert forward(x).item() == 18.0
        assert forward(x).item() == 18.0


# --------------------------------------------------------------------------- structure
def test_structured_arguments_and_results_and_a_written_buffer() -> None:
    total = sg.zeros(3)

    def accumulate(pair: tuple[Any, Any], *, scale: float) -> dict[str, Any]:
        a, b = pair
        total[...] = total + a * b * scale  # written into a tensor that outlives the step
        return {"sum": total * 1.0, "parts": [a + b, a - b]}

    compiled = sg.compile(accumulate)
    expected = np.zeros(3, np.float32)
    for i in range(4):
        a, b = sg.tensor([1.0, 2.0, 3.0]) * float(i), sg.ones(3)
        out = compiled((a, b), scale=0.5)
        expected += a.numpy() * 0.5
        np.testing.assert_allclose(out["sum"].numpy(), expected, rtol=RTOL)
        np.testing.assert_allclose(out["parts"][1].numpy(), (a - b).numpy(), rtol=RTOL)
    np.testing.assert_allclose(total.numpy(), expected, rtol=RTOL)
    assert compiled.recordings[0].replays == 3


def test_an_argument_written_in_place_keeps_its_own_array_after_replays() -> None:
    # x[:, 0] = ... sets the tensor's array to the one it holds: a replay had "rebound" the
    # recording call's tensor to each later call's array, so it came to hold the last batch
    def standardize_first_column(x: Any) -> Any:
        x[:, 0] = x[:, 0] * 2.0
        return x.sum()

    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(4)]
    compiled = sg.compile(standardize_first_column)
    tensors = [sg.tensor(b.copy()) for b in batches]
    for tensor in tensors:
        compiled(tensor)
    for tensor, batch in zip(tensors, batches, strict=True):
        expected = batch.copy()
        expected[:, 0] *= 2.0
        np.testing.assert_array_equal(tensor.numpy(), expected)
    assert compiled.recordings[0].replays == 3


def test_arguments_sharing_memory_in_a_later_call_record_again() -> None:
    # recorded with two arrays apart, a chain reading b ran in one loop after the write into
    # a; called with b a view of a (x, x.T), the loop read what the write had put there
    def step(a: Any, b: Any) -> Any:
        c = b * 3.0 + 1.0
        a[0] = 5.0
        return c * 2.0 + b

    rng = np.random.default_rng(0)
    compiled = sg.compile(step)
    for call in range(4):
        data = rng.standard_normal((3, 3)).astype(np.float32)
        ours, theirs = sg.tensor(data.copy()), sg.tensor(data.copy())
        other = sg.tensor(data.T.copy())
        args = (ours, other) if call == 0 else (ours, ours.T)
        expected = step(theirs, other) if call == 0 else step(theirs, theirs.T)
        np.testing.assert_array_equal(compiled(*args).numpy(), expected.numpy())
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert sorted(r.replays for r in compiled.recordings) == [0, 2]


@pytest.mark.parametrize("first", ["buffer", "other"])
def test_a_buffer_the_step_writes_passed_as_its_argument(first: str) -> None:
    # recorded with the buffer as the argument, the recording read the argument for the
    # buffer: a replay given another tensor never wrote the buffer; recorded with another
    # tensor, a loop reading the argument ran after the write into the buffer it then was
    def make() -> tuple[Any, Callable[[Any], Any]]:
        buffer = sg.ones(3, 3)

        def step(x: Any) -> Any:
            c = x * 3.0 + 1.0
            buffer[...] = buffer * 0.5 + 1.0
            return c * 2.0 + x

        return buffer, step

    ours, step = make()
    theirs, eager = make()
    compiled = sg.compile(step)
    rng = np.random.default_rng(0)
    for call in range(5):
        data = rng.standard_normal((3, 3)).astype(np.float32)
        as_buffer = (call % 2 == 0) == (first == "buffer")
        got = compiled(ours if as_buffer else sg.tensor(data))
        expected = eager(theirs if as_buffer else sg.tensor(data))
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert sorted(r.replays for r in compiled.recordings) == [1, 2]


def test_a_boolean_mask_selecting_another_count_records_again() -> None:
    # x[mask]'s shape is how many the mask selects: a replay sized as recorded gave the
    # first call's count of rows (numba's loops), or raised a broadcasting error (NumPy's)
    def masked(x: Any, mask: Any) -> Any:
        picked = x[mask]
        return (picked * 2.0 + 1.0).tanh().sum(), picked * 3.0 + 1.0

    rng = np.random.default_rng(0)
    compiled = sg.compile(masked)
    for count in (2, 6, 1, 2, 6):
        x = sg.tensor(rng.standard_normal((8, 3)).astype(np.float32))
        mask = sg.tensor(np.arange(8) < count)
        (total, rows), (expected_total, expected_rows) = compiled(x, mask), masked(x, mask)
        assert rows.shape == (count, 3)
        np.testing.assert_array_equal(rows.numpy(), expected_rows.numpy())
        assert total.item() == expected_total.item()
    assert sorted(r.replays for r in compiled.recordings) == [0, 1, 1]


def test_a_masked_loss_on_a_models_output_asks_the_mask_alone() -> None:
    """The mask's count is asked before each replay, not the masked output's values: a
    training step with a masked loss replays wherever the count is the one recorded."""
    rng = np.random.default_rng(1)
    batches = [rng.standard_normal((6, 8)).astype(np.float32) for _ in range(6)]
    masks = [np.arange(6) % k != 0 for k in (2, 3, 2, 3, 2, 2)]
    runs = []
    for compiled in (False, True):
        model = MLP(sg.Generator(0))
        opt, grads = sg.optim.Adam(model, lr=0.01), model.alloc_grads()

        def step(x: Any, mask: Any, model: Any = model, opt: Any = opt, grads: Any = grads) -> Any:
            grads.zero()
            loss = (model(x.trace(grads))[mask] ** 2).mean()
            loss.backward()
            opt.update(model, grads)
            return loss

        run = sg.compile(step) if compiled else step
        losses = [run(sg.tensor(x), sg.tensor(m)).item() for x, m in zip(batches, masks, strict=True)]
        runs.append((losses, model, run))
    (eager_losses, eager_model, _), (losses, model, compiled_step) = runs
    assert losses == eager_losses
    _assert_same_weights(model, eager_model)
    assert compiled_step.eager_reason is None
    assert sorted(r.replays for r in compiled_step.recordings) == [1, 3]


def test_batch_norm_in_eval_mode_reads_the_running_statistics() -> None:
    model = SmallCNN(sg.Generator(1))
    x, _ = _data((4, 3, 8, 8))
    model(x)  # moves the running statistics off their start
    model.eval()
    forward = sg.compile(lambda x: model(x))
    for _ in range(3):
        np.testing.assert_allclose(forward(x).numpy(), model(x).numpy(), rtol=RTOL)
    assert forward.recordings[0].replays == 2


def test_an_array_kept_from_another_recording_is_not_mistaken_for_this_ones() -> None:
    kept: dict[str, Any] = {}

    def first(x: Any) -> Any:
        y = x * 2.0
        kept["array"] = y.data  # escapes the step in a dict (as a cache would)
        return y

    x = sg.tensor([1.0, 2.0, 3.0])
    sg.compile(first)(x)
    second = sg.compile(lambda x: x + sg.tensor(kept["array"]))
    with pytest.warns(sg.CompileWarning, match="derived outside this recording"):
        np.testing.assert_allclose(second(x).numpy(), [3.0, 6.0, 9.0])
    np.testing.assert_allclose(second(x * 0.0).numpy(), [2.0, 4.0, 6.0])


# --------------------------------------------------------------------------- tapes after a replay
def _saved_then_stepped(
    step: Callable[..., Any], make_args: Callable[[], tuple[Any, ...]], saves: Callable[[], Any]
) -> list[str]:
    """Per call: an eager op saves what ``saves()`` gives (a tensor the step writes), the step
    runs, then the eager backward pass: what it raised (or "ok")."""
    outcomes: list[str] = []
    for _ in range(4):
        grads = sg.Gradients()
        w = sg.ones(4).trace(grads)
        loss = (saves() * w).sum()
        step(*make_args())
        try:
            loss.backward()
            outcomes.append("ok")
        except sg.TapeError:
            outcomes.append("TapeError")
    return outcomes


@pytest.mark.parametrize("written", ["closure buffer", "argument", "view of an argument", "batch norm"])
def test_a_replay_notes_the_in_place_writes_the_step_made(written: str) -> None:
    """A tensor the step writes in place (a buffer it fills, a tensor argument or a view of one,
    batch norm's running statistics) makes a backward pass through values saved from it before
    the call raise TapeError, after a replay as after the step: the recording notes the writes,
    and a replay notes them again (in this call's arguments)."""
    buf, arg, norm = sg.zeros(2, 4), sg.zeros(2, 4), nn.BatchNorm1d[L[4]]()
    data = sg.tensor(np.arange(8, dtype=np.float32).reshape(2, 4))

    def step(x: Any, target: Any) -> Any:
        if written == "closure buffer":
            buf[...] = x * 2.0
        elif written == "argument":
            target[...] = x + 1.0
        elif written == "view of an argument":
            view = target.detach()
            view[0] = x[0]
        else:
            return norm(x).sum()
        return x.sum()

    saves = {"closure buffer": lambda: buf, "batch norm": lambda: norm.running_var}.get(written, lambda: arg)
    compiled = sg.compile(step)
    assert _saved_then_stepped(compiled, lambda: (data, arg), saves) == ["TapeError"] * 4
    assert compiled.recordings[0].replays == 3


def test_a_replay_ends_the_tapes_its_grads_zero_ended() -> None:
    """grads.zero() in a step ends the tape behind grads: an eager forward pass traced before
    the call cannot be backpropagated after it, after a replay too; and two Gradients one op in
    the step merged (x.trace(g_enc, g_dec)) share one tape again after it (zeroing one ends
    what the other's forward pass recorded)."""
    g = sg.Generator(0)
    enc, dec = nn.Linear[L[8], L[5]](generator=g), nn.Linear[L[5], L[3]](generator=g)
    g_enc, g_dec = enc.alloc_grads(), dec.alloc_grads()

    def step(x: Any) -> Any:
        g_enc.zero()
        g_dec.zero()
        loss = (dec(enc(x.trace(g_enc, g_dec)).relu()) ** 2).mean()
        loss.backward()
        return loss

    compiled = sg.compile(step)
    x, _ = _data((4, 8))
    for _ in range(4):
        before = enc(x.trace(g_enc)).sum()
        compiled(x)
        with pytest.raises(sg.TapeError, match="zeroed"):
            before.backward()
        after = enc(x.trace(g_enc)).sum()
        g_dec.zero()  # the tape g_enc records on is g_dec's too
        with pytest.raises(sg.TapeError, match="zeroed"):
            after.backward()
    assert compiled.recordings[0].replays == 3


def test_a_range_check_failing_in_a_replay_notes_the_writes_before_it() -> None:
    """A replay whose range check fails (an index out of range) has noted the in-place writes
    the step made before the check, as the step raising there has."""
    buf, table = sg.zeros(2, 4), sg.ones(5, 4)

    def step(x: Any, ids: Any) -> Any:
        buf[...] = x
        return sg.gather(table, ids).sum()

    compiled = sg.compile(step)
    x, ok, bad = sg.ones(2, 4), sg.tensor(np.array([0, 4])), sg.tensor(np.array([0, 5]))
    compiled(x, ok)
    for ids in (ok, bad):
        grads = sg.Gradients()
        loss = (buf * sg.ones(4).trace(grads)).sum()
        if ids is bad:
            with pytest.raises(sg.ShapeError):
                compiled(x, ids)
        else:
            compiled(x, ids)
        with pytest.raises(sg.TapeError):
            loss.backward()
    assert compiled.recordings[0].replays == 2


def _int32(values: Any) -> Any:
    return sg.tensor(np.array(values, np.int32))


def test_an_integer_power_replayed_with_a_negative_exponent_raises_eager_s_error() -> None:
    """An integer tensor to an integer tensor power, recorded with a valid exponent and replayed
    with a negative one, raises the DTypeError eager raises (the replay ran NumPy's power and
    raised its bare ValueError), after noting the writes the step made before it, as the step
    raising there has; the next valid call is replayed. A base given as a number too."""
    buf = sg.zeros(2)

    def step(x: Any, a: Any, b: Any, c: Any) -> Any:
        buf[...] = x
        return (a**b).sum() + (2**c).sum()

    compiled = sg.compile(step)
    x, a = sg.ones(2), _int32([[2, 3], [4, 5]])
    good, bad = _int32([[1, 2], [0, 1]]), _int32([[1, -1], [0, 1]])
    also_good = _int32([[1, 2], [0, 1]])  # not the same tensor: a call's aliasing is in its signature
    assert compiled(x, a, good, also_good).item() == step(x, a, good, also_good).item() == 26
    for b, c, found in ((bad, good, "a tensor of dtype int32"), (good, bad, "the number 2")):
        with pytest.raises(sg.DTypeError) as eager:
            step(x, a, b, c)
        assert f"not allowed: found {found} to the power of a tensor of dtype int32" in str(eager.value)
        grads = sg.Gradients()
        loss = (buf * sg.ones(2).trace(grads)).sum()
        with pytest.raises(sg.DTypeError) as replayed:
            compiled(x, a, b, c)
        assert str(replayed.value) == str(eager.value)
        with pytest.raises(sg.TapeError):
            loss.backward()  # buf was written, as by the eager step
    assert compiled(x, a, good, also_good).item() == 26
    assert len(compiled.recordings) == 1 and compiled.recordings[0].replays == 3


@pytest.mark.parametrize(
    ("base", "exponent"),
    [
        (np.array([1.5, 2.0], np.float32), np.array([1, 2], np.int32)),
        (np.array([2, 3], np.int32), np.array([1, 2], np.uint8)),
        (np.zeros((0, 1), np.int32), np.array([1, 2], np.int32)),
    ],
    ids=["float base", "unsigned exponent", "empty result"],
)
def test_a_power_that_cannot_meet_a_negative_integer_exponent_replays_no_check(base: Any, exponent: Any) -> None:
    """Only an integer base to a signed integer exponent, with a result holding elements, is
    checked at each replay (NumPy raises nowhere else): any other power's replay runs no check,
    and gives eager's result for a negative exponent."""

    def step(a: Any, b: Any) -> Any:
        return a**b

    compiled = sg.compile(step)
    a, b = sg.tensor(base), sg.tensor(exponent)
    compiled(a, b)
    assert "_failed" not in compiled.recordings[0].source
    if exponent.dtype.kind == "i":
        b = sg.tensor(-exponent)
    np.testing.assert_array_equal(compiled(a, b).numpy(), step(a, b).numpy())
    assert compiled.recordings[0].replays == 1


# --------------------------------------------------------------------------- fused chains
def _without_numba(monkeypatch: pytest.MonkeyPatch) -> None:
    """numba as if it were not installed: the NumPy backend compiles no loop."""
    from shapegrad_backends import numba_kernels

    monkeypatch.setattr(numba_kernels, "_numba", False)


def test_elementwise_chains_of_a_gru_step_are_fused_into_shared_loops() -> None:
    pytest.importorskip("numba")
    x, y = _data((3, 4, 5))
    compiled = _compare(lambda: GRUNet(sg.Generator(2)), x, y)
    (recording,) = compiled.recordings
    # the cell's gates (sigmoid's arithmetic around its exp, r·h, 1 - z, the blend) and their
    # gradients run as loops; each time step's chains share one compiled loop
    assert recording.fused_operations > recording.operations // 4
    assert 0 < len(recording.loop_sources) < recording.fused_loops
    # a gate (columns of the fused gates' product) is read through that product at an offset
    assert any("[i, j + 6]" in source for source in recording.loop_sources)
    assert recording.source.count("# fused:") == recording.fused_loops
    assert "fused into" in repr(recording)


def test_without_numba_nothing_is_fused_and_the_replay_equals_eager(monkeypatch: pytest.MonkeyPatch) -> None:
    _without_numba(monkeypatch)
    x, y = _data((3, 4, 5))
    compiled = _compare(lambda: GRUNet(sg.Generator(2)), x, y)
    (recording,) = compiled.recordings
    assert recording.fused_operations == recording.fused_loops == 0 and recording.loop_sources == []
    assert "# fused:" not in recording.source


def test_fused_loops_keep_numpys_special_values_bit_for_bit() -> None:
    pytest.importorskip("numba")

    def f(a: Any, b: Any, bias: Any) -> Any:
        q = a / b - bias  # division by zero: inf and NaN as NumPy gives, never an error
        return sg.where(q > 0.5, q.maximum(bias) * 2.0, (-q).minimum(bias * 3.0) + 1)

    compiled = sg.compile(f)
    values = np.array([[0.0, 1.0, -2.0, np.nan], [3.0, -0.0, np.inf, 5.0], [1e-30, 7.0, -1.0, 2.0]], np.float32)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        a = sg.tensor(values * np.float32(seed + 1))
        b = sg.tensor(np.where(rng.random((3, 4)) < 0.3, 0.0, rng.standard_normal((3, 4))).astype(np.float32))
        bias = sg.tensor(np.array([0.5, np.nan, -1.0, 2.0], np.float32))  # a last-axis vector
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(compiled(a, b, bias).numpy(), f(a, b, bias).numpy())
    (recording,) = compiled.recordings
    assert recording.fused_loops == 1 and recording.fused_operations >= 8


def test_fused_maximum_and_minimum_keep_numpys_zero_at_a_tie_of_signed_zeros() -> None:
    """NumPy's maximum/minimum give the second operand where both are zeros (of either sign):
    the loops gave the first, so ``1 / a.maximum(b)`` at a = -0.0, b = 0.0 was -inf where eager
    gives inf, at a replay whose data met the tie (the recording's check compares values, and
    -0.0 == 0.0)."""
    pytest.importorskip("numba")

    def f(a: Any, b: Any) -> Any:
        return 1.0 / (a.maximum(b) * 1.0), 1.0 / (a.minimum(b) * 1.0), a.maximum(b) + 0.0

    compiled = sg.compile(f)
    for seed in range(4):
        rng = np.random.default_rng(seed)
        a, b = (rng.standard_normal((3, 4)).astype(np.float32) for _ in range(2))
        if seed:
            a[0, :2], b[0, :2] = -0.0, 0.0
            a[1, :2], b[1, :2] = 0.0, -0.0
        with np.errstate(divide="ignore"):
            got, expected = compiled(sg.tensor(a), sg.tensor(b)), f(sg.tensor(a), sg.tensor(b))
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_array_equal(g.numpy(), e.numpy())
            np.testing.assert_array_equal(np.signbit(g.numpy()), np.signbit(e.numpy()))
    assert compiled.recordings[0].fused_loops >= 2


def test_a_chain_is_not_moved_past_a_write_of_what_it_reads() -> None:
    pytest.importorskip("numba")
    model = MLP(sg.Generator(4))
    opt, grads = sg.optim.SGD(model, lr=0.5), model.alloc_grads()

    def step(x: Any, y: Any) -> Any:
        grads.zero()
        before = model.l2.bias * 2.0  # read before the update writes the bias in place
        loss = sg.losses.cross_entropy(model(x.trace(grads)), y)
        loss.backward()
        opt.update(model, grads)
        return before + 1.0, model.l2.bias + 1.0

    x, y = _data((5, 8))
    compiled = sg.compile(step)
    for _ in range(3):
        expected = model.l2.bias.numpy() * 2.0 + 1.0
        before, after = compiled(x, y)
        np.testing.assert_array_equal(before.numpy(), expected)
        np.testing.assert_array_equal(after.numpy(), model.l2.bias.numpy() + 1.0)


def test_fused_loops_over_three_axes_broadcast_a_value_per_row() -> None:
    pytest.importorskip("numba")

    def f(x: Any, scale: Any) -> Any:
        centred = x - x.mean(axis=-1, keepdims=True)  # one value per row: (2, 3, 1)
        return (centred * scale * 0.5 + 1.0).maximum(centred)

    compiled = sg.compile(f)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        x = sg.tensor(rng.standard_normal((2, 3, 5)).astype(np.float32))
        scale = sg.tensor(rng.standard_normal((2, 3, 1)).astype(np.float32))
        np.testing.assert_array_equal(compiled(x, scale).numpy(), f(x, scale).numpy())
    (recording,) = compiled.recordings
    assert recording.fused_loops == 1 and recording.fused_operations == 5
    assert "[i, 0]" in recording.loop_sources[0] and ".reshape(6, 5)" in recording.source


def test_np_reshape_with_its_order_by_position_replays() -> None:
    """``np.reshape(y, shape, "F")``: the replay wrote it as ``y.reshape(shape, "F")``, which
    NumPy refuses (the method takes its order by keyword only): a TypeError at the first replay."""

    def fortran(a: Any) -> Any:
        return np.reshape(np.tanh(a), (2, 12), "F") * 2.0

    compiled = sg.compile(fortran)
    for s in range(3):
        a = np.random.default_rng(s).standard_normal((4, 6))
        np.testing.assert_allclose(compiled(a), fortran(a))
    assert compiled.eager_reason is None


def test_optimizer_state_converted_in_the_step_is_read_at_each_replay() -> None:
    """``sg.tensor(opt.state_arrays()[name])`` after the update: the state array is an input
    the update writes during the replay, after the check before it; as a constant of the
    recording every replay gave the previous step's moment."""
    x, _ = _data((3, 8))
    runs = []
    for compiled in (False, True):
        model = MLP(sg.Generator(0))
        opt, grads = sg.optim.Adam(model), model.alloc_grads()
        name = sorted(opt.state_arrays())[0]

        def step(x: Any, model: Any = model, opt: Any = opt, grads: Any = grads, name: str = name) -> Any:
            grads.zero()
            loss = (model(x.trace(grads)) ** 2).sum()
            loss.backward()
            opt.update(model, grads)
            return loss, sg.tensor(opt.state_arrays()[name]).sum()

        run = sg.compile(step) if compiled else step
        runs.append([tuple(v.item() for v in run(x)) for _ in range(6)])
    np.testing.assert_allclose(runs[1], runs[0], rtol=RTOL)


def test_a_named_tuple_array_converted_in_the_step_is_copied() -> None:
    """A NumPy array in a named tuple argument (an input the step is given as it is)
    converted by ``sg.tensor``: eager copies it; the backend's asarray gave the input itself,
    so the step's write into the tensor wrote the caller's array."""
    from typing import NamedTuple

    class Batch(NamedTuple):
        x: Any

    def step(batch: Batch) -> Any:
        t = sg.tensor(batch.x)
        t[0] = 100.0
        return t * 2.0

    compiled = sg.compile(step)
    array = np.ones(4, np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(compiled(Batch(array)).numpy(), [200.0, 2.0, 2.0, 2.0])
    np.testing.assert_array_equal(array, np.ones(4, np.float32))


def test_a_temporary_written_after_its_conversion_replays() -> None:
    """An array the step builds, converts and then writes (held by nothing after the step)
    cannot change between calls: compared with its recorded values before each replay, it
    always differed, and the step ran eagerly after max_recordings calls."""

    def step(x: Any) -> Any:
        m = np.zeros(4, np.float32)
        first = sg.tensor(m)
        m[1] = 1.0
        return x * first + sg.tensor(m)

    compiled = sg.compile(step)
    x = sg.ones(4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for _ in range(12):
            np.testing.assert_array_equal(compiled(x).numpy(), step(x).numpy())
    assert [r.replays for r in compiled.recordings] == [11]


def test_multinomial_from_the_default_generator_seeded_before_every_call_replays() -> None:
    """``sg.seed(s)`` before each call (a reproducible sampling loop): the draw looks up the
    default generator when it runs, so a replay draws from the new one; held by the
    recording, every call recorded again and the step ran eagerly after max_recordings."""
    probs = sg.tensor(np.full((2, 40), 1 / 40, np.float32))

    def sample(p: Any) -> Any:
        return sg.multinomial(p, 3)

    compiled = sg.compile(sample)
    ours, theirs = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        for seed in (1, 1, 2, 3, 3, 4, 5, 6, 7, 8, 9, 10):
            sg.seed(seed)
            ours.append(compiled(probs).tolist())
    for seed in (1, 1, 2, 3, 3, 4, 5, 6, 7, 8, 9, 10):
        sg.seed(seed)
        theirs.append(sample(probs).tolist())
    assert ours == theirs
    assert [r.replays for r in compiled.recordings] == [11]


# --------------------------------------------------------------------------- what a replay gives back
def _both(step: Callable[..., Any], use: Callable[[Callable[..., Any]], Any], calls: int = 4) -> tuple[Any, Any]:
    """What ``use`` makes of the eager step and of the compiled one, each called ``calls`` times."""
    compiled = sg.compile(step)
    eager = [use(step) for _ in range(calls)]
    replayed = [use(compiled) for _ in range(calls)]
    assert compiled.eager_reason is None and compiled.recordings[0].replays == calls - 1
    return eager, replayed


def _written_through(result: Callable[[Any], Any], saved: Callable[[Any], Any]) -> Callable[[Any], str]:
    """A use of a step of one tensor: an eager op saves ``saved(x)`` (the argument, or a tensor
    the step returned), the caller writes into ``result`` of what the step returned, then the
    backward pass: what it raised (or its gradient)."""

    def use(run: Any) -> str:
        x = sg.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
        out = run(x)
        grads = sg.Gradients()
        loss = (saved((x, out)).trace(grads) ** 2).sum()
        result(out)[...] = 0.0
        try:
            loss.backward()
        except sg.TapeError:
            return "TapeError"
        return "ok"

    return use


@pytest.mark.parametrize(
    "case",
    ["the same tensor twice", "a tensor and its view", "a view of the argument", "the argument", "in a list twice"],
)
def test_a_write_through_a_replays_result_is_seen_as_eagers_is(case: str) -> None:
    """A replay's results are the objects eager gives back: ``return y, y`` is one tensor twice,
    ``return x`` the argument itself, and a view of the argument counts writes with it, so a
    write through one result is seen by a backward pass that saved the other (TapeError): a
    replay gave new tensors with counters of their own, and the gradient of the overwritten
    values, no error."""

    def step(x: Any) -> Any:
        y = x * 2.0
        if case == "the same tensor twice":
            return y, y
        if case == "a tensor and its view":
            return y, y.reshape(6)
        if case == "a view of the argument":
            return x.reshape(6), y
        if case == "the argument":
            return x, y
        return [y, y]

    eager, replayed = _both(step, lambda run: [a is b for a, b in [run(sg.ones(2, 3))[:2]]][0])
    assert replayed == eager
    saved = (lambda pair: pair[0]) if case in ("a view of the argument", "the argument") else (lambda pair: pair[1][1])
    use = _written_through(lambda out: out[0], saved)
    eager, replayed = _both(step, use)
    assert eager == ["TapeError"] * 4
    assert replayed == eager


def test_a_returned_view_of_a_parameter_counts_writes_with_it() -> None:
    lin = nn.Linear[L[3], L[2]](generator=sg.Generator(0))

    def step(x: Any) -> Any:
        return lin.weight.reshape(6), lin(x)

    def use(run: Any) -> str:
        flat, _ = run(sg.ones(1, 3))
        grads = lin.alloc_grads()
        loss = (lin(sg.ones(1, 3).trace(grads)) ** 2).sum()
        with sg.no_grad():  # a copy of values computed from the weight: no gradient wanted
            flat[...] = flat * 1.0
        try:
            loss.backward()
        except sg.TapeError:
            return "TapeError"
        return "ok"

    eager, replayed = _both(step, use)
    assert replayed == eager == ["TapeError"] * 4


def test_a_returned_parameter_or_argument_dict_is_the_object_itself() -> None:
    lin = nn.Linear[L[3], L[2]](generator=sg.Generator(0))

    def step(batch: dict[str, Any]) -> Any:
        return batch, lin.weight * 1.0, lin.weight

    def use(run: Any) -> tuple[bool, bool]:
        batch = {"x": sg.ones(3)}
        got, _, weight = run(batch)
        return got is batch, weight is lin.weight

    eager, replayed = _both(step, use)
    assert replayed == eager == [(True, True)] * 4


@dataclasses.dataclass
class _Output:
    """A model's output as a dataclass (as Hugging Face's ``ModelOutput``)."""

    loss: Any
    logits: Any


class _Logits(NamedTuple):
    loss: Any
    logits: Any


@pytest.mark.parametrize("kind", ["a dataclass", "a frozen dataclass", "a SimpleNamespace", "a named tuple"])
def test_an_output_object_made_in_the_step_is_a_new_one_holding_this_calls_tensors(kind: str) -> None:
    """A replay gave back the recorded dataclass or namespace itself, holding the first call's
    tensors, at every call (and a named tuple as a plain tuple)."""
    lin = nn.Linear[L[3], L[2]](generator=sg.Generator(0))
    frozen = dataclasses.make_dataclass("Frozen", ["loss", "logits"], frozen=True)

    def step(x: Any) -> Any:
        logits = lin(x)
        loss = (logits**2).mean()
        if kind == "a dataclass":
            return _Output(loss=loss, logits=logits)
        if kind == "a frozen dataclass":
            return frozen(loss=loss, logits=logits)
        if kind == "a SimpleNamespace":
            return types.SimpleNamespace(loss=loss, logits=logits)
        return _Logits(loss, logits)

    calls = iter(range(8))
    kept: list[Any] = []

    def use(run: Any) -> tuple[str, float, list[float]]:
        out = run(sg.full((1, 3), float(next(calls) % 4)))
        kept.append(out)
        return type(out).__name__, out.loss.item(), out.logits.tolist()[0]

    eager, replayed = _both(step, use)
    assert replayed == eager
    assert len({id(out) for out in kept[4:]}) == 4  # a new object at every call, as in eager


@pytest.mark.parametrize("kind", ["a generator", "a set", "an OrderedDict", "a closure"])
def test_an_object_made_in_the_step_that_a_replay_cannot_build_runs_it_eagerly(kind: str) -> None:
    def step(x: Any) -> Any:
        y = x * 2.0
        if kind == "a generator":
            return (t for t in [y])
        if kind == "a set":
            return {1, 2}
        if kind == "an OrderedDict":
            return collections.OrderedDict(y=y)
        return lambda: y

    def value(out: Any) -> Any:
        if kind == "a generator":
            return [t.item() for t in out]
        if kind == "an OrderedDict":
            return out["y"].item()
        return out().item() if kind == "a closure" else out

    compiled = sg.compile(step)
    with pytest.warns(sg.CompileWarning, match="which a replay would give back as recorded"):
        got = [value(compiled(sg.full((), float(i)))) for i in range(4)]
    assert got == [value(step(sg.full((), float(i)))) for i in range(4)]


@pytest.mark.parametrize("how", ["a key set", "an item appended", "an item replaced"])
def test_a_step_changing_a_list_or_dict_argument_runs_eagerly(how: str) -> None:
    """A step that changes a list or dict it is given (``batch["logits"] = ...``) does so at
    every call; a replay runs none of its Python and left the call's dict without the key."""

    def step(batch: Any) -> Any:
        y = batch[0] * 2.0 if isinstance(batch, list) else batch["x"] * 2.0
        if how == "a key set":
            batch["y"] = y
        elif how == "an item appended":
            batch.append(y)
        else:
            batch[0] = y
        return y

    make = (lambda: {"x": sg.ones(3)}) if how == "a key set" else (lambda: [sg.ones(3)])
    compiled = sg.compile(step)
    with pytest.warns(sg.CompileWarning, match="changes a list or dict it takes as an argument"):
        compiled(make())
    for _ in range(3):
        batch = make()
        compiled(batch)
        step(eager := make())
        assert len(batch) == len(eager) and all(
            type(batch[k]) is type(eager[k]) for k in (batch if isinstance(batch, dict) else range(len(batch)))
        )
        assert isinstance(batch, dict) or batch[0].tolist() == eager[0].tolist()
    assert compiled.eager_reason is not None


def _warned_first(compiled: Any, x: Any, call: int, match: str) -> Any:
    """``compiled(x)``, the first call (the recording) required to give the CompileWarning
    ``match`` names."""
    if call != 0:
        return compiled(x)
    with pytest.warns(sg.CompileWarning, match=match):
        return compiled(x)


@pytest.mark.parametrize("returned", ["the loss", "the logits beside a loss it ran backward from"])
def test_a_step_returning_a_tensor_to_run_backward_from_runs_eagerly(returned: str) -> None:
    """A compiled forward pass that traces inside and gives back the loss (the caller runs
    backward) was replayed: from the second call the loss came back untraced, and the caller's
    ``loss.backward()`` raised 'backward expects traced outputs'. Eager lets the caller start a
    pass from it, which a replay cannot: the step runs eagerly, with the warning, and the
    gradients are eager's at every call."""
    lin = nn.Linear[L[3], L[2]](generator=sg.Generator(0))
    grads = lin.alloc_grads()

    def step(x: Any) -> Any:
        grads.zero()
        logits = lin(x.trace(grads))
        loss = (logits**2).sum()
        if returned == "the loss":
            return loss
        loss.backward()
        return logits

    compiled = sg.compile(step)
    for call in range(3):
        x = sg.tensor(np.full((2, 3), call + 1.0, dtype=np.float32))
        out = _warned_first(compiled, x, call, "returns a traced tensor a backward pass could still start")
        out.sum().backward()
        got = grads[lin.weight].numpy().copy()
        step(x).sum().backward()
        np.testing.assert_array_equal(got, grads[lin.weight].numpy())
    assert compiled.eager_reason is not None


def test_a_step_returning_a_traced_input_whose_gradient_the_caller_reads_runs_eagerly() -> None:
    """A saliency-style step gives back its traced input so that the caller reads grads[x]
    after it: from the second call a replay gave the input back untraced, and grads[x] raised
    'expects a traced leaf', with no warning. The step runs eagerly, and grads[x] is eager's."""
    lin = nn.Linear[L[3], L[2]](generator=sg.Generator(0))
    grads, opt = lin.alloc_grads(), sg.optim.SGD(lin, lr=0.1)
    twin = copy.deepcopy(lin)
    twin_grads, twin_opt = twin.alloc_grads(), sg.optim.SGD(twin, lr=0.1)

    def step_of(model: Any, g: Any, o: Any) -> Any:
        def step(x: Any) -> Any:
            g.zero()
            traced = x.trace(g, keep_grad=True)
            ((model(traced) ** 2).mean()).backward()
            o.update(model, g)
            return traced

        return step

    compiled, eager = sg.compile(step_of(lin, grads, opt)), step_of(twin, twin_grads, twin_opt)
    for call in range(3):
        x = sg.tensor(np.full((2, 3), call + 1.0, dtype=np.float32))
        mine = _warned_first(compiled, x, call, "returns a traced input whose gradient the caller may read")
        theirs = eager(x)
        np.testing.assert_array_equal(grads[mine].numpy(), twin_grads[theirs].numpy())
    assert compiled.eager_reason is not None


def test_a_training_step_returning_its_loss_is_still_replayed() -> None:
    """The loss a step ran backward from, or whose gradients an update used, starts no further
    pass (eager raises TapeError too): given back, it does not stop replays."""
    lin = nn.Linear[L[3], L[2]](generator=sg.Generator(0))
    grads, opt = lin.alloc_grads(), sg.optim.SGD(lin, lr=0.1)

    def step(x: Any) -> Any:
        grads.zero()
        logits = lin(x.trace(grads))
        loss = (logits**2).sum()
        loss.backward()
        opt.update(lin, grads)
        return loss, logits

    compiled = sg.compile(step)
    for _ in range(3):
        compiled(sg.ones(2, 3))
    assert compiled.eager_reason is None and compiled.recordings[0].replays == 2


# --------------------------------------------------------------------------- gradients the step does not zero
def _accumulating(
    compiled: bool, where: str, k: int, batches: list[tuple[Any, Any]], max_recordings: int = 8
) -> tuple[Any, Any, Any]:
    model = MLP(sg.Generator(0))
    opt, grads = sg.optim.Adam(model, lr=0.01), model.alloc_grads()

    def step(x: Any, y: Any, last: int) -> Any:
        loss = sg.losses.cross_entropy(model(x.trace(grads)), y) / float(k)
        loss.backward()
        if last:
            opt.update(model, grads)
            grads.zero()
        return loss

    run = sg.compile(step, max_recordings=max_recordings) if compiled else step
    grads.zero()
    losses: list[float] = []
    for i, (x, y) in enumerate(batches):
        last = (i + 1) % k == 0
        losses.append(run(x, y, int(last and where != "update outside")).item())
        if last and where == "update outside":
            opt.update(model, grads)
            grads.zero()
    return losses, _weights(model), run


@pytest.mark.parametrize("where", ["update outside", "update inside under an int argument"])
def test_gradient_accumulation_equals_eager_bit_for_bit(where: str) -> None:
    """Gradient accumulation as a PyTorch user writes it: the step only adds a batch's gradient
    (its loss divided by k); the caller zeroes every k calls and updates there, or the step
    updates and zeroes when an int argument says so. Ten calls give eager's losses and weights
    bit for bit (a replay for the fresh and for the accumulating gradients, each recorded)."""
    batches = [_data((5, 8), seed=i) for i in range(10)]
    eager_losses, eager_weights, _ = _accumulating(False, where, 2, batches)
    losses, weights, compiled = _accumulating(True, where, 2, batches)
    assert losses == eager_losses
    for mine, theirs in zip(weights, eager_weights, strict=True):
        np.testing.assert_array_equal(mine, theirs)
    assert compiled.eager_reason is None
    assert sum(r.replays for r in compiled.recordings) == 8


@pytest.mark.parametrize("k", [2, 3])
def test_accumulation_zeroed_every_k_calls_keeps_replaying_under_few_recordings(k: int) -> None:
    """The caller zeroes (and updates) every k calls: a call that finds the gradients as no
    recording found them records again (the fresh and the accumulating ones), but a replay
    follows, so the step never falls back to eager, even under max_recordings=2 (no warning)."""
    batches = [_data((5, 8), seed=i) for i in range(12)]
    eager_losses, eager_weights, _ = _accumulating(False, "update outside", k, batches)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.CompileWarning)
        losses, weights, compiled = _accumulating(True, "update outside", k, batches, max_recordings=2)
    assert losses == eager_losses
    for mine, theirs in zip(weights, eager_weights, strict=True):
        np.testing.assert_array_equal(mine, theirs)
    assert compiled.eager_reason is None
    assert sum(r.replays for r in compiled.recordings) == 10


def test_gradients_never_zeroed_fall_back_to_eager_after_max_recordings() -> None:
    """A training step that zeroes its gradients neither itself nor between calls finds them used
    by the last update at each call (eager raises TapeError from the second call on); each call
    recorded again, silently, replaying none. After max_recordings such calls in a row the
    step runs eagerly, with a CompileWarning naming the likely cause; every call raises what
    eager raises."""
    outcomes: list[list[Any]] = []
    for compiled in (False, True):
        model = MLP(sg.Generator(0))
        opt, grads = sg.optim.SGD(model, lr=0.1), model.alloc_grads()

        def step(x: Any, y: Any) -> Any:
            loss = sg.losses.cross_entropy(model(x.trace(grads)), y)  # noqa: B023 -- called in this iteration
            loss.backward()
            opt.update(model, grads)  # noqa: B023
            return loss

        run = sg.compile(step, max_recordings=2) if compiled else step
        got: list[Any] = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for i in range(6):
                try:
                    got.append(run(*_data((5, 8), seed=i)).item())
                except sg.TapeError as error:
                    got.append(str(error))
        outcomes.append(got)
        if compiled:
            assert isinstance(run, sg.CompiledStep)
            said = [str(w.message) for w in caught if issubclass(w.category, sg.CompileWarning)]
            assert len(said) == 1
            assert "last 3 calls" in said[0]
            assert "grads.zero() called neither in the step nor between calls" in said[0]
            assert run.eager_reason is not None and "accumulating across calls" in run.eager_reason
            assert run.recordings == []
    assert outcomes[0] == outcomes[1]
    assert isinstance(outcomes[0][0], float) and all("already used" in o for o in outcomes[0][1:])


class _Partly(nn.Module):
    """A model one of whose layers takes no part in its output."""

    def __init__(self) -> None:
        self.used = nn.Linear[L[3], L[2]](generator=sg.Generator(0))
        self.spare = nn.Linear[L[3], L[2]](generator=sg.Generator(1))

    def __call__(self, x: Any) -> Any:
        return self.used(x)


def _warned(compiled: bool) -> list[tuple[Any, str, str, int]]:
    model = _Partly()
    opt, grads = sg.optim.SGD(model, lr=0.1, unused="warn"), model.alloc_grads()

    def step(x: Any) -> Any:
        grads.zero()
        loss = (model(x.trace(grads)) ** 2).mean()
        loss.backward()
        opt.update(model, grads)
        return loss

    run = sg.compile(step) if compiled else step
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(4):
            run(sg.ones(2, 3))
    return [(w.category, str(w.message), w.filename, w.lineno) for w in caught]


def test_unused_parameters_warn_at_every_replay_as_eager() -> None:
    """``unused="warn"``: eager warns at every update that leaves parameters without a gradient;
    a replay warns too (the same parameters go unused: it is fixed by the recording), from the
    same line, and not once only at the recording call."""
    eager, replayed = _warned(False), _warned(True)
    assert len(eager) == 4 and "spare.weight" in eager[0][1]
    assert [(c, m, f) for c, m, f, _ in replayed] == [(c, m, f) for c, m, f, _ in eager]
    assert len({line for *_, line in replayed}) == 1


def test_a_step_drawing_integers_is_replayed_with_eager_s_draws() -> None:
    """sg.randint floored and clipped its draws on the host (a NumPy round trip), which the
    recording took for a read of a tensor's values: every step calling it ran eagerly, with a
    warning blaming the step's code. It now works on the backend's arrays and replays."""

    def step(generator: Any) -> Any:
        return sg.randint(2, 9, (4, 5), generator=generator) + 1

    compiled = sg.compile(step)
    ours, twin = sg.Generator(11), sg.Generator(11)
    for _ in range(4):
        got, expected = compiled(ours).numpy(), step(twin).numpy()
        assert got.dtype == expected.dtype == np.int64
        np.testing.assert_array_equal(got, expected)
    assert compiled.eager_reason is None and compiled.recordings[0].replays == 3


def test_a_replay_under_np_errstate_raise_raises_as_eager() -> None:
    """Under ``np.errstate(divide="raise")`` eager raises ``FloatingPointError`` for a division
    by zero; a replay's compiled loop gave inf silently. The error state is part of the
    signature, and a recording made under one other than NumPy's default runs NumPy's passes,
    which raise as eager's do; under the default, the same step still fuses."""
    pytest.importorskip("numba")

    def step(x: Any, y: Any) -> Any:
        return (x / y + 1.0) * 2.0

    compiled = sg.compile(step)
    a, good, bad = (
        sg.tensor(np.array([1.0, 2.0, 3.0], np.float32)),
        sg.ones(3),
        sg.tensor(np.array([1.0, 0.0, 1.0], np.float32)),
    )
    with np.errstate(divide="raise"):
        for _ in range(3):
            assert compiled(a, good).tolist() == step(a, good).tolist()
        with pytest.raises(FloatingPointError):
            step(a, bad)
        with pytest.raises(FloatingPointError):
            compiled(a, bad)
    (under_raise,) = compiled.recordings
    assert under_raise.replays >= 2 and under_raise.fused_loops == 0
    with np.errstate(divide="ignore"):  # inf, as the loops give: the default's recording
        assert compiled(a, bad).tolist() == step(a, bad).tolist()
    assert compiled(a, good).tolist() == step(a, good).tolist()
    assert len(compiled.recordings) == 2 and max(r.fused_loops for r in compiled.recordings) > 0
