"""Recurrent layers (issue #25): ``sg.nn.RNN``, ``LSTM`` and ``GRU`` against PyTorch's
``batch_first=True`` layers, from the same weights, in float64, on every backend."""

from __future__ import annotations

from typing import Any, Literal as L

import numpy as np
import pytest
import torch
from support.gradcheck import assert_gradients_match

import shapegrad as sg
from shapegrad import nn

CELLS: dict[str, tuple[Any, Any, dict[str, Any]]] = {
    "lstm": (nn.LSTM, torch.nn.LSTM, {}),
    "gru": (nn.GRU, torch.nn.GRU, {}),
    "rnn_tanh": (nn.RNN, torch.nn.RNN, {}),
    "rnn_relu": (nn.RNN, torch.nn.RNN, {"nonlinearity": "relu"}),
}


def _pair(
    cell: str,
    layers: int,
    bidirectional: bool,
    bias: bool = True,
    sizes: tuple[int, int] = (3, 4),
    batch_first: bool = True,
) -> Any:
    """A torch layer and a shapegrad layer holding a copy of its parameters (float64)."""
    ours, theirs, extra = CELLS[cell]
    torch.manual_seed(layers * 2 + bidirectional)
    reference = theirs(
        *sizes,
        num_layers=layers,
        bidirectional=bidirectional,
        bias=bias,
        batch_first=batch_first,
        dtype=torch.float64,
        **extra,
    )
    options = {} if batch_first else {"batch_first": False}  # the default, True, left out
    layer = ours(*sizes, layers, bidirectional=bidirectional, bias=bias, dtype="float64", **options, **extra)
    nn.from_torch(layer, reference)  # the settings compared, then PyTorch's names and layouts: a plain copy
    return reference, layer


def _states(cell: str, count: int, batch: int, hidden: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((count, batch, hidden)) for _ in range(2 if cell == "lstm" else 1)]


def _call(layer: Any, cell: str, x: Any, states: list[Any] | None) -> tuple[Any, list[Any]]:
    """``(output, [h_n] or [h_n, c_n])`` of either library's layer."""
    if states is None:
        out, final = layer(x)
    else:
        out, final = layer(x, tuple(states) if cell == "lstm" else states[0])
    return out, list(final) if cell == "lstm" else [final]


@pytest.mark.parametrize("batch_first", [True, False], ids=["batch-first", "steps-first"])
@pytest.mark.parametrize("given_states", [False, True], ids=["zero-state", "given-state"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["one-way", "bidirectional"])
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("cell", list(CELLS))
def test_outputs_states_and_every_gradient_match_torch(
    cell: str, layers: int, bidirectional: bool, given_states: bool, batch_first: bool, backend: str
) -> None:
    """issue #25: the output, final states and the gradients of every parameter, the input and
    the initial states equal PyTorch's autograd, from the same weights. Also with
    ``batch_first=False`` (PyTorch's default, once refused): ``(steps, batch, features)``
    inputs and outputs, the states ``(layers · directions, batch, hidden)`` either way."""
    reference, layer = _pair(cell, layers, bidirectional, batch_first=batch_first)
    count = layers * (2 if bidirectional else 1)
    states = _states(cell, count, 2, 4, 1) if given_states else None
    out = _matches_torch(reference, layer, cell, states, batch_first)
    width = 4 * (2 if bidirectional else 1)
    assert out.shape == ((2, 5, width) if batch_first else (5, 2, width))


def _matches_torch(
    reference: Any, layer: Any, cell: str, states: list[np.ndarray] | None, batch_first: bool = True
) -> Any:
    """The output, final states and the gradients of every parameter, the input and the
    initial states of ``layer`` equal ``reference``'s autograd on a batch of 2 sequences of 5
    steps of 3 features (``(2, 5, 3)``, or ``(5, 2, 3)`` with ``batch_first=False``); the
    output is returned."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 3) if batch_first else (5, 2, 3))
    tx = torch.tensor(x, requires_grad=True)
    tstates = None if states is None else [torch.tensor(s, requires_grad=True) for s in states]
    tout, tfinal = _call(reference, cell, tx, tstates)
    weights = [rng.standard_normal(tuple(t.shape)) for t in (tout, *tfinal)]
    tloss = sum((t * torch.tensor(w)).sum() for t, w in zip((tout, *tfinal), weights, strict=True))
    tloss.backward()

    grads = layer.alloc_grads()
    sx = sg.tensor(x).trace(grads, keep_grad=True)
    sstates = None if states is None else [sg.tensor(s).trace(grads, keep_grad=True) for s in states]
    out, final = _call(layer, cell, sx, sstates)
    loss = sum(((t * sg.tensor(w)).sum() for t, w in zip((out, *final), weights, strict=True)), sg.tensor(0.0))
    loss.backward()

    assert out.shape == tuple(tout.shape)
    for ours, theirs in zip((out, *final), (tout, *tfinal), strict=True):
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    for name, tensor in reference.named_parameters():
        assert tensor.grad is not None
        np.testing.assert_allclose(
            grads[getattr(layer, name)].numpy(), tensor.grad.numpy(), rtol=1e-9, atol=1e-11, err_msg=name
        )
    np.testing.assert_allclose(grads[sx].numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-11, err_msg="input")
    for k, (ours_s, theirs_s) in enumerate(zip(sstates or [], tstates or [], strict=True)):
        np.testing.assert_allclose(
            grads[ours_s].numpy(), theirs_s.grad.numpy(), rtol=1e-9, atol=1e-11, err_msg=f"state {k}"
        )
    return out


@pytest.mark.parametrize("cell", list(CELLS))
def test_without_bias_matches_torch(cell: str, numpy_backend: str) -> None:
    """issue #25: ``bias=False`` has no bias parameters, as PyTorch's."""
    reference, layer = _pair(cell, 1, False, bias=False)
    assert [n for n, _ in layer.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]
    x = np.random.default_rng(3).standard_normal((2, 4, 3))
    out, _ = _call(layer, cell, sg.tensor(x), None)
    np.testing.assert_allclose(out.numpy(), _call(reference, cell, torch.tensor(x), None)[0].detach().numpy())


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_dropout_between_layers_as_torchs(cell: str, numpy_backend: str) -> None:
    """PyTorch's dropout=: each layer's output but the last's, in training mode only. It was
    no argument (word_language_model's nn.LSTM(..., dropout=0.5) had nowhere to go). Equal to
    one-layer layers with a Dropout between them drawing the same values; in eval mode, and
    with one layer, the layer without dropout."""
    reference, plain = _pair(cell, 2, False)
    ours = CELLS[cell][0]
    layer = ours(3, 4, 2, dropout=0.4, dtype="float64")
    nn.from_torch(layer, reference.state_dict())
    first, second = ours(3, 4, dtype="float64"), ours(4, 4, dtype="float64")
    state = {k: v for k, v in reference.state_dict().items()}
    nn.from_torch(first, {k: v for k, v in state.items() if k.endswith("l0")})
    nn.from_torch(second, {k.replace("l1", "l0"): v for k, v in state.items() if k.endswith("l1")})
    x = sg.tensor(np.random.default_rng(5).standard_normal((2, 6, 3)))
    sg.seed(7)
    out, _ = layer(x)
    sg.seed(7)
    expected, _ = second(nn.Dropout(0.4)(first(x)[0]))
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-12)
    assert not np.allclose(out.numpy(), plain(x)[0].numpy())
    layer.eval()
    np.testing.assert_allclose(layer(x)[0].numpy(), plain(x)[0].numpy(), rtol=1e-12)
    assert ours(3, 4, dropout=0.5).dropout == 0.5
    with pytest.raises(sg.HyperparameterError, match=r"expects dropout to be a probability in \[0, 1\].*found 1.5"):
        ours(3, 4, 2, dropout=1.5)


@pytest.mark.parametrize("cell", list(CELLS))
def test_dropout_of_one_zeroes_the_inner_outputs_as_torchs(cell: str, numpy_backend: str) -> None:
    """PyTorch takes dropout=1 (in training mode each layer's output but the last's is all
    zeros: the next layer sees only its biases); it was refused ('dropout expects 0 <= p < 1').
    The output, final states and every gradient equal PyTorch's, loaded from its model (whose
    dropout from_torch compares)."""
    reference, _ = _pair(cell, 2, False)
    reference.dropout = 1.0
    ours, _, extra = CELLS[cell]
    layer = ours(3, 4, 2, dropout=1.0, dtype="float64", **extra)
    nn.from_torch(layer, reference)
    assert layer.training and reference.training
    _matches_torch(reference, layer, cell, _states(cell, 2, 2, 4, 1))
    layer.eval()
    reference.eval()  # no dropout: the layers' own numbers
    x = np.random.default_rng(2).standard_normal((2, 5, 3))
    expected = _call(reference, cell, torch.tensor(x), None)[0].detach().numpy()
    np.testing.assert_allclose(_call(layer, cell, sg.tensor(x), None)[0].numpy(), expected, rtol=1e-10)


@pytest.mark.parametrize("cell", list(CELLS))
def test_steps_first_layers_are_the_batch_first_ones_transposed(cell: str, numpy_backend: str) -> None:
    """batch_first=False reads (steps, batch, features) and gives the batch-first layer's
    output with its first two axes swapped and the same final states; in training mode its
    dropout between layers is drawn in its own layout, as a Dropout on that layer's output."""
    ours, _, extra = CELLS[cell]
    first = ours(3, 4, 2, bidirectional=True, dtype="float64", **extra)
    second = ours(3, 4, 2, bidirectional=True, dtype="float64", batch_first=False, **extra)
    second.load_state_dict(first.state_dict())
    assert (first.batch_first, second.batch_first) == (True, False)
    x = np.random.default_rng(8).standard_normal((2, 6, 3))
    states = [sg.tensor(s) for s in _states(cell, 4, 2, 4, 9)]
    out, final = _call(first, cell, sg.tensor(x), states)
    out_t, final_t = _call(second, cell, sg.tensor(x.transpose(1, 0, 2).copy()), states)
    np.testing.assert_allclose(out_t.numpy(), out.numpy().transpose(1, 0, 2), rtol=1e-12, atol=1e-14)
    for a, b in zip(final_t, final, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-14)
    dropped = ours(3, 4, 2, dropout=0.4, dtype="float64", batch_first=False, **extra)
    one, two = (
        ours(3, 4, dtype="float64", batch_first=False, **extra),
        ours(4, 4, dtype="float64", batch_first=False, **extra),
    )
    state = dropped.state_dict()
    one.load_state_dict({k: v for k, v in state.items() if k.endswith("l0")})
    two.load_state_dict({k.replace("l1", "l0"): v for k, v in state.items() if k.endswith("l1")})
    steps_first = sg.tensor(x.transpose(1, 0, 2).copy())
    sg.seed(7)
    found, _ = dropped(steps_first)
    sg.seed(7)
    expected, _ = two(nn.Dropout(0.4)(one(steps_first)[0]))
    np.testing.assert_allclose(found.numpy(), expected.numpy(), rtol=1e-12)


def test_batch_first_is_compared_by_from_torch_and_shapes_name_the_layout(numpy_backend: str) -> None:
    """from_torch compares batch_first either way (PyTorch's default is False, ours True),
    naming both layouts and the fix; a steps-first layer's shape errors name its layout."""
    with pytest.raises(
        sg.CheckpointError, match=r"batch_first=False in PyTorch, True here.*build it with batch_first=False"
    ):
        nn.from_torch(nn.LSTM(3, 4), torch.nn.LSTM(3, 4))
    with pytest.raises(
        sg.CheckpointError, match=r"batch_first=True in PyTorch, False here: its inputs are \(batch, steps"
    ):
        nn.from_torch(nn.GRU(3, 4, batch_first=False), torch.nn.GRU(3, 4, batch_first=True))
    nn.from_torch(nn.RNN(3, 4, batch_first=False), torch.nn.RNN(3, 4))
    lstm = nn.LSTM(3, 4, 2, batch_first=False)
    with pytest.raises(sg.ShapeError, match=r"expected input \(steps, batch, 3\) \(batch_first=False\)"):
        lstm(sg.ones(5, 2, 4))
    with pytest.raises(sg.ShapeError, match=r"\(h_0, c_0\) of shape \(2, 2, 4\).*\(2, 5, 4\)"):
        lstm(sg.ones(5, 2, 3), (sg.zeros(2, 5, 4), sg.zeros(2, 5, 4)))
    with pytest.raises(sg.ShapeError, match=r"at least one step"):
        lstm(sg.ones(0, 2, 3))
    with pytest.raises(sg.HyperparameterError, match="batch_first True or False, found 0"):
        nn.GRU(3, 4, batch_first=0)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize("batch_first", [True, False], ids=["batch-first", "steps-first"])
@pytest.mark.parametrize("cell", list(CELLS))
def test_gradients_match_finite_differences(cell: str, batch_first: bool, backend: str) -> None:
    """issue #25: input and initial-state gradients of a tiny 2-layer bidirectional layer
    equal central differences in float64 (a (2, 3, 2) input is 2 sequences of 3 steps, or 3
    of 2 with batch_first=False: the states' batch is the input's)."""
    _, layer = _pair(cell, 2, True, sizes=(2, 3), batch_first=batch_first)
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((2, 3, 2)), *_states(cell, 4, 2 if batch_first else 3, 3, 5)]

    def fn(x: Any, *states: Any) -> Any:
        out, final = _call(layer, cell, x, list(states))
        return sg.concat([out.reshape(-1), *(f.reshape(-1) for f in final)])

    assert_gradients_match(fn, arrays)


def test_parameter_names_shapes_and_initialisation_are_torchs(numpy_backend: str) -> None:
    """issue #25: names and shapes as ``torch.nn.LSTM``'s, values from ``U(±1/√hidden)``."""
    layer = nn.LSTM[L[8], L[16], L[2]](num_layers=2, bidirectional=True, generator=sg.Generator(0))
    reference = torch.nn.LSTM(8, 16, num_layers=2, bidirectional=True, batch_first=True)
    assert [(n, t.shape) for n, t in layer.named_parameters()] == [
        (n, tuple(t.shape)) for n, t in reference.named_parameters()
    ]
    values = np.concatenate([t.numpy().ravel() for t in layer.parameters()])
    assert values.dtype == np.float32
    assert np.abs(values).max() <= 0.25 and np.abs(values).max() > 0.24
    assert nn.GRU[L[3], L[5]]().weight_ih_l0.shape == (15, 3)
    assert nn.RNN(3, 5).weight_hh_l0.shape == (5, 5)


def test_training_ten_steps_gives_torchs_losses(backend: str) -> None:
    """issue #25: a small LSTM model trained for ten SGD steps in both libraries from the same
    weights has the same losses."""
    torch.manual_seed(0)
    t_lstm = torch.nn.LSTM(3, 6, num_layers=2, batch_first=True, dtype=torch.float64)
    t_head = torch.nn.Linear(6, 1, dtype=torch.float64)

    class Model(nn.Module):
        def __init__(self) -> None:
            self.lstm = nn.LSTM(3, 6, 2, dtype="float64")
            self.head = nn.Linear(6, 1, dtype="float64")

        def __call__(self, x: Any) -> Any:
            out, _ = self.lstm(x)
            return self.head(out[:, -1])

    model = Model()
    for name, value in t_lstm.named_parameters():
        setattr(model.lstm, name, nn.parameter(sg.tensor(value.detach().numpy())))
    model.head.weight = nn.parameter(sg.tensor(t_head.weight.detach().numpy().T.copy()))
    model.head.bias = nn.parameter(sg.tensor(t_head.bias.detach().numpy()))
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((8, 7, 3)), rng.standard_normal((8, 1))

    t_opt = torch.optim.SGD([*t_lstm.parameters(), *t_head.parameters()], lr=0.5)
    expected = []
    for _ in range(10):
        t_opt.zero_grad()
        out, _ = t_lstm(torch.tensor(x))
        loss = torch.nn.functional.mse_loss(t_head(out[:, -1]), torch.tensor(y))
        loss.backward()
        t_opt.step()
        expected.append(loss.item())

    opt = sg.optim.SGD(model, lr=0.5)
    grads = model.alloc_grads()
    found = []
    for _ in range(10):
        grads.zero()
        loss = sg.losses.mse(model(sg.tensor(x).trace(grads)), sg.tensor(y))
        loss.backward()
        opt.update(model, grads)
        found.append(loss.item())
    assert expected[-1] < expected[0]
    np.testing.assert_allclose(found, expected, rtol=1e-9)


def test_sizes_come_from_type_arguments_and_bidirectional_needs_its_width(numpy_backend: str) -> None:
    """issue #25: ``LSTM[L[8], L[16]]`` takes its sizes from the type; a bidirectional layer
    whose type says the output is ``H`` wide (not ``2·H``) is refused, naming the fix."""
    lstm = nn.LSTM[L[8], L[16]](num_layers=2)
    assert (lstm.input_size, lstm.hidden_size, lstm.num_layers) == (8, 16, 2)
    with pytest.raises(sg.ShapeError, match=r"LSTM\[L\[8\], L\[16\], L\[2\]\]\(bidirectional=True\)"):
        nn.LSTM[L[8], L[16]](bidirectional=True)  # pyright: ignore[reportArgumentType, reportCallIssue]
    wide = nn.LSTM[L[8], L[16], L[2]](bidirectional=True)
    assert wide(sg.ones(2, 3, 8))[0].shape == (2, 3, 32)
    with pytest.raises(sg.ShapeError, match="contradicts"):
        nn.GRU[L[8], L[16]](8, 15)
    with pytest.raises(sg.ShapeError, match="needs its hidden_size"):
        nn.RNN(3)


def test_wrong_inputs_and_states_are_refused_by_name(numpy_backend: str) -> None:
    """issue #25: an input of the wrong rank or width, a state of the wrong shape, a float64
    state for float32 weights and an empty sequence raise before anything is computed."""
    lstm = nn.LSTM(3, 4, 2)
    with pytest.raises(sg.ShapeError, match=r"expected input \(batch, steps, 3\).*\(2, 5, 4\)"):
        lstm(sg.ones(2, 5, 4))
    with pytest.raises(sg.ShapeError, match=r"expected input"):
        lstm(sg.ones(5, 3))
    with pytest.raises(sg.ShapeError, match=r"at least one step"):
        lstm(sg.ones(2, 0, 3))
    h = sg.zeros(2, 2, 4)
    with pytest.raises(sg.ShapeError, match=r"\(h_0, c_0\) of shape \(2, 2, 4\).*\(1, 2, 4\)"):
        lstm(sg.ones(2, 5, 3), (h, sg.zeros(1, 2, 4)))
    with pytest.raises(sg.ShapeError, match=r"pair \(h_0, c_0\)"):
        lstm(sg.ones(2, 5, 3), h)  # pyright: ignore[reportArgumentType]
    with pytest.raises(sg.DTypeError, match="float64"):
        nn.GRU(3, 4)(sg.ones(2, 5, 3), sg.zeros(1, 2, 4, dtype="float64"))
    with pytest.raises(sg.ShapeError, match="nonlinearity"):
        nn.RNN(3, 4, nonlinearity="sigmoid")  # pyright: ignore[reportCallIssue, reportArgumentType]


def test_final_state_carries_the_inputs_tape_and_feeds_the_next_call(numpy_backend: str) -> None:
    """issue #25: the final states are on the input's tape; fed back as the next call's
    initial state (truncated BPTT after ``detach``), the result equals one call over both halves."""
    lstm = nn.LSTM(3, 4, 2, dtype="float64")
    x = np.random.default_rng(6).standard_normal((2, 6, 3))
    whole, (h_all, _) = lstm(sg.tensor(x))
    first, (h, c) = lstm(sg.tensor(x[:, :3]).trace(lstm.alloc_grads()))
    assert h._node is not None and c._node is not None
    second, (h2, _) = lstm(sg.tensor(x[:, 3:]), (h.detach(), c.detach()))
    np.testing.assert_allclose(np.concatenate([first.numpy(), second.numpy()], axis=1), whole.numpy(), atol=1e-14)
    np.testing.assert_allclose(h2.numpy(), h_all.numpy(), atol=1e-14)
