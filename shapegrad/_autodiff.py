"""The autodiff engine: tapes, graph nodes, recording, parameters and the reverse pass.

It knows tensors only as objects with ``_data``, ``_node``, ``_param`` and ``_backend``
(:class:`Recordable`); ``Tensor`` and its ops record through :func:`record_node`.

Tapes are the record of traced ops, shared by every tensor traced with one ``Gradients``.

A traced tensor points at the :class:`Node` that produced it; nodes point at their
parents' nodes, so the recorded graph lives exactly as long as the tensors that can reach
it (a training loop that drops last step's loss frees last step's graph). A :class:`Tape`
is the identity those nodes share: which ``Gradients`` receive the results, whether the
recording has ended, which thread owns it. Two tapes meeting in one op are merged
(union-find), so every ``Gradients`` involved sees the merged result.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Never, Protocol, TypeAlias, cast

import numpy as np

from . import _hooks
from ._errors import TapeError
from ._typevars import M

__all__ = [
    "NoTape",
    "OwnedTape",
    "make_parameter",
    "record_binary_node",
    "record_node",
    "record_unary_node",
    "watch_reads",
    "run_backward",
    "wants_grad",
]


if TYPE_CHECKING:
    # For pyright the untraced tape is the bottom type: ``Tensor`` is covariant in its tape,
    # so an untraced tensor fits wherever a traced one (or a tape TypeVar ``T``) is asked
    # for, and an op typed with one ``T`` for both operands joins untraced with traced (an
    # RNN's zero state with a traced input) in one overload. Only ``Never`` is below a
    # TypeVar: a class, even ``OwnedTape[Never]``, would turn ``x + w`` inside a function
    # generic over ``T`` into ``Tensor[T | NoTape, ...]``. Traced stays refused where
    # ``NoTape`` is declared (no tape is a subtype of ``Never``).
    NoTape: TypeAlias = Never
else:

    class NoTape:
        """Type-level marker: the tensor is not traced; ops on it record nothing.

        To pyright, ``NoTape`` is ``Never``, the bottom tape (untraced tensors print as
        ``Tensor[Never, ...]`` in its messages); at run time, this class, which a
        ``Tensor[NoTape, ...]`` annotation checks for.
        """


class OwnedTape(Generic[M]):
    """Type-level marker: the tensor is traced; its gradients are for model ``M``."""


_seq = itertools.count(1)
_get_ident = threading.get_ident

Rule = Callable[..., Sequence[Any]]
Watched = tuple[Any, ...]
"""Flat triples, one per watched counter: a write counter, or the input tensor whose counter
it is; its value when an op was recorded; which input it belongs to (-1: the op's result, -2:
a tensor the rule reads as no input or through a view, see ``watch_reads``).
Flat (``(owner, value, position, owner, value, position, ...)``), not a list of triples: one
object per node instead of one per watched input and one for the list, which the cyclic
garbage collector would otherwise traverse, and promote, with the rest of the graph. An input
is held as the tensor, whose counter is made on its first write or alias
(:func:`version_of`) and reads 0 until then, so that recording an op makes none for
intermediate values nothing aliases; a parameter's counter and the result's are held
themselves (the result's tensor would hold its own node in a cycle)."""


class GradientSink(Protocol):
    """What the engine needs of a ``Gradients`` (the one kind of sink there is): the engine
    knows no more of it than this."""

    def _accept(self, key: int, grad: Any) -> bool:
        """Take the gradient for ``key`` into its buffer; False where it holds no such slot."""
        ...

    def _check_not_consumed(self) -> None:
        """Raise ``TapeError`` where an optimizer update used these gradients since ``zero()``."""
        ...

    def _path_of(self, key: int) -> str | None:
        """The dotted path of the parameter with gradient key ``key``, if a slot holds it."""
        ...


class Tape:
    """Run-time identity of a recording: its ``Gradients``, leaf results and owner thread."""

    __slots__ = ("parent", "sinks", "leaf_grads", "ended", "thread", "visited", "spent", "passes")

    def __init__(self, sink: GradientSink | None = None) -> None:
        self.parent: Tape | None = None
        self.sinks: list[GradientSink] = [] if sink is None else [sink]
        self.leaf_grads: dict[int, Any] = {}
        self.ended: str | None = None
        self.thread: int = _get_ident()
        # Nodes a backward pass went through (weakly): when the tape ends, their saved
        # values are released, so a loss kept by the user (history.append(loss)) does not
        # keep the whole step's activations alive.
        self.visited: list[weakref.ref[Node]] = []
        # Outputs a backward pass started from (by node seq): True where it said retain.
        self.spent: dict[int, bool] = {}
        # When each backward pass into it ran (a number of the engine's counter): the passes
        # its Gradients add up, which sg.distributed weighs by the sample counts stated then.
        self.passes: list[int] = []

    def end(self, reason: str) -> None:
        """End the recording: later use raises ``TapeError``; saved values are released."""
        self.ended = reason
        self.leaf_grads = {}
        for ref in self.visited:
            node = ref()
            # A node without a tape (an op on parameters alone, w.T made once before the loop)
            # keeps what it saved: a later pass through it then compares the parameter's write
            # count and names the update, where a released node had no saved values to call
            # its rule with.
            if node is not None and node.tape is not None:
                node.release()
        self.visited = []

    def root(self) -> Tape:
        """The tape this one was merged into, followed to the end (itself if never merged)."""
        tape = self
        while tape.parent is not None:
            tape = tape.parent
        return tape


def merge_tapes(a: Tape, b: Tape) -> Tape:
    """One tape from two, both ``Gradients`` attached to it; returns the surviving root."""
    ra, rb = a.root(), b.root()
    if ra is rb:
        return ra
    for tape in (ra, rb):
        check_usable(tape)
    rb.parent = ra
    ra.sinks.extend(rb.sinks)
    for key, grad in rb.leaf_grads.items():
        ra.leaf_grads[key] = grad
    rb.leaf_grads = {}
    ra.visited.extend(rb.visited)
    rb.visited = []
    ra.spent.update(rb.spent)
    rb.spent = {}
    ra.passes.extend(rb.passes)
    rb.passes = []
    return ra


def check_usable(tape: Tape) -> None:
    """Raise ``TapeError`` when the tape ended or belongs to another thread."""
    if tape.ended is not None:
        raise TapeError(
            f"this tensor was recorded on a tape that has ended ({tape.ended}); "
            "expected a tensor traced after that point. Trace the inputs again; a tensor carried "
            "over from an earlier step (an RNN's hidden state in truncated backpropagation, a "
            "running statistic) is cut from its old tape with h = h.detach(), as in PyTorch."
        )
    if tape.thread != _get_ident():
        raise TapeError(
            f"tape created in thread {tape.thread} used from thread {_get_ident()}; "
            "a tape is meant for the thread that created it. Give each thread its own "
            "Gradients (model.alloc_grads() or sg.Gradients())."
        )


class Node:
    """One recorded op: its backward rule, the values the rule needs, its parents.

    A leaf (a traced input or a parameter) has no rule; its ``key`` says where its gradient
    is delivered. A node that ``wants`` no gradient only carries the tape: no gradient is
    computed for it or for anything that only it leads to. ``dtype`` is the dtype of the
    value the node produced: the gradient it receives is cast to it, so a leaf's gradient
    has the leaf's dtype whatever it was combined with. ``versions`` holds (flat, see
    :data:`Watched`), for each parameter the op read and each other tensor whose data it
    saved, the write counter (or the tensor whose counter it is), its value at that time and
    the input's position (-1: the op's own result), so that a write
    between the forward and the backward pass is detected. ``lost`` (a parameter's leaf only,
    unset until then) says a backward pass computed its gradient but no ``Gradients`` on the
    tape held a slot for it (a second model chained after the first, traced with only the
    first's ``Gradients``): the optimizer reads it to say what happened.
    """

    __slots__ = ("seq", "tape", "parents", "rule", "saved", "shape", "dtype", "xp", "versions", "where", "__weakref__")

    # An op's node: no gradient slot of its own, and it wants a gradient (class-level, so that
    # recording an op sets neither: LeafNode and CarrierNode say otherwise). ``where`` is set
    # by anomaly detection alone (read it with getattr).
    key: int = 0
    wants: bool = True
    where: str | None

    seq: int
    tape: Tape | None
    parents: Sequence[Node | None]
    rule: Rule | None
    saved: tuple[Any, ...]
    shape: tuple[int, ...]
    dtype: Any
    xp: Any
    versions: Watched | None

    # No __init__: an op's node is made by ``Node()`` (CPython's fast path for a class without
    # one, faster than object.__new__(Node)) and its fields set where the op is recorded;
    # LeafNode and CarrierNode set theirs with _init_node.

    def release(self) -> None:
        """Drop what only a backward pass needs (saved values, links to parents)."""
        self.saved = ()
        self.parents = ()
        self.versions = None


def _init_node(node: Node, tape: Tape | None, shape: tuple[int, ...], dtype: Any, xp: Any) -> None:
    """The fields of a node without parents, rule or saved values (LeafNode, CarrierNode)."""
    node.seq = next(_seq)
    node.tape = tape
    node.parents = ()
    node.rule = None
    node.saved = ()
    node.shape = shape
    node.dtype = dtype
    node.xp = xp
    node.versions = None


class LeafNode(Node):
    """Where a traced input's or a parameter's gradient is delivered, under ``key``."""

    __slots__ = ("key", "wants", "lost")

    def __init__(self, tape: Tape | None, shape: tuple[int, ...], dtype: Any, xp: Any, key: int, wants: bool) -> None:
        _init_node(self, tape, shape, dtype, xp)
        self.key = key
        self.wants = wants
        self.lost: bool


class CarrierNode(Node):
    """The node of a result that needs no gradient but carries its inputs' tape."""

    __slots__ = ()
    wants = False

    def __init__(self, tape: Tape | None, shape: tuple[int, ...], dtype: Any, xp: Any) -> None:
        _init_node(self, tape, shape, dtype, xp)


class Recordable(Protocol):
    """What the engine reads of a tensor."""

    _data: Any
    _node: Node | None
    _param: ParamInfo | None
    _version: Version | None


class Version:
    """How many times a tensor's data was written in place; shared by every tensor whose
    data is the same memory (``x.trace(...)``, ``x.detach()``, a view made by an op), so a
    write through any of them is seen by a backward pass that saved another."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


def version_of(tensor: Any) -> Version:
    """The tensor's write counter, made on first need (most tensors are never saved)."""
    version: Version | None = tensor._version
    if version is None:
        version = tensor._version = Version()
    return version


# The creation number (a node's ``seq``) current at the latest in-place write anywhere: a
# node created after it saw every counter as it still is, so the backward pass compares a
# node's watched counters only when it is older than this (a training loop writes its
# weights between steps, not between a forward pass and its backward pass).
last_write = 0
_write_lock = threading.Lock()


def note_written(tensor: Any) -> None:
    """Record an in-place write into ``tensor``'s data (``__setitem__``, an optimizer update,
    ``sg.load``, a broadcast): a backward pass through values saved before it raises.
    A parameter's counter is its tensor's (``ParamInfo.version``); a tensor without one gets
    one here: an op may have saved it (recorded as version 0, see :data:`Watched`). This is
    the one place a counter rises (see :data:`last_write`)."""
    version = version_of(tensor)
    note_version_written(version)
    recorder = _hooks.recorder
    if recorder is not None:  # sg.compile: a replay notes the same write (a buffer the caller holds)
        recorder.noted(tensor, version)


def note_version_written(version: Version) -> None:
    """:func:`note_written` of the tensors whose write counter is ``version``."""
    global last_write
    with _write_lock:  # another thread's write: its count and its stamp, not one lost or out of order
        version.value += 1
        last_write = next(_seq)


def share_version(source: Any, alias: Any) -> None:
    """Make ``alias`` (whose data is ``source``'s memory) count writes with ``source``."""
    alias._version = version_of(source)


class ParamInfo:
    """What makes a tensor a parameter: its gradient key, its leaf node, whether it trains,
    and its write counter (``version``, the tensor's own: raised by every optimizer update
    and load, checked by the backward pass). ``out_in``: a 2-D weight its layer stores in
    PyTorch's ``(out, in)`` layout (recurrent weights, ``Embedding.weight``), whose fans
    ``sg.nn.init`` then reads as PyTorch's; every other 2-D parameter is ``Linear``'s
    ``(in, out)``."""

    __slots__ = ("key", "leaf", "out_in", "trainable", "version")

    def __init__(self, key: int, leaf: LeafNode, trainable: bool, version: Version, out_in: bool = False) -> None:
        self.key = key
        self.leaf = leaf
        self.trainable = trainable
        self.version = version
        self.out_in = out_in


def leaf_node(tensor: Any, tape: Tape | None, key: int, wants: bool = True) -> LeafNode:
    """The graph node where ``tensor``'s gradient is delivered, under ``key``: a parameter's
    own leaf (``tape`` None: it joins whatever tape it meets), or a traced input's."""
    data = tensor._data
    return LeafNode(tape, tuple(data.shape), data.dtype, tensor._backend.xp, key, wants)


def make_parameter(tensor: Any, trainable: bool = True, out_in: bool = False) -> None:
    """Mark ``tensor`` as a parameter: ops that meet it on a tape record it as a leaf
    (``out_in``: see ``ParamInfo``)."""
    key = new_leaf_key()
    tensor._param = ParamInfo(key, leaf_node(tensor, None, key), trainable, version_of(tensor), out_in)


def parent_of(tensor: Recordable) -> Node | None:
    """The node a gradient for ``tensor`` goes to, or None when it wants none."""
    node = tensor._node
    if node is not None:
        return node if node.wants else None
    param = tensor._param
    if param is not None and param.trainable:
        return param.leaf
    return None


def wants_grad(tensor: Recordable) -> bool:
    """Whether a gradient computed for ``tensor`` reaches anything (so a rule may skip it)."""
    return parent_of(tensor) is not None


def _op_node(
    seq: int,
    tape: Tape | None,
    parents: list[Node | None],
    rule: Rule,
    saved: tuple[Any, ...],
    data: Any,
    xp: Any,
    versions: Watched | None,
) -> Node:
    """An op's node, its fields set one by one (no __init__ frame; ``key``, ``wants`` and
    ``where`` are Node's class-level defaults). ``parents`` is the list itself, not a tuple of
    it: one allocation less per op."""
    made = Node()
    made.seq = seq
    made.tape = tape
    made.parents = parents
    made.rule = rule
    made.saved = saved
    made.shape = data.shape  # a tuple on every backend (NumPy, CuPy, array-api-strict)
    made.dtype = data.dtype
    made.xp = xp
    made.versions = versions
    return made


def record_node(
    data: Any,
    rule: Rule,
    inputs: Sequence[Recordable],
    saved: tuple[Any, ...],
    xp: Any,
    reads: tuple[bool, ...] | None = None,
    result: Recordable | None = None,
) -> Node | None:
    """The graph node of an op's result ``data``, or None when no input needs a gradient.

    It finds (and merges) the inputs' tapes and links trainable parameters as leaves,
    noting each parameter's write count, and the write count of every other input whose
    memory the rule will read: ``reads`` says which (one flag per input, then one for the
    result), or, when None, every input whose array is among ``saved``. An op on parameters alone (a reshaped weight, a
    sliced embedding table) gets a node without a tape, so that the parameter is still
    reached once the result meets a traced tensor; only a tape makes a result traced.
    ``result``, the tensor that will hold ``data``, has its write count noted too where the
    rule reads the result (``reads[-1]``, or ``data`` among ``saved``: ``exp`` saves
    ``e**x``), so that a write through an untraced alias (``y.detach()[...] = 0``) is seen.
    """
    # One pass over the inputs (this runs for every recorded op): tapes, parents, versions.
    # Written for speed: a counter, not enumerate; each attribute read once; the saved
    # values searched by identity inline (a NumPy array's == is element-wise); the watched
    # counters one flat tuple (see Watched); the node built by Node(), which has no __init__.
    # The node's number is drawn before any counter is read: a write another thread makes
    # meanwhile is then stamped after it, so the backward pass compares (see last_write).
    seq = next(_seq)
    tape: Tape | None = None
    graph = wanted = False
    versions: Watched | None = None
    parents: list[Node | None] = []
    position = -1
    for tensor in inputs:
        position += 1
        param = tensor._param
        trainable = param is not None and param.trainable
        if trainable:
            assert param is not None
            version = param.version
            versions = (
                (version, version.value, position)
                if versions is None
                else versions + (version, version.value, position)
            )
        elif saved:
            if reads is not None:
                read = reads[position]
            else:
                memory = tensor._data
                read = False
                for value in saved:
                    if value is memory:
                        read = True
                        break
            if read:
                # The rule will read this tensor's memory: a later write must be seen.
                version = tensor._version
                value = 0 if version is None else version.value
                versions = (tensor, value, position) if versions is None else versions + (tensor, value, position)
        node = tensor._node
        if node is not None:
            graph = True
            node_tape = node.tape
            if node_tape is not tape and node_tape is not None:
                tape = node_tape if tape is None else merge_tapes(tape, node_tape)
            if node.wants:
                wanted = True
                parents.append(node)
            else:
                parents.append(None)
        elif trainable:
            assert param is not None
            graph = wanted = True
            parents.append(param.leaf)
        else:
            parents.append(None)
    if not graph:
        return None
    if tape is not None and (tape.ended is not None or tape.thread != _get_ident()):
        check_usable(tape)
    if not wanted:
        # Only tape carriers in: the result carries the tape too, and saves nothing.
        return CarrierNode(tape, tuple(data.shape), data.dtype, xp)
    if result is not None and saved:
        if reads is not None:
            read = reads[-1]
        else:
            read = False
            for value in saved:
                if value is data:
                    read = True
                    break
        if read:
            version = result._version
            if version is None:
                version = result._version = Version()
            versions = (version, version.value, -1) if versions is None else versions + (version, version.value, -1)
    return _op_node(seq, tape, parents, rule, saved, data, xp, versions)


def watch_reads(node: Node, tensors: Sequence[Recordable]) -> None:
    """Add ``tensors`` (read by ``node``'s rule through a view, or given to it as no input: a
    condition, indices, labels) to the write counters its backward pass compares, at
    position -2; a write into one before that pass raises ``TapeError``."""
    versions: Watched | None = node.versions
    for tensor in tensors:
        version = tensor._version
        entry = (tensor, 0 if version is None else version.value, -2)
        versions = entry if versions is None else versions + entry
    node.versions = versions


def record_binary_node(
    data: Any,
    rule: Rule,
    first: Recordable,
    second: Recordable,
    saved: tuple[Any, ...],
    xp: Any,
    reads: tuple[bool, ...],
    result: Recordable,
) -> Node | None:
    """:func:`record_node` for an op of two inputs (either may be a number's placeholder, with
    no node and no parameter) whose rule says what it reads (``reads``): the same node, built
    without the loop (every binary op records here). Inputs that are parameters go through
    :func:`record_node`."""
    if first._param is not None or second._param is not None:
        return record_node(data, rule, (first, second), saved, xp, reads, result)
    seq = next(_seq)  # drawn before any counter is read (see record_node)
    first_node = first._node
    second_node = second._node
    if first_node is None:
        if second_node is None:
            return None
        tape = second_node.tape
    else:
        tape = first_node.tape
        if second_node is not None:
            other = second_node.tape
            if other is not tape and other is not None:
                tape = other if tape is None else merge_tapes(tape, other)
    if tape is not None and (tape.ended is not None or tape.thread != _get_ident()):
        check_usable(tape)
    first_parent = first_node if first_node is not None and first_node.wants else None
    second_parent = second_node if second_node is not None and second_node.wants else None
    if first_parent is None and second_parent is None:
        # Only tape carriers in: the result carries the tape too, and saves nothing.
        return CarrierNode(tape, tuple(data.shape), data.dtype, xp)
    versions: Watched | None = None
    read_first, read_second, read_result = reads
    if read_first:
        version = first._version
        if read_second:  # both inputs (a product of two tensors): one tuple, not two joined
            other = second._version
            versions = (
                first,
                0 if version is None else version.value,
                0,
                second,
                0 if other is None else other.value,
                1,
            )
        else:
            versions = (first, 0 if version is None else version.value, 0)
    elif read_second:
        version = second._version
        versions = (second, 0 if version is None else version.value, 1)
    if read_result:
        version = result._version
        if version is None:
            version = result._version = Version()
        versions = (version, version.value, -1) if versions is None else versions + (version, version.value, -1)
    # _op_node written out: binary ops are the most frequent, and would each pay its frame
    made = Node()
    made.seq = seq
    made.tape = tape
    made.parents = [first_parent, second_parent]
    made.rule = rule
    made.saved = saved
    made.shape = data.shape  # a tuple on every backend (NumPy, CuPy, array-api-strict)
    made.dtype = data.dtype
    made.xp = xp
    made.versions = versions
    return made


def record_unary_node(
    data: Any, rule: Rule, tensor: Recordable, saved: tuple[Any, ...], xp: Any, result: Recordable
) -> Node | None:
    """:func:`record_node` for an op of one input that reads what it saves (``reads`` None):
    the same node, built without the loop. A parameter goes through :func:`record_node`."""
    if tensor._param is not None:
        return record_node(data, rule, (tensor,), saved, xp, None, result)
    node = tensor._node
    if node is None:
        return None
    seq = next(_seq)  # drawn before any counter is read (see record_node)
    tape = node.tape
    if tape is not None and (tape.ended is not None or tape.thread != _get_ident()):
        check_usable(tape)
    if not node.wants:
        return CarrierNode(tape, tuple(data.shape), data.dtype, xp)
    versions: Watched | None = None
    memory = tensor._data
    for value in saved:
        if value is memory:
            version = tensor._version
            versions = (tensor, 0 if version is None else version.value, 0)
            break
    for value in saved:
        if value is data:
            version = result._version
            if version is None:
                version = result._version = Version()
            versions = (version, version.value, -1) if versions is None else versions + (version, version.value, -1)
            break
    made = Node()  # _op_node written out, as in record_binary_node
    made.seq = seq
    made.tape = tape
    made.parents = [node]
    made.rule = rule
    made.saved = saved
    made.shape = data.shape
    made.dtype = data.dtype
    made.xp = xp
    made.versions = versions
    return made


def new_leaf_key() -> int:
    """A fresh key for a traced input's gradient slot."""
    return next(_seq)


def column_sums(xp: Any, m: Any) -> Any:
    """The sum of each column of the matrix ``m``. On NumPy one matrix-vector product (BLAS
    gemv): 2–3× faster than a reduction over the rows, and in float32 no less accurate. On a
    device one reduction: the product there is two calls (the ones vector too), each with
    the host cost of a launch, and a launch-bound step pays for calls, not arithmetic."""
    # Told by the array, not by xp: sg.compile records NumPy's math through a namespace of its own.
    if not isinstance(cast(object, m), np.ndarray):
        half = getattr(xp, "float16", None)
        if half is not None and m.dtype == half:  # accumulated in float32, as the product would be
            return xp.astype(xp.sum(m, axis=0, dtype=xp.float32), half)
        return xp.sum(m, axis=0)
    return xp.matmul(xp.ones((m.shape[0],), dtype=m.dtype), m)


def row_sums(xp: Any, m: Any) -> Any:
    """The sum of each row of the matrix ``m``, as one matrix-vector product."""
    return xp.matmul(m, xp.ones((m.shape[1],), dtype=m.dtype))


def unbroadcast(xp: Any, grad: Any, shape: tuple[int, ...]) -> Any:
    """Sum ``grad`` over the axes broadcasting added, so it takes the operand's ``shape``."""
    extra = grad.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(
        i + extra for i, size in enumerate(shape) if size == 1 and grad.shape[i + extra] != 1
    )
    kept = math.prod(shape)
    if extra and axes == tuple(range(extra)) and kept > 0:
        # A bias's gradient: the leading axes summed away, the trailing ones kept.
        return xp.reshape(column_sums(xp, xp.reshape(grad, (-1, kept))), shape)
    if axes:
        grad = xp.sum(grad, axis=axes, keepdims=True)
    if extra or grad.shape != shape:
        grad = xp.reshape(grad, shape)
    return grad


def _deliver(root: Tape, node: Node, grad: Any) -> None:
    key = node.key
    delivered = False
    # Every Gradients holding the parameter gets it: a layer shared by two models (a tied
    # embedding) traced with x.trace(ga, gb) trains in both.
    for sink in root.sinks:
        if sink._accept(key, grad):
            delivered = True
    if delivered:
        return
    if node.tape is None and isinstance(node, LeafNode):  # a parameter's leaf: no Gradients on this tape holds its slot
        node.lost = True
    previous = root.leaf_grads.get(key)
    # A copy first: the array a rule gives may be another leaf's too (a + b gives both the same
    # gradient), a seed of the caller's or a read-only broadcast view; a write into one
    # gradient (scaling, clipping) must not change another.
    root.leaf_grads[key] = node.xp.asarray(grad, copy=True) if previous is None else previous + grad


def _check_versions(root: Tape, node: Node) -> None:
    versions = node.versions
    assert versions is not None
    for index in range(0, len(versions), 3):
        owner: Version | Recordable = versions[index]
        recorded: int = versions[index + 1]
        position: int = versions[index + 2]
        version = owner if isinstance(owner, Version) else owner._version
        now = 0 if version is None else version.value
        if now == recorded:
            continue
        op = _op_name(node)
        parent = node.parents[position] if 0 <= position < len(node.parents) else None
        is_param = parent is not None and parent.rule is None and parent.tape is None
        if is_param:
            assert parent is not None
            param_path = next((p for p in (s._path_of(parent.key) for s in root.sinks) if p is not None), None)
            name = f"parameter {param_path!r}" if param_path is not None else "a parameter"
            raise TapeError(
                f"{name} was modified in place (an optimizer update, sg.load or a write) after "
                f"the forward pass that used it and before this backward pass (version {recorded} when "
                f"recorded, {now} now); expected the weights the forward pass saw. Run "
                "backward before opt.update(...), or run the forward pass again."
            )
        which = (
            "its result"
            if position == -1
            else "a tensor it reads besides its inputs: a mask, indices, labels, or an input's memory read again"
            if position == -2
            else f"its input {position}"
        )
        shape = node.shape if isinstance(owner, Version) else tuple(owner._data.shape)
        raise TapeError(
            f"a tensor that {op} saved for the backward pass ({which}, shape {shape}) was "
            f"written in place after the op was recorded (version {recorded} when recorded, {now} "
            "now: a write such as t[...] = value, into it or into a tensor sharing its memory); expected the "
            "values the forward pass saw. Write into a fresh tensor (or .clone() the buffer before the "
            "forward pass), or run the forward pass again after the write."
        )


def _op_name(node: Node) -> str:
    name = getattr(node.rule, "__name__", "an op")
    return f"the op {name.removesuffix('_backward')!r}"


def run_backward(
    roots: Sequence[tuple[Node, Any]], check: Callable[[Node, Any, str], None] | None, retain: bool = False
) -> Tape:
    """One reverse pass from every ``(node, seed)`` pair; returns the tape that received it.

    Nodes are visited in decreasing creation order, which is a topological order because
    a node is always created after its parents; the heap keeps the pass iterative, so a
    graph of any depth runs without recursion.

    A second pass from the same output on one tape raises ``TapeError`` unless one of the
    passes from it said ``retain``: it would add the same gradient again. So does a pass into
    a ``Gradients`` an optimizer update consumed, until ``zero()``.
    """
    tape: Tape | None = None
    for node, _ in roots:
        assert node.tape is not None
        tape = node.tape.root() if tape is None else merge_tapes(tape, node.tape)
    assert tape is not None
    check_usable(tape)
    for sink in tape.sinks:
        sink._check_not_consumed()
    spent = tape.spent
    for i, (node, _) in enumerate(roots):
        if spent.get(node.seq) is False and not retain:
            raise TapeError(
                f"backward from output {i} ran already on this tape: a second pass would add the same "
                "gradients again (they would double). Expected one backward per output; to run it again "
                "on purpose, pass retain=True (t.backward(retain=True), sg.backward(..., retain=True))."
            )
    for node, _ in roots:
        spent[node.seq] = retain
    tape.passes.append(next(_seq))
    pending: dict[int, Any] = {}
    heap: list[tuple[int, Node]] = []
    for node, seed in roots:
        previous = pending.get(node.seq)
        if previous is None:
            pending[node.seq] = seed
            heapq.heappush(heap, (-node.seq, node))
        else:
            pending[node.seq] = previous + seed
    visited = tape.visited
    ref = weakref.ref
    push, pop = heapq.heappush, heapq.heappop
    # The node to visit next, when one is known to come before everything queued (its seq is
    # above the heap's), with its gradient: a chain of ops (each node's input is the op just
    # before) then runs without a heap push and pop, or a pending entry, per node, in the same
    # order. Only the node being visited can still add to it (every node that feeds it a
    # gradient was created after it, and those left are all older).
    ahead: Node | None = None
    ahead_grad: Any = None
    while True:
        if ahead is not None:
            node, grad, ahead = ahead, ahead_grad, None
        elif heap:
            node = pop(heap)[1]
            grad = pending.pop(node.seq)
        else:
            break
        rule = node.rule
        if rule is None:
            _deliver(tape, node, grad)
            continue
        versions = node.versions
        if versions is not None and node.seq < last_write:  # else no write since it was recorded
            for index in range(0, len(versions), 3):
                owner = versions[index]
                version = owner if owner.__class__ is Version else owner._version
                if (0 if version is None else version.value) != versions[index + 1]:
                    _check_versions(tape, node)  # raises, naming what was written
        visited.append(ref(node))
        xp = node.xp
        # The saved values as positional arguments where their number is a common one: a
        # call with a fixed argument list takes CPython's fast path, ``*saved`` its general
        # one (~0.1 µs more per node for a binary op's rule).
        saved = node.saved
        count = len(saved)
        if count == 4:  # every binary op: (x, y, out, need)
            input_grads = rule(xp, grad, saved[0], saved[1], saved[2], saved[3])
        elif count == 1:
            input_grads = rule(xp, grad, saved[0])
        elif count == 2:
            input_grads = rule(xp, grad, saved[0], saved[1])
        else:
            input_grads = rule(xp, grad, *saved)
        if check is not None:
            check(node, input_grads, "backward")
        # By index, not zip(..., strict=True): a call with a keyword argument takes CPython
        # 3.11's slow path, which cost ~0.16 µs per node; the lengths are compared here.
        parents = node.parents
        inputs = len(parents)
        if len(input_grads) != inputs:
            raise ValueError(
                f"the backward rule of {_op_name(node)} gave {len(input_grads)} gradients for {inputs} inputs; "
                "expected one per input (None for an input it gives none)"
            )
        for index in range(inputs):
            parent = parents[index]
            input_grad = input_grads[index]
            if parent is None or input_grad is None:
                continue
            if input_grad.shape != parent.shape:
                input_grad = unbroadcast(xp, input_grad, parent.shape)
            dtype = input_grad.dtype
            if dtype is not parent.dtype and dtype != parent.dtype:  # identity first: a dtype's == is slower
                input_grad = xp.astype(input_grad, parent.dtype)
            if parent is ahead:  # an op of one tensor with itself (x * x)
                ahead_grad = ahead_grad + input_grad
                continue
            seq = parent.seq
            previous = pending.get(seq)
            if previous is not None:
                pending[seq] = previous + input_grad
                continue
            if ahead is None:
                if not heap or seq > -heap[0][0]:
                    ahead, ahead_grad = parent, input_grad
                    continue
            elif seq > ahead.seq:
                pending[ahead.seq] = ahead_grad
                push(heap, (-ahead.seq, ahead))
                ahead, ahead_grad = parent, input_grad
                continue
            pending[seq] = input_grad
            push(heap, (-seq, parent))
    return tape
