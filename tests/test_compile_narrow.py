"""sg.compile's row narrowing: a forward pass whose result reads some rows (the last
position) computes only those rows where it can, and gives what eager gives, on every call."""

from __future__ import annotations

import random
import warnings
from collections.abc import Callable, Iterator
from typing import Any, Literal as L

import numpy as np
import pytest

import shapegrad as sg
from shapegrad import _compile, _compile_narrow, nn

RTOL, ATOL = 1e-4, 1e-5


@pytest.fixture(autouse=True)
def _records_on_numpy(numpy_backend: str) -> None:
    """sg.compile records on the NumPy backend only."""


@pytest.fixture(autouse=True)
def _narrowing_never_rejected(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A narrowed replay that disagrees with its recording is thrown away (whole, it is
    right): here every one must agree, so that the rules are tested, not that safety net."""
    rejected: list[str] = []
    checked = _compile.agrees

    def agrees(recorded: list[Any], replayed: tuple[Any, ...]) -> bool:
        same = checked(recorded, replayed)
        if not same:
            rejected.append(repr((recorded, replayed)))
        return same

    monkeypatch.setattr(_compile, "agrees", agrees)
    yield rejected
    assert not rejected, rejected


def _same(compiled: Any, eager: Any) -> None:
    a, b = (
        np.asarray(compiled.numpy() if isinstance(compiled, sg.Tensor) else compiled),
        np.asarray(eager.numpy() if isinstance(eager, sg.Tensor) else eager),
    )
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


def _check(fn: Callable[[Any], Any], inputs: list[Any]) -> sg.CompiledStep[Any, Any]:
    """``sg.compile(fn)`` gives eager's result on each input (the first records, the rest replay)."""
    compiled = sg.compile(fn)
    for x in inputs:
        _same(compiled(x), fn(x))
    assert compiled.eager_reason is None
    assert compiled.recordings[0].replays == len(inputs) - 1
    return compiled


class TinyLM(nn.Module):
    """A causal transformer LM as a user writes one with the library's layers."""

    def __init__(self, generator: sg.Generator) -> None:
        self.embed = nn.Embedding[L[32], L[16]](generator=generator)
        self.blocks = [nn.TransformerEncoderBlock[L[16]](num_heads=2, ff_dim=32, generator=generator) for _ in range(2)]
        self.norm = nn.LayerNorm[L[16]]()

    def __call__(self, ids: Any) -> Any:
        h = self.embed(ids)
        for block in self.blocks:
            h = block(h, causal=True)
        return self.norm(h) @ self.embed.weight.T


def _ids(seed: int, batch: int = 1, length: int = 12) -> Any:
    return sg.tensor(np.random.default_rng(seed).integers(0, 32, (batch, length)))


def test_the_last_position_of_a_transformer_runs_narrowed_and_matches_eager() -> None:
    model = TinyLM(sg.Generator(0))
    model.eval()
    compiled = _check(lambda ids: model(ids)[:, -1], [_ids(s) for s in range(4)])
    recording = compiled.recordings[0]
    # the last block's queries, attention, projection, MLP, norms and the head
    assert recording.narrowed_operations >= 20, recording
    assert "narrowed to the rows read" in repr(recording)


@pytest.mark.parametrize("batch", [2, 3])
def test_a_batch_narrows_through_the_flattening_of_linear_layers(batch: int) -> None:
    """nn.Linear runs (B, T, D) as (B·T, D): the last position of every sequence is every
    T-th row there (a step), and narrows as with one sequence."""
    model = TinyLM(sg.Generator(0))
    model.eval()
    compiled = _check(lambda ids: model(ids)[:, -1], [_ids(s, batch) for s in range(3)])
    assert compiled.recordings[0].narrowed_operations >= 20, compiled.recordings[0]


def test_nanogpt_reads_its_last_position_by_a_list_index() -> None:
    """nanoGPT's generate: ``lm_head(x[:, [-1], :])``, the index list an array in the recording."""
    model = TinyLM(sg.Generator(3))
    model.eval()

    def last_logits(ids: Any) -> Any:
        h = model.embed(ids)
        for block in model.blocks:
            h = block(h, causal=True)
        return model.norm(h[:, [-1], :]) @ model.embed.weight.T

    compiled = _check(last_logits, [_ids(s, 2) for s in range(3)])
    assert compiled.recordings[0].narrowed_operations >= 20, compiled.recordings[0]


def test_an_in_place_write_read_whole_by_an_earlier_write_is_not_narrowed() -> None:
    """``out=h`` after ``h[0, 0] = 3``: the write into h reads all of h, so the product into
    it cannot run on the rows the result reads."""

    def fn(x: Any, w: Any) -> Any:
        h = x * w
        h[0, 0] = 3.0
        np.multiply(h, 2.0, out=h)
        return h[:, 1:3]

    compiled = sg.compile(fn)
    w = np.float32(1.5) * np.ones((4, 4), dtype=np.float32)
    for s in range(3):
        x = np.random.default_rng(s).standard_normal((4, 4)).astype(np.float32)
        np.testing.assert_allclose(compiled(x, w), fn(x, w), rtol=RTOL, atol=ATOL)
    assert compiled.eager_reason is None


def test_numpy_reshapes_that_merge_and_split_the_read_axis() -> None:
    """A step's NumPy math: the read axis merged with another, split, and transposed (.mT)."""

    def merged(a: Any, w: Any) -> Any:  # (B, T, D) -> (B*T, D) @ w -> (B, T, E), last T
        b, t, d = a.shape
        return (a.reshape(b * t, d) @ w).reshape(b, t, -1)[:, -1]

    def split(a: Any, w: Any) -> Any:  # (B*T, D) -> (B, T, D): the first sequence's rows
        return np.tanh(a.reshape(3, 4, 5) @ w)[0]

    def transposed(a: Any, w: Any) -> Any:
        return (np.tanh(a.reshape(3, 4, 5)).mT)[..., -1]

    w = np.random.default_rng(9).standard_normal((5, 6)).astype(np.float32)
    for fn in (merged, split, transposed):
        compiled = sg.compile(fn)
        for s in range(3):
            a = np.random.default_rng(s).standard_normal((3, 4, 5) if fn is merged else (12, 5)).astype(np.float32)
            np.testing.assert_allclose(compiled(a, w), fn(a, w), rtol=RTOL, atol=ATOL)
        assert compiled.eager_reason is None
        assert compiled.recordings[0].narrowed_operations > 0, fn.__name__


def test_greedy_decoding_gives_eager_tokens() -> None:
    model = TinyLM(sg.Generator(1))
    model.eval()

    def next_token(ids: Any) -> Any:
        return model(ids)[0, -1].argmax()

    compiled = sg.compile(next_token)
    ids = list(np.random.default_rng(3).integers(0, 32, 12))
    for _ in range(10):
        window = sg.tensor(np.array([ids[-12:]]))
        token = int(compiled(window).item())
        assert token == int(next_token(window).item())
        ids.append(token)
    assert compiled.recordings[0].narrowed_operations > 0


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize(
    "select",
    [
        lambda h: h[:, -1],
        lambda h: h[:, -1, :],
        lambda h: h[:, 4],
        lambda h: h[:, -3:],
        lambda h: h[:, 2:5],
        lambda h: h.narrow(1, 6, 2),
        lambda h: h[0],
        lambda h: h[:, -1].argmax(-1),
        lambda h: h.sum(-1)[:, -1],
        lambda h: h[:, [-1], :],
    ],
    ids=[
        "last",
        "last-colon",
        "fourth",
        "last-three",
        "range",
        "narrow",
        "first-batch",
        "argmax",
        "sum-then-last",
        "list-index",
    ],
)
def test_selections_of_a_transformer_match_eager(select: Callable[[Any], Any], batch: int) -> None:
    model = TinyLM(sg.Generator(2))
    model.eval()
    _check(lambda ids: select(model(ids)), [_ids(s, batch) for s in range(3)])


class HandAttention(nn.Module):
    """Attention, RMSNorm and a softmax written out by hand, PyTorch style."""

    def __init__(self, generator: sg.Generator) -> None:
        self.q = nn.Linear[L[8], L[8]](generator=generator)
        self.k = nn.Linear[L[8], L[8]](generator=generator)
        self.v = nn.Linear[L[8], L[8]](generator=generator)
        self.out = nn.Linear[L[8], L[5]](generator=generator)
        self.scale = sg.tensor(np.linspace(0.5, 1.5, 8).astype(np.float32))

    def rms(self, x: Any) -> Any:
        return x * sg.rsqrt(sg.mean(x * x, -1, keepdims=True) + 1e-5) * self.scale

    def __call__(self, x: Any) -> Any:
        b, t, d = x.shape
        h = self.rms(x)
        q = self.q(h).reshape(b, t, 2, 4).swapaxes(1, 2)
        k = self.k(h).reshape(b, t, 2, 4).swapaxes(1, 2)
        v = self.v(h).reshape(b, t, 2, 4).swapaxes(1, 2)
        scores = q @ k.swapaxes(-1, -2) * (1 / 2.0)
        causal = sg.tril(sg.ones(t, t)) > 0
        scores = sg.where(causal, scores, sg.full_like(scores, -1e9))
        e = sg.exp(scores - sg.max(scores, -1, keepdims=True))
        weights = e / sg.sum(e, -1, keepdims=True)
        mixed = (weights @ v).swapaxes(1, 2).reshape(b, t, d)
        return self.out(x + sg.tanh(mixed))


def _x(seed: int, batch: int = 2) -> Any:
    return sg.tensor(np.random.default_rng(seed).standard_normal((batch, 7, 8)).astype(np.float32))


@pytest.mark.parametrize(
    "select",
    [lambda y: y[:, -1], lambda y: y[:, -2:], lambda y: y[1, 3], lambda y: y.mean(1), lambda y: y[:, :, 0]],
    ids=["last", "last-two", "one-row", "mean-over-positions", "one-column"],
)
def test_hand_written_attention_matches_eager(select: Callable[[Any], Any]) -> None:
    model = HandAttention(sg.Generator(4))
    _check(lambda x: select(model(x)), [_x(s) for s in range(3)])


def test_results_that_read_every_row_are_not_narrowed() -> None:
    model = HandAttention(sg.Generator(5))
    compiled = _check(lambda x: model(x).mean(1), [_x(s) for s in range(3)])
    assert compiled.recordings[0].narrowed_operations == 0


def test_a_training_step_is_left_whole() -> None:
    """Narrowing runs only where a replay changes nothing but its own arrays."""
    model = TinyLM(sg.Generator(6))
    opt = sg.optim.Adam(model, lr=1e-3)
    grads = model.alloc_grads()

    def step(ids: Any, label: Any) -> Any:
        grads.zero()
        logits = model(ids.trace(grads))[:, -1]
        loss = sg.losses.cross_entropy(logits, label)
        loss.backward()
        opt.update(model, grads)
        return loss

    compiled = sg.compile(step)
    label = sg.tensor(np.array([3]))
    for s in range(3):
        compiled(_ids(s), label)
    assert compiled.eager_reason is None
    assert compiled.recordings[0].narrowed_operations == 0


def test_in_place_numpy_writes_keep_what_eager_gives() -> None:
    """A step's NumPy math on an array argument: a bias added in place into a product that is
    then read at its last row narrows; a write into memory read whole after it does not."""
    w = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)

    def bias_in_place(a: Any, w: Any) -> Any:
        y = a @ w
        y += 1.0
        return y[-1]

    def write_then_read_whole(a: Any, w: Any) -> Any:
        y = a * w
        view = y.reshape(2, 8)
        view += 1.0
        return y[-1] + y.sum(0)

    def view_written_after_a_narrowed_read(a: Any, w: Any) -> Any:
        y = a * w
        last = y[-1] * 3.0
        y[0] += 5.0
        return last, y

    def view_narrowed_but_base_read_whole(a: Any, w: Any) -> Any:
        # v's last row is all that is read of v, but writing through v writes all of y,
        # which is read whole: narrowed, the write would reach one row of y
        y = a * w
        v = y.reshape(4, 4)
        v += 1.0
        return v[-1], y

    for fn in (
        bias_in_place,
        write_then_read_whole,
        view_written_after_a_narrowed_read,
        view_narrowed_but_base_read_whole,
    ):
        compiled = sg.compile(fn)
        for s in range(3):
            a = np.random.default_rng(s).standard_normal((4, 4)).astype(np.float32)
            got, want = compiled(a.copy(), w), fn(a.copy(), w)
            for g, e in zip(
                got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,), strict=True
            ):
                np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=RTOL, atol=ATOL)
        assert compiled.eager_reason is None


# --------------------------------------------------------------------------- random programs
def _program(rng: random.Random) -> tuple[Callable[[Any], Any], str]:
    """A random forward pass over (B, T, D) activations, written with the library's ops,
    then a random selection of its result."""
    gen = sg.Generator(rng.randrange(1000))
    d = 6
    weights = [sg.randn(d, d, generator=gen) * 0.4 for _ in range(4)]
    bias = sg.randn(d, generator=gen) * 0.1
    steps: list[tuple[str, Callable[[Any], Any]]] = [
        ("linear", lambda h: h @ weights[0] + bias),
        ("flat-linear", lambda h: (h.reshape(-1, d) @ weights[0]).reshape(h.shape) + bias),
        ("layer_norm", lambda h: sg.layer_norm(h)),
        ("gelu", lambda h: sg.gelu(h, approximate="none")),
        ("relu", lambda h: h.relu()),
        ("sigmoid", lambda h: h.sigmoid()),
        ("tanh", lambda h: h.tanh()),
        ("rms", lambda h: h * sg.rsqrt(sg.mean(h * h, -1, keepdims=True) + 1e-5)),
        ("softmax", lambda h: sg.softmax(h, -1)),
        ("hand-softmax", lambda h: sg.exp(h - sg.max(h, -1, keepdims=True))),
        ("centre-over-T", lambda h: h - sg.mean(h, 1, keepdims=True)),
        ("cumsum-over-T", lambda h: sg.cumsum(h, 1) * 0.3),
        ("roll-over-T", lambda h: sg.roll(h, 1, 1)),
        ("attention", lambda h: sg.softmax((h @ weights[1]) @ (h @ weights[2]).mT, -1) @ (h @ weights[3])),
        (
            "causal-attention",
            lambda h: (
                sg.softmax(
                    (h @ weights[1]) @ (h @ weights[2]).mT,
                    -1,
                    scale=0.5,
                    mask=sg.tril(sg.ones(h.shape[1], h.shape[1])) > 0,
                )
                @ h
            ),
        ),
        ("heads", lambda h: h.reshape(h.shape[0], h.shape[1], 2, 3).swapaxes(1, 2).swapaxes(1, 2).reshape(h.shape)),
        ("transpose-twice", lambda h: h.mT.mT * 1.5),
        ("residual", lambda h: h + h.tanh()),
        ("max-over-D", lambda h: h * sg.max(h, -1, keepdims=True)),
    ]
    chosen = [rng.choice(steps) for _ in range(rng.randrange(2, 7))]
    selections: list[tuple[str, Callable[[Any], Any]]] = [
        ("[:, -1]", lambda h: h[:, -1]),
        ("[:, 2]", lambda h: h[:, 2]),
        ("[:, -2:]", lambda h: h[:, -2:]),
        ("[0, -1]", lambda h: h[0, -1]),
        ("[..., 0]", lambda h: h[..., 0]),
        ("[0]", lambda h: h[0]),
        ("whole", lambda h: h),
        ("argmax last", lambda h: h[:, -1].argmax(-1)),
    ]
    name, select = rng.choice(selections)

    def program(x: Any) -> Any:
        h = x
        for _, step in chosen:
            h = step(h)
        return select(h)

    return program, " → ".join(n for n, _ in chosen) + f" → {name}"


def test_random_programs_match_eager() -> None:
    rng = random.Random(0)
    narrowed = 0
    for _ in range(80):
        program, description = _program(rng)
        batch = rng.choice([1, 2, 3])
        inputs = [
            sg.tensor(np.random.default_rng(s).standard_normal((batch, 5, 6)).astype(np.float32)) for s in range(3)
        ]
        compiled = sg.compile(program)
        for x in inputs:
            got, want = compiled(x), program(x)
            try:
                _same(got, want)
            except AssertionError as error:
                raise AssertionError(f"{description}: {error}") from None
        assert compiled.eager_reason is None, description
        narrowed += compiled.recordings[0].narrowed_operations > 0
    assert narrowed >= 20  # the test exercises narrowing, not only whole recordings


def test_a_wrong_narrowing_is_thrown_away(
    monkeypatch: pytest.MonkeyPatch, _narrowing_never_rejected: list[str]
) -> None:
    """The safety net: a rule that narrowed the wrong rows (here a product narrowed on its
    other operand) gives a replay that disagrees with the recording; the whole recording
    replays instead, and the results are eager's."""
    rule = _compile_narrow._Rules.matmul

    def wrong(self: Any, op: Any, d: Any) -> Any:
        found = rule(self, op, d)
        if found is not None:
            for reg, need in list(found.inputs.items()):
                if need != _compile_narrow.WHOLE:
                    axis, start, stop, step = need
                    shift = -1 if start > 0 else 1
                    found.inputs[reg] = (axis, start + shift, stop + shift, step)
        return found

    monkeypatch.setattr(_compile_narrow._Rules, "matmul", wrong)
    model = TinyLM(sg.Generator(7))
    model.eval()
    compiled = _check(lambda ids: model(ids)[:, -1], [_ids(s) for s in range(3)])
    assert compiled.recordings[0].narrowed_operations == 0
    assert _narrowing_never_rejected  # it was caught
    _narrowing_never_rejected.clear()


def test_an_evaluation_loss_on_the_last_position_with_its_guards() -> None:
    """cross_entropy asks whether a label is ignored (a guard, asked again before each replay):
    the loss on the last position narrows and stays eager's when the labels change."""
    model = TinyLM(sg.Generator(8))
    model.eval()

    def loss(ids: Any, labels: Any) -> Any:
        return sg.losses.cross_entropy(model(ids)[:, -1], labels, ignore_index=-100)

    compiled = sg.compile(loss)
    for s, labels in enumerate([[1, 2], [3, -100], [-100, -100], [4, 5]]):
        ids, target = _ids(s, batch=2), sg.tensor(np.array(labels))
        _same(compiled(ids, target), loss(ids, target))
    assert compiled.eager_reason is None
    assert any(r.narrowed_operations > 0 for r in compiled.recordings)


def test_a_guard_on_a_narrowed_value_asks_its_question_at_every_replay() -> None:
    """A data-dependent branch (``bool()`` of a computed array) is asked by a separate guard
    function running only the ops that compute it before each replay: none of them may read
    a slice that only the narrowed program makes (it raised NameError at the first replay)."""
    w = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)

    def branch_on_the_last_row(a: Any, w: Any) -> Any:
        y = a @ w
        if (y[-1] > 0).all():
            return y[-1] * 2.0
        return y[-1] - 1.0

    compiled = sg.compile(branch_on_the_last_row)
    for s in range(4):
        a = np.random.default_rng(s).standard_normal((4, 4)).astype(np.float32)
        np.testing.assert_allclose(compiled(a, w), branch_on_the_last_row(a, w), rtol=RTOL, atol=ATOL)
    assert compiled.eager_reason is None


def test_a_reshape_in_fortran_order_is_not_narrowed_as_a_c_order_one() -> None:
    """``np.reshape(y, shape, "F")`` (the order given by position) keeps its order: narrowed as
    a C-order reshape it gave other values, which a first call on zeros (a warm-up) did not show."""

    def fortran(a: Any) -> Any:
        z = np.reshape(np.tanh(a), (3, 2, 4), "F")
        return z[-1] * 2.0

    compiled = sg.compile(fortran)
    inputs = [np.zeros((3, 8))] + [np.random.default_rng(s).standard_normal((3, 8)) for s in range(3)]
    for a in inputs:
        np.testing.assert_allclose(compiled(a), fortran(a), rtol=RTOL, atol=ATOL)
    assert compiled.eager_reason is None


def test_an_integer_and_a_list_apart_move_their_axis_to_the_front() -> None:
    """``y[0, :, :, [0]]``: an integer and a list are both advanced indices, and apart they put
    their one axis first, so the result's axes are not the input's in order. Read as if they
    were, ``z[:, -1]`` narrowed the input's third axis for the second; a first call on zeros
    did not show it."""

    def last(a: Any) -> Any:
        z = (a * 2.0)[0, :, :, [0]]
        return z[:, -1].sum(axis=-1)

    compiled = sg.compile(last)
    inputs = [np.zeros((1, 3, 4, 1))] + [np.random.default_rng(s).standard_normal((1, 3, 4, 1)) for s in range(3)]
    for a in inputs:
        np.testing.assert_allclose(compiled(a), last(a), rtol=RTOL, atol=ATOL)
    assert compiled.eager_reason is None


def test_an_index_list_written_later_through_a_view_is_not_taken_for_a_constant() -> None:
    """``h[:, idx]`` with ``idx = sg.tensor([0])``, then ``idx`` written through a view: the index
    the recording ended with ([2]) is not the one read ([0]); narrowed with it, the replay read
    row 2, which a first call on zeros did not show."""

    def step(x: Any) -> Any:
        idx = sg.tensor([0])
        picked = (x * 2.0)[:, idx]
        view = idx.reshape(1)
        view[0] = 2
        return picked

    compiled = sg.compile(step)
    inputs = [np.zeros((2, 3, 4))] + [np.random.default_rng(s).standard_normal((2, 3, 4)) for s in range(3)]
    for a in inputs:
        _same(compiled(sg.tensor(a)), step(sg.tensor(a)))
    assert compiled.eager_reason is None


@pytest.mark.parametrize("make", [lambda: sg.tensor([0.0, 0.0]), lambda: sg.zeros(2)], ids=["tensor-list", "zeros"])
def test_a_branch_on_an_array_the_step_wrote_in_place_follows_eager(make: Callable[[], Any]) -> None:
    """``t = sg.tensor([0.0, 0.0]); t[0] = x.sum(); if (t > 0).any()``: the guard asked its
    question again of the ops that made ``t`` (asarray, now pure), without the write, and
    answered as on the first call: a later call with a negative sum replayed the other branch.
    Such a branch runs eagerly."""

    def step(x: Any) -> Any:
        t = make()
        t[0] = x.sum()
        if (t > 0).any():
            return x * 2.0
        return x * 3.0

    compiled = sg.compile(step)
    for sign in (1.0, -1.0, 1.0, -1.0):
        x = sg.tensor(sign * np.ones(3))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.CompileWarning)
            got = compiled(x)
        _same(got, step(x))


def test_losses_on_the_last_position_narrow() -> None:
    """Recordings holding the fused cross-entropy kernel narrow: a mean loss over the last
    position, and per-position losses of which the last is read."""
    model = TinyLM(sg.Generator(9))
    model.eval()

    def last_loss(ids: Any, labels: Any) -> Any:
        return sg.losses.cross_entropy(model(ids)[:, -1], labels)

    def per_position(ids: Any, labels: Any) -> Any:
        return sg.losses.cross_entropy(model(ids), labels, reduction="none")[:, -1]

    for fn, shape in ((last_loss, (3,)), (per_position, (3, 12))):
        compiled = sg.compile(fn)
        for s in range(3):
            ids = _ids(s, batch=3)
            labels = sg.tensor(np.random.default_rng(s).integers(0, 32, shape))
            _same(compiled(ids, labels), fn(ids, labels))
        assert compiled.eager_reason is None
        assert compiled.recordings[0].narrowed_operations >= 20, (fn.__name__, compiled.recordings[0])


def test_a_comparison_of_floats_is_not_narrowed() -> None:
    """``(x @ w == (x @ w).max(axis=1, keepdims=True))[:, -1]``: narrowed, the first product's
    last row rounded otherwise than the whole second one, and the last position's maximum
    equalled no value of its column where eager's always does (16 calls in 40 gave other
    booleans). A comparison, an argmax or a cast giving booleans or integers from floats reads
    whole values, as eager does; a float result after one still narrows where it can."""
    w = sg.tensor(np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32))

    def is_maximum(x: Any) -> Any:
        return ((x @ w) == (x @ w).max(axis=1, keepdims=True))[:, -1]

    compiled = sg.compile(is_maximum)
    for seed in range(40):
        x = sg.tensor(np.random.default_rng(seed).standard_normal((2, 5, 4)).astype(np.float32))
        assert np.array_equal(compiled(x).numpy(), is_maximum(x).numpy()), f"call {seed}"
    assert compiled.recordings[0].narrowed_operations == 0
