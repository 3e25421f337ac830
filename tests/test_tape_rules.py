"""The rules a backward pass enforces so that a program never gets a silently wrong gradient
(issue #24, items 1, 2, 3 and 15): a write after a read, one backward per output, gradients
consumed by an update, and a parameter shared by two models' ``Gradients``.

Each test fails on the code before the rule: it either shows the wrong gradient or expects
the ``TapeError`` that now replaces it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.tiny_models import Line

import shapegrad as sg
from shapegrad import nn

# --------------------------------------------------------------- a write after a read (item 1)


def test_a_buffer_refilled_before_backward_of_the_losses_it_fed_is_detected(backend: str) -> None:
    """Gradient accumulation with one preallocated input buffer: the first loss's weight
    gradient was recorded against the first batch, which the refill overwrote."""
    model = Line()
    grads = model.alloc_grads()
    buf = sg.zeros(3, 2)
    losses = []
    for batch in ([[1.0, 2.0]] * 3, [[-1.0, 0.5]] * 3):
        buf[...] = sg.tensor(batch)
        losses.append(model(buf.trace(grads)).sum())
    with pytest.raises(sg.TapeError, match=r"saved for the backward pass .*shape \(3, 2\).* written in place"):
        sg.backward(*losses)


def test_a_write_into_a_constant_operand_before_backward_is_detected(backend: str) -> None:
    grads = sg.Gradients()
    w = sg.tensor([1.0, 2.0]).trace(grads)
    scale = sg.tensor([3.0, 4.0])
    loss = (w * scale).sum()
    scale[0] = 0.0
    with pytest.raises(sg.TapeError, match=r"the op 'mul' saved .*version 0 when recorded, 1 now"):
        loss.backward()


def test_a_write_between_two_recorded_ops_is_detected_in_the_older_one(backend: str) -> None:
    """The backward pass compares the counters of ops recorded before the latest write
    anywhere (``_autodiff.last_write``): an op recorded after the write, which saw the new
    values, must not hide the older op that saw the old ones."""
    grads = sg.Gradients()
    w = sg.tensor([1.0, 2.0]).trace(grads)
    scale = sg.tensor([3.0, 4.0])
    scale[1] = 5.0  # a write before anything read it: no error
    product = w * scale
    scale[0] = 0.0
    loss = (product * scale).sum()  # recorded after the write, reading the new values
    with pytest.raises(sg.TapeError, match=r"the op 'mul' saved .*version 1 when recorded, 2 now"):
        loss.backward()


def test_a_write_landing_while_an_op_is_recorded_is_detected(numpy_backend: str) -> None:
    """Another thread's write can land while an op is being recorded, after the op read the
    written tensor's counter: the node must count as older than the write (its number drawn
    before the counters are read), or the backward pass skips its comparison."""
    from shapegrad import _autodiff
    from shapegrad._backend import get_backend
    from shapegrad._tensor import wrap

    grads = sg.Gradients()
    w = sg.tensor([1.0, 2.0]).trace(grads)
    c = sg.tensor([3.0, 4.0])

    class Meanwhile:  # an input read after c: where the other thread writes c
        _data = np.zeros(2, dtype=np.float32)
        _param = None
        _version = None

        @property
        def _node(self) -> None:
            c[0] = 0.0

    def rule(xp: Any, g: Any, x: Any, y: Any) -> tuple[Any, ...]:
        return g * y, g * x, None

    backend = get_backend(numpy_backend)
    data = w.data * c.data
    node = _autodiff.record_node(data, rule, (w, c, Meanwhile()), (w.data, c.data), backend.xp)
    loss = wrap(data, backend)
    loss._node = node
    with pytest.raises(sg.TapeError, match=r"its input 1.*version 0 when recorded, 1 now"):
        loss.sum().backward()


def test_a_write_through_a_detached_alias_of_a_saved_result_is_detected(backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([0.5, 1.0]).trace(grads)
    y = x.exp()  # exp's rule reads its own result
    y.detach()[0] = 0.0
    with pytest.raises(sg.TapeError, match="its result"):
        y.sum().backward()


def test_a_write_through_an_alias_made_after_the_op_that_saved_it_is_detected(backend: str) -> None:
    """An intermediate value gets its write counter only when first aliased or written (the
    op that saved it recorded version 0 without making one): the alias made later still counts."""
    grads = sg.Gradients()
    x = sg.tensor([1.0, 2.0]).trace(grads)
    y = x * 2.0
    loss = (y * y).sum()  # saves y, which no alias shares yet
    y.detach()[0] = 5.0
    with pytest.raises(
        sg.TapeError, match=r"the op 'mul' saved .*its input 0, shape \(2,\).*version 0 when recorded, 1 now"
    ):
        loss.backward()


def test_a_write_into_the_traced_input_s_source_is_detected(backend: str) -> None:
    grads = sg.Gradients()
    buf = sg.tensor([1.0, 2.0])
    x = buf.trace(grads)
    loss = (x * x).sum()
    buf[1] = 5.0
    with pytest.raises(sg.TapeError, match="written in place"):
        loss.backward()


@pytest.mark.parametrize("view", ["reshape", "slice", "transpose"])
def test_a_write_into_memory_a_saved_view_shares_is_detected(numpy_backend: str, view: str) -> None:
    """Views share their source's write count, as PyTorch's do (the strict Array-API backend
    exposes no view relation and is not covered)."""
    grads = sg.Gradients()
    w = sg.tensor([[1.0, 2.0], [3.0, 4.0]]).trace(grads)
    buf = sg.tensor([[1.0, 2.0], [3.0, 4.0]])
    alias = {"reshape": lambda b: b.reshape(2, 2), "slice": lambda b: b[0:2], "transpose": lambda b: b.T}[view](buf)
    loss = (w * alias).sum()
    buf[0, 0] = -1.0
    with pytest.raises(sg.TapeError, match="written in place"):
        loss.backward()


def test_a_batch_norm_s_running_statistics_updated_after_an_op_saved_them_is_detected(backend: str) -> None:
    """A training-mode forward pass writes the running statistics in place: an op that saved
    them before (``x * bn.running_var``) would otherwise read the new values backward."""
    bn = nn.BatchNorm1d(2)
    grads = sg.Gradients()
    x = sg.tensor([1.0, 1.0]).trace(grads)
    loss = (x * bn.running_var).sum()
    bn(sg.tensor([[1.0, 5.0], [3.0, -1.0]]))
    with pytest.raises(sg.TapeError, match=r"the op 'mul' saved .*its input 1.*version 0 when recorded, 1 now"):
        loss.backward()
    bn.eval()  # reading them is not writing them
    loss = (x.detach().trace(grads) * bn.running_var).sum()
    bn(sg.tensor([[1.0, 5.0], [3.0, -1.0]]))
    loss.backward()


def test_a_write_into_a_seed_after_backward_leaves_the_gradients_it_gave(backend: str) -> None:
    """A leaf's gradient can be a view of the seed (sum's and reshape's rules view their
    incoming gradient): a caller refilling its seed buffer must not change it afterwards."""
    seed = sg.tensor([[1.0, 2.0], [3.0, 4.0]])
    scalar = sg.tensor(np.array(2.0, dtype=np.float32))
    grads = sg.Gradients()
    x = sg.tensor([1.0, 2.0, 3.0, 4.0]).trace(grads)
    y = sg.tensor([1.0, 2.0]).trace(grads)
    sg.backward(x.reshape(2, 2), y.sum(), seeds=[seed, scalar])
    seed[...] = 0.0
    scalar[...] = 0.0
    assert grads[x].tolist() == [1.0, 2.0, 3.0, 4.0]
    assert grads[y].tolist() == [2.0, 2.0]


def test_writes_that_no_saved_value_depends_on_are_allowed(backend: str) -> None:
    """No false alarm: ``add`` saves neither operand, and a write after backward is fine."""
    grads = sg.Gradients()
    w = sg.tensor([1.0, 2.0]).trace(grads)
    offset = sg.tensor([3.0, 4.0])
    loss = (w + offset).sum()
    offset[0] = 0.0
    loss.backward()
    assert grads[w].tolist() == [1.0, 1.0]
    buf = sg.tensor([1.0, 2.0])
    grads2 = sg.Gradients()
    w2 = sg.tensor([1.0, 1.0]).trace(grads2)
    (w2 * buf).sum().backward()
    buf[0] = 9.0  # after the backward pass: nothing left to corrupt
    assert grads2[w2].tolist() == [1.0, 2.0]


def test_the_usual_loop_over_one_input_buffer_trains_as_before(backend: str) -> None:
    model = Line()
    opt = sg.optim.Sgd(model, lr=0.1)
    grads = model.alloc_grads()
    buf = sg.zeros(4, 2)
    for step in range(3):
        buf[...] = sg.full((4, 2), float(step))
        grads.zero()
        model(buf.trace(grads)).sum().backward()
        opt.update(model, grads)


# --------------------------------------------------------------- one backward per output (item 2)


def test_a_second_backward_from_the_same_output_is_refused(backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0, 2.0]).trace(grads)
    loss = (x * x).sum()
    loss.backward()
    with pytest.raises(sg.TapeError, match=r"ran already on this tape.*retain=True"):
        loss.backward()
    with pytest.raises(sg.TapeError, match="ran already"):
        sg.backward(loss)
    assert grads[x].tolist() == [2.0, 4.0]  # the refused passes added nothing


def test_retain_allows_another_pass_and_accumulates(backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0, 2.0]).trace(grads)
    loss = (x * x).sum()
    loss.backward(retain=True)
    loss.backward()
    assert grads[x].tolist() == [4.0, 8.0]
    with pytest.raises(sg.TapeError, match="ran already"):
        loss.backward()  # the last pass did not retain
    sg.backward(loss, retain=True)
    assert grads[x].tolist() == [6.0, 12.0]


def test_different_outputs_of_one_graph_still_accumulate(backend: str) -> None:
    grads = sg.Gradients()
    x = sg.tensor([1.0, 2.0]).trace(grads)
    h = x * x
    h.sum().backward()
    (h * 2.0).sum().backward()  # goes through h again, from another output
    assert grads[x].tolist() == [6.0, 12.0]


# --------------------------------------------------------------- gradients consumed by an update (item 3)


def test_a_backward_into_gradients_an_update_used_is_refused_until_zero(backend: str) -> None:
    model = Line()
    opt = sg.optim.Sgd(model, lr=0.1)
    grads = model.alloc_grads()
    x = sg.ones(4, 2)
    model(x.trace(grads)).sum().backward()
    opt.update(model, grads)
    before = grads[model.fc.weight].tolist()
    with pytest.raises(sg.TapeError, match=r"Sgd\.update already used .* grads\.zero\(\)"):
        model(x.trace(grads)).sum().backward()
    assert grads[model.fc.weight].tolist() == before  # nothing was added
    grads.zero()
    model(x.trace(grads)).sum().backward()
    opt.update(model, grads)


def test_a_forgotten_zero_no_longer_accumulates_silently(numpy_backend: str) -> None:
    """The issue's loop: 20 steps without grads.zero() reached loss 2.19 instead of 0.046."""
    model = Line()
    opt = sg.optim.Sgd(model, lr=0.05)
    grads = model.alloc_grads()
    x, y = sg.tensor([[1.0, 0.0], [0.0, 1.0]]), sg.tensor([[1.0], [-1.0]])
    ((model(x.trace(grads)) - y) ** 2).mean().backward()
    opt.update(model, grads)
    with pytest.raises(sg.TapeError, match="already used"):
        ((model(x.trace(grads)) - y) ** 2).mean().backward()


def test_several_backward_passes_before_one_update_still_accumulate(backend: str) -> None:
    model = Line()
    opt = sg.optim.Sgd(model, lr=0.1)
    grads = model.alloc_grads()
    for _ in range(2):
        model(sg.ones(1, 2).trace(grads)).sum().backward()
    assert grads[model.fc.bias].tolist() == [2.0]
    opt.update(model, grads)


# --------------------------------------------------------------- a parameter shared by two models (item 15)


class _Encoder(nn.Module, checked=False):
    def __init__(self, embed: nn.Linear[Any, Any]) -> None:
        self.embed = embed

    def __call__(self, x: Any) -> Any:
        return self.embed(x)


class _Decoder(nn.Module, checked=False):
    def __init__(self, embed: nn.Linear[Any, Any]) -> None:
        self.embed = embed  # tied: the encoder's layer
        self.out = nn.Linear(3, 1, generator=sg.Generator(2))

    def __call__(self, h: Any) -> Any:
        return self.out(self.embed(h))


def test_a_tied_layer_delivers_its_gradient_to_every_gradients_that_holds_it(backend: str) -> None:
    shared = nn.Linear(3, 3, generator=sg.Generator(1))
    enc, dec = _Encoder(shared), _Decoder(shared)
    g_enc, g_dec = enc.alloc_grads(), dec.alloc_grads()
    x = sg.tensor([[1.0, -1.0, 0.5]])
    dec(enc(x.trace(g_enc, g_dec))).sum().backward()
    assert g_enc.received() == ["embed.weight", "embed.bias"]
    assert sorted(g_dec.received()) == ["embed.bias", "embed.weight", "out.bias", "out.weight"]
    assert np.allclose(g_enc[shared.weight].numpy(), g_dec[shared.weight].numpy())
    sg.optim.Sgd(dec, lr=0.1).update(dec, g_dec)  # no "received no gradient"
    sg.optim.Sgd(enc, lr=0.1).update(enc, g_enc)


def test_one_write_into_a_parameter_counts_once(numpy_backend: str) -> None:
    """A parameter's write counter is its tensor's: one write reads as one."""
    model = Line()
    grads = model.alloc_grads()
    loss = model(sg.ones(4, 2).trace(grads)).sum()
    model.fc.weight[0, 0] = 5.0
    with pytest.raises(sg.TapeError, match=r"parameter 'fc\.weight'.*version 0 when recorded, 1 now"):
        loss.backward()


def _written_after_forward(what: str) -> tuple[Any, Any, Any]:
    """(grads, x, loss) of a forward pass that read a tensor ``what`` names, which is then
    written in place before the backward pass."""
    grads = sg.Gradients()
    x = sg.tensor(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).trace(grads)
    if what == "where's condition":
        read = sg.tensor(np.array([True, False, True]))
        loss = sg.where(read, x, 0.0).sum()
    elif what == "masked_fill's mask":
        read = sg.tensor(np.array([[True, False, True], [False, False, False]]))
        loss = sg.masked_fill(x, read, 0.0).sum()
    elif what == "take_along_axis's indices":
        read = sg.tensor(np.array([[0], [2]]))
        loss = sg.take_along_axis(x, read, axis=1).sum()
    elif what == "cross_entropy's labels":
        read = sg.tensor(np.array([0, 2]))
        loss = sg.losses.cross_entropy(x, read)
    elif what in ("nll_loss's labels", "a weighted cross_entropy's labels"):
        read = sg.tensor(np.array([0, 2]))
        if what.startswith("nll"):
            loss = sg.losses.nll_loss(sg.log_softmax(x), read)
        else:
            loss = sg.losses.cross_entropy(x, read, weight=sg.tensor(np.array([1.0, 2.0, 3.0])))
    elif what == "softmax's mask":
        read = sg.tensor(np.array([[True, False, True], [False, False, False]]))  # row 1 masked throughout
        loss = (sg.softmax(x, mask=read) * sg.tensor(np.array([1.0, 2.0, 3.0]))).sum()
    elif what in ("at[...].set's index", "at[...].add's index"):
        read = sg.tensor(np.array([0, 1]))
        update = x.at[read].set if what.startswith("at[...].set") else x.at[read].add
        loss = (update(sg.tensor(np.array([7.0, 8.0, 9.0]))) * sg.tensor(np.array([[1.0], [2.0]]))).sum()
    elif what == "a boolean index":
        read = sg.tensor(np.array([[True, False, True], [False, True, False]]))
        loss = (x[read] * sg.tensor(np.array([1.0, 2.0, 3.0]))).sum()
    elif what == "a tuple of index tensors":
        read = sg.tensor(np.array([0, 1, 1]))
        loss = (x[read, sg.tensor(np.array([2, 0, 1]))] * sg.tensor(np.array([1.0, 2.0, 3.0]))).sum()
    else:  # an embedding's ids
        table = nn.Embedding(5, 3)
        grads = table.alloc_grads()
        read = sg.tensor(np.array([1, 1, 3]))
        loss = table(read.trace(grads)).sum()
        x = table.weight
    read[0] = read[1]  # the caller refills it (a batch's ids, a mask) before backward
    return grads, x, loss


@pytest.mark.parametrize(
    "what",
    [
        "where's condition",
        "masked_fill's mask",
        "take_along_axis's indices",
        "cross_entropy's labels",
        "an embedding's ids",
        "nll_loss's labels",
        "a weighted cross_entropy's labels",
        "softmax's mask",
        "at[...].set's index",
        "at[...].add's index",
        "a boolean index",
        "a tuple of index tensors",
    ],
)
def test_a_write_into_a_condition_indices_or_labels_an_op_read_is_detected(numpy_backend: str, what: str) -> None:
    """These ops read a tensor that is no input of theirs, or read it through a view: the
    gradient went to the places the new values say, silently."""
    _, _, loss = _written_after_forward(what)
    with pytest.raises(sg.TapeError, match=r"a tensor it reads besides its inputs: a mask, indices, labels"):
        loss.backward()


def test_a_numpy_index_array_or_a_tensor_bound_refilled_before_backward_changes_nothing(numpy_backend: str) -> None:
    """x[i] with a NumPy index array, and clamp with tensor bounds, keep a copy of what they
    read: the caller's later writes into them leave the gradient as the forward pass had it."""
    grads = sg.Gradients()
    x = sg.tensor(np.array([1.0, 2.0, 3.0])).trace(grads)
    index = np.array([0, 2, 2])
    low = sg.tensor(np.array([1.5, 1.5, 1.5]))
    loss = x[index].sum() + sg.clamp(x, low, 5.0).sum()  # type: ignore[arg-type]  # torch.clamp takes tensor bounds
    index[0] = 1
    low[0] = 100.0
    loss.backward()
    np.testing.assert_array_equal(grads[x].numpy(), [1.0, 1.0, 3.0])


def test_a_write_into_an_einsum_operand_is_detected(numpy_backend: str) -> None:
    """einsum saves its operands inside a tuple, where the engine's search by identity did not
    look: a write into the constant operand moved x's gradient, silently."""
    grads = sg.Gradients()
    c = sg.tensor(np.ones((2, 2)))
    x = sg.tensor(np.ones((2, 2))).trace(grads)
    loss = sg.einsum("ij,jk->ik", x, c).sum()
    c[...] = 5.0
    with pytest.raises(sg.TapeError, match="'einsum' saved.*its input 1"):
        loss.backward()


def test_a_convolution_of_a_channels_last_view_refilled_before_backward_is_never_silently_wrong(
    numpy_backend: str,
) -> None:
    """A channels-last input (a permuted NHWC buffer) is gathered again for the weight's gradient
    in the backward pass (the compiled path): a refill of the buffer gave a wrong gradient, no error.
    Now it raises; where the columns are kept instead, the gradient is the forward pass's."""
    rng = np.random.default_rng(0)
    nhwc = sg.tensor(rng.standard_normal((2, 6, 6, 2)).astype(np.float32))
    conv = nn.Conv2d(3, in_channels=2, out_channels=4, generator=sg.Generator(0))
    clean = conv.alloc_grads()
    conv(sg.tensor(nhwc.numpy().transpose(0, 3, 1, 2).copy()).trace(clean)).sum().backward()
    grads = conv.alloc_grads()
    loss = conv(nhwc.permute(0, 3, 1, 2).trace(grads)).sum()
    nhwc[...] = 0.0  # the caller refills its buffer before the backward pass
    try:
        loss.backward()
    except sg.TapeError as error:
        assert "'conv2d' saved" in str(error)
    else:
        np.testing.assert_allclose(grads[conv.weight].numpy(), clean[conv.weight].numpy(), rtol=1e-5, atol=1e-5)


def test_two_leaves_given_one_gradient_array_do_not_share_it(numpy_backend: str) -> None:
    """a + b gives both leaves the same array (here the caller's seed): a write into one
    gradient (scaling, clipping) changed the other and the seed."""
    grads = sg.Gradients()
    a = sg.tensor(np.ones(3)).trace(grads)
    b = sg.tensor(np.ones(3)).trace(grads)
    seed = np.arange(3.0)
    sg.backward(a + b, seeds=[seed])
    scaled = grads[a]
    scaled[...] = scaled * 0.5
    assert grads[b].tolist() == [0.0, 1.0, 2.0]
    assert seed.tolist() == [0.0, 1.0, 2.0]


def test_trace_of_a_tensor_computed_from_parameters_is_refused(numpy_backend: str) -> None:
    """m.weight.T is untraced (it has no tape) but leads to the weight: tracing it made a leaf of
    its own, and the weight's gradient through it was lost with no error."""
    model = Line()
    with pytest.raises(sg.TapeError, match=r"computed from parameters.*m\.weight\.trace\(grads\)\.T"):
        model.fc.weight.T.trace(model.alloc_grads())
    grads = model.alloc_grads()
    traced_first = model.fc.weight.trace(grads).T  # the spelling the message suggests
    traced_first.sum().backward()
    assert grads[model.fc.weight].tolist() == np.ones(model.fc.weight.shape).tolist()


def test_an_op_on_parameters_made_once_and_reused_after_an_update_names_the_parameter(numpy_backend: str) -> None:
    """w = m.weight.T made before the loop: after the first update, the next backward pass
    failed inside a rule (its saved values were released with the first tape), a TypeError."""
    model = Line()
    opt = sg.optim.SGD(model, lr=0.1)
    transposed = model.fc.weight.T
    grads = model.alloc_grads()
    x = sg.ones(4, 2)

    def loss_of(traced: Any) -> Any:
        return (model(traced) + traced @ transposed.T).sum()

    loss_of(x.trace(grads)).backward()
    opt.update(model, grads)
    grads.zero()
    loss = loss_of(x.trace(grads))
    with pytest.raises(sg.TapeError, match=r"parameter 'fc\.weight' was modified in place"):
        loss.backward()


def test_maximum_and_minimum_pass_a_nan_s_gradient_to_both_operands(numpy_backend: str) -> None:
    """Where the result is NaN, PyTorch gives each operand the whole gradient (the NaN shows in
    the gradients); the gradient went to neither, hiding it. Ties still split it."""
    for op in (sg.maximum, sg.minimum):
        grads = sg.Gradients()
        a = sg.tensor(np.array([np.nan, 1.0, 2.0])).trace(grads)
        b = sg.tensor(np.array([0.0, 1.0, np.nan])).trace(grads)
        op(a, b).sum().backward()
        assert grads[a].tolist() == [1.0, 0.5, 1.0]
        assert grads[b].tolist() == [1.0, 0.5, 1.0]
