"""Row narrowing for ``sg.compile``: a recording computes only the rows its results read.

A forward pass whose result is one position of a sequence (``model(ids)[:, -1]``, greedy
decoding) computes every position through every layer, then keeps one. Going back from the
results, each register gets a *demand*: what of it is read later, all of it or one slice of
one axis (``(axis, start, stop, step)``). An operation whose output is demanded narrowed and
that makes its output's rows from its inputs' rows (element-wise math with broadcasting,
matrix products, reshapes and transposes, basic indexing, reductions over other axes, the
library's row-wise kernels: softmax, layer norm, cross-entropy, GELU, ReLU, sigmoid) then
runs on narrowed inputs; an input that something else reads whole is sliced (a view) where
the narrowed operation reads it. In a transformer decoding its last position, the last
block's queries, attention rows, output projection, MLP and the head run for one row. An
operation giving booleans or integers from floats is not narrowed (see
``_Rules.discrete_from_floats``): narrowed products round otherwise, and a comparison could flip.

Narrowing runs only on recordings whose operations change nothing but their own arrays (no
optimizer update, random draw, host call or write into an input), so that the caller
(``_Plan``) can run the narrowed replay once on the recording's inputs and compare its
results with the recorded ones, keeping the whole recording where they differ. An in-place
write into memory that a narrowed value shares, where the two programs would share it
differently, keeps the recording whole too.
"""

from __future__ import annotations

import functools
import types
from dataclasses import dataclass
from typing import Any, Final, cast

import numpy as np

from ._compile_ir import Op, Ref, refs

Demand = tuple[int, int, int, int]  # (axis, start, stop, step): only that slice of the axis is read
WHOLE: Final = "whole"
Need = Demand | str  # a Demand, or WHOLE

# The library's fused kernels by name (``fused_kernel``'s): what each computes per row.
# "elementwise": every output has its input's shape, element by element; "rows": along the
# last axis of its first argument only (a softmax, a layer norm), the rest broadcast.
KERNEL_ROWS: Final = {
    "gelu_exact": "elementwise",
    "relu": "elementwise",
    "sigmoid": "elementwise",
    "softmax": "rows",
    "layer_norm": "rows",
    "cross_entropy": "rows",
}

_ELEMENTWISE_METHODS: Final = frozenset({"astype", "copy", "clip", "conj", "conjugate"})
_RESHAPES: Final = (np.reshape, np.squeeze, np.expand_dims, np.ravel)
_RESHAPE_METHODS: Final = frozenset({"reshape", "squeeze", "ravel"})
_REDUCTIONS: Final = (np.sum, np.mean, np.max, np.min, np.amax, np.amin, np.prod, np.var, np.std)
_REDUCTION_METHODS: Final = frozenset({"sum", "mean", "max", "min", "prod", "var", "std"})
_INDEX_REDUCTIONS: Final = (np.argmax, np.argmin)
_INDEX_REDUCTION_METHODS: Final = frozenset({"argmax", "argmin"})


@dataclass
class Snapshot:
    """A recording's instructions and registers as they were before narrowing."""

    ops: list[Op]
    plain: list[Any]
    views: list[Any]
    owner: list[int]
    made_by: list[int]
    guards: list[tuple[list[int], int, bool]]

    def restore(self, rec: Any) -> None:
        """Put the recording back as it was."""
        rec.ops, rec.plain, rec.views = self.ops, self.plain, self.views
        rec.owner, rec.made_by, rec.guards = self.owner, self.made_by, self.guards


@dataclass
class _Rule:
    """How one operation runs narrowed: the demand on each register it reads, and the
    operation with its constants rewritten for narrowed inputs (registers not yet renamed)."""

    inputs: dict[int, Need]
    op: Op
    view: bool = False  # its results are views of its input (run again to find them)
    demand: Need = WHOLE  # what of its results it was made for


def _join(a: Need | None, b: Need) -> Need:
    return b if a is None or a == b else WHOLE


def _selector(demand: Demand) -> tuple[slice, ...]:
    axis, start, stop, step = demand
    return (slice(None),) * axis + (slice(start, stop, step),)


def _on(demand: Demand, axis: int) -> Demand:
    """The same slice of another axis (of the input the demand passes to)."""
    return (axis, demand[1], demand[2], demand[3])


def _count(demand: Demand) -> int:
    return len(range(demand[1], demand[2], demand[3]))


def _copy_op(op: Op, kind: str, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Op:
    new = Op(kind, fn, args, kwargs, op.outs)
    new.expect, new.ufunc, new.pure, new.label, new.state = op.expect, op.ufunc, op.pure, op.label, op.state
    return new


def _array_args(op: Op) -> list[int] | None:
    """The registers among an operation's positional arguments (each one bare), or None
    where one is nested (a list of arrays) or a keyword other than ``out`` holds one."""
    found: list[int] = []
    for arg in op.args:
        if isinstance(arg, Ref):
            found.append(arg.index)
        elif refs(arg, []):
            return None
    for key, value in op.kwargs.items():
        if key != "out" and refs(value, []):
            return None
    return found


class _Rules:
    """The narrowing rules, given the registers' shapes as recorded and the values of those
    that are constants (made from no register: an index list turned into an array)."""

    def __init__(self, shapes: list[tuple[int, ...]], constants: dict[int, Any], kinds: list[str]) -> None:
        self.shapes = shapes
        self.constants = constants
        self.kinds = kinds  # each register's dtype kind ("f" float, "b" bool, ...; "" not an array)

    def discrete_from_floats(self, op: Op) -> bool:
        """Whether ``op`` gives booleans or integers from floats (a comparison, an argmax, a
        cast to int): run on narrowed floats, which round otherwise than whole ones, its result
        may flip, and meeting a whole computation of the same value (``h == h.max(axis=1)``) it
        flips where eager's cannot (the maximum equal to none of the row)."""
        outs = _outs(op)
        regs = refs((op.args, op.kwargs), [])
        return any(self.kinds[o] not in "fc" for o in outs) and any(self.kinds[r] in "fc" for r in regs)

    def need(self, reg: int, demand: Demand) -> Need:
        """``demand`` of ``reg``, or WHOLE where it covers the whole axis."""
        axis, start, stop, step = demand
        return WHOLE if start == 0 and step == 1 and stop >= self.shapes[reg][axis] else demand

    def broadcast(self, reg: int, ndim: int, demand: Demand) -> Need:
        """What of ``reg`` an ``ndim``-d result broadcast from it reads of ``demand``."""
        shape = self.shapes[reg]
        at = demand[0] - (ndim - len(shape))
        return WHOLE if at < 0 or shape[at] == 1 else self.need(reg, _on(demand, at))

    def rule(self, op: Op, demand: Need) -> _Rule | None:
        """How ``op`` runs when ``demand`` of its results is read; None: whole."""
        if op.kind == "method" and op.fn == "__getitem__":
            return self.getitem(op, demand)
        if demand == WHOLE or op.kind not in ("call", "method", "attr", "kernel"):
            return None
        d = cast(Demand, demand)
        fn = op.fn
        if op.kind == "kernel":
            role = KERNEL_ROWS.get(op.label or "")
            if role == "elementwise":
                return self.elementwise(op, d, same_shape=True)
            return self.rows(op, d) if role == "rows" else None
        if op.kind == "call":
            if isinstance(fn, np.ufunc):
                if fn is np.matmul:
                    return self.matmul(op, d)
                return self.elementwise(op, d) if fn.signature is None and fn.nout == 1 else None
            if fn is np.clip or (fn is np.where and len(op.args) == 3):
                return self.elementwise(op, d)
            if any(fn is f for f in _RESHAPES):
                return self.reshape(op, d)
            if fn is np.transpose or fn is np.swapaxes:
                return self.permute(op, d)
            if any(fn is f for f in _REDUCTIONS):
                return self.reduction(op, d, keeps=True)
            if any(fn is f for f in _INDEX_REDUCTIONS):
                return self.reduction(op, d, keeps=False)
            return None
        if op.kind == "attr":
            return self.permute(op, d) if fn in ("T", "mT") else None
        if fn in _ELEMENTWISE_METHODS:
            return self.elementwise(op, d)
        if fn in _RESHAPE_METHODS:
            return self.reshape(op, d)
        if fn in ("transpose", "swapaxes"):
            return self.permute(op, d)
        if fn in _REDUCTION_METHODS:
            return self.reduction(op, d, keeps=True)
        if fn in _INDEX_REDUCTION_METHODS:
            return self.reduction(op, d, keeps=False)
        return None

    def _out(self, op: Op) -> int | None:
        return op.outs if isinstance(op.outs, int) else None

    def elementwise(self, op: Op, d: Demand, same_shape: bool = False) -> _Rule | None:
        regs = _array_args(op)
        outs = _outs(op)
        if regs is None or not outs:
            return None
        ndim = len(self.shapes[outs[0]])
        if any(len(self.shapes[o]) != ndim for o in outs):
            return None
        if same_shape and any(self.shapes[r] != self.shapes[outs[0]] for r in regs):
            return None
        inputs: dict[int, Need] = {}
        for reg in regs:
            need = self.broadcast(reg, ndim, d)
            if inputs.get(reg, need) != need:
                return None
            inputs[reg] = need
        return _Rule(inputs, op)

    def rows(self, op: Op, d: Demand) -> _Rule | None:
        """A kernel along the last axis of its first argument: the other arguments
        broadcast against it (a softmax's mask), are one per row (cross-entropy's labels,
        the shape of its leading axes) or are the row's parameters (a norm's)."""
        regs = _array_args(op)
        if regs is None or not op.args or not isinstance(op.args[0], Ref):
            return None
        x = op.args[0].index
        ndim = len(self.shapes[x])
        if d[0] >= ndim - 1:
            return None
        inputs: dict[int, Need] = {x: self.need(x, d)}
        for reg in regs[1:]:
            if op.label == "softmax":
                need = self.broadcast(reg, ndim, d)
            elif op.label == "cross_entropy":
                if self.shapes[reg] != self.shapes[x][:-1]:
                    return None
                need = self.need(reg, d)
            else:
                need = WHOLE
            if inputs.get(reg, need) != need:
                return None
            inputs[reg] = need
        return _Rule(inputs, op)

    def matmul(self, op: Op, d: Demand) -> _Rule | None:
        out = self._out(op)
        if out is None or len(op.args) != 2 or not all(isinstance(a, Ref) for a in op.args):
            return None
        a, b = cast(Ref, op.args[0]).index, cast(Ref, op.args[1]).index
        if a == b or len(self.shapes[a]) < 2 or len(self.shapes[b]) < 2 or set(op.kwargs) - {"out"}:
            return None
        ndim = len(self.shapes[out])
        axis = d[0]
        if axis == ndim - 2:
            return _Rule({a: self.need(a, _on(d, len(self.shapes[a]) - 2)), b: WHOLE}, op)
        if axis == ndim - 1:
            return _Rule({a: WHOLE, b: self.need(b, _on(d, len(self.shapes[b]) - 1))}, op)
        inputs: dict[int, Need] = {}
        for reg in (a, b):
            shape = self.shapes[reg]
            at = axis - (ndim - len(shape))
            inputs[reg] = WHOLE if at < 0 or at >= len(shape) - 2 or shape[at] == 1 else self.need(reg, _on(d, at))
        return _Rule(inputs, op)

    def reshape(self, op: Op, d: Demand) -> _Rule | None:
        """Any reshape (``reshape``, ``squeeze``, ``expand_dims``, ``ravel``) where the
        narrowed axis stays an axis of its own, rewritten as ``reshape`` to the narrowed shape."""
        out = self._out(op)
        if out is None or not op.args or not isinstance(op.args[0], Ref):
            return None
        x = op.args[0].index
        if refs(op.args[1:], []) or refs(op.kwargs, []):
            return None
        given = len(op.args)
        if op.kind == "call" and op.fn is np.reshape and (op.kwargs or given > 2):
            return None  # order= (by keyword or by position)
        if op.fn in (np.ravel, "ravel") and (op.kwargs or given > 1):
            return None  # an order
        if op.kind == "method" and op.fn == "reshape" and op.kwargs:
            return None
        need = _reshaped_demand(self.shapes[x], self.shapes[out], d)
        if need is None:
            return None
        narrowed = tuple(_count(d) if i == d[0] else n for i, n in enumerate(self.shapes[out]))
        new = _copy_op(op, "call", np.reshape, (op.args[0], narrowed), {})
        return _Rule({x: self.need(x, need)}, new, view=True)

    def permute(self, op: Op, d: Demand) -> _Rule | None:
        out = self._out(op)
        if out is None or not op.args or not isinstance(op.args[0], Ref):
            return None
        x = op.args[0].index
        ndim = len(self.shapes[x])
        rest: list[Any] = list(op.args[1:])
        if refs(rest, []) or refs(op.kwargs, []):
            return None
        name = op.fn if isinstance(op.fn, str) else getattr(op.fn, "__name__", "")
        if name == "swapaxes":
            if len(rest) != 2 or op.kwargs:
                return None
            i, j = (int(v) % ndim for v in rest)
            perm = list(range(ndim))
            perm[i], perm[j] = perm[j], perm[i]
        elif name == "T":
            perm = list(reversed(range(ndim)))
        elif name == "mT":
            if ndim < 2:
                return None
            perm = [*range(ndim - 2), ndim - 1, ndim - 2]
        else:
            axes: Any = op.kwargs.get("axes") if op.kwargs else None
            if op.kwargs and set(op.kwargs) != {"axes"}:
                return None
            if axes is None:
                axes = rest[0] if len(rest) == 1 and not isinstance(rest[0], int) else (rest or None)
            perm = list(reversed(range(ndim))) if axes is None else [int(v) % ndim for v in axes]
        if sorted(perm) != list(range(ndim)):
            return None
        return _Rule({x: self.need(x, _on(d, perm[d[0]]))}, op, view=True)

    def reduction(self, op: Op, d: Demand, keeps: bool) -> _Rule | None:
        """A reduction over other axes than the narrowed one (``keepdims`` or not)."""
        out = self._out(op)
        if out is None or not op.args or not isinstance(op.args[0], Ref):
            return None
        if refs(op.args[1:], []) or refs(op.kwargs, []):
            return None
        x = op.args[0].index
        ndim = len(self.shapes[x])
        axis_arg: Any = op.kwargs.get("axis", op.args[1] if len(op.args) > 1 else None)
        if axis_arg is None or isinstance(axis_arg, bool):
            return None
        axes: tuple[Any, ...] = cast("tuple[Any, ...]", axis_arg) if isinstance(axis_arg, tuple) else (axis_arg,)
        reduced = {int(a) % ndim for a in axes}
        keepdims = bool(op.kwargs.get("keepdims", False)) and keeps
        if keepdims:
            at = d[0]
        else:
            kept = [i for i in range(ndim) if i not in reduced]
            if len(kept) != len(self.shapes[out]):
                return None
            at = kept[d[0]]
        if at in reduced:
            return None
        return _Rule({x: self.need(x, _on(d, at))}, op)

    def getitem(self, op: Op, demand: Need) -> _Rule | None:
        """Basic indexing: integers, one-integer lists (``x[:, [-1], :]``, also as a constant
        array) and step-1 slices. The one axis it selects part of (with the part of the result
        read) is what it reads of its input; its index on that axis becomes the whole narrowed
        axis."""
        out = self._out(op)
        if out is None or len(op.args) != 2 or not isinstance(op.args[0], Ref):
            return None
        x = op.args[0].index
        shape = self.shapes[x]
        index: Any = op.args[1]
        items: list[Any] = list(cast("tuple[Any, ...]", index)) if isinstance(index, tuple) else [index]
        for at, item in enumerate(items):
            if isinstance(item, Ref):
                value = self.constants.get(item.index)
                if value is None or value.ndim != 1 or value.size != 1 or value.dtype.kind not in "iu":
                    return None
                items[at] = [int(value[0])]  # what the list it was made from held
            elif refs(item, []):
                return None
        if sum(1 for i in items if i is Ellipsis) > 1:
            return None
        if Ellipsis in items:
            at = items.index(Ellipsis)
            items[at : at + 1] = [slice(None)] * (len(shape) - len(items) + 1)
        if len(items) > len(shape):
            return None
        items += [slice(None)] * (len(shape) - len(items))
        lists = sum(1 for i in items if isinstance(i, list))
        integers = sum(1 for i in items if isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)))
        if lists and lists + integers > 1:
            return None  # with a list, integers index as arrays too: their axes broadcast into one, maybe moved first
        selected: list[tuple[int, int, int, Any]] = []  # (axis, start, stop, its new item)
        out_axes: list[int] = []
        for axis, item in enumerate(items):
            size = shape[axis]
            if isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
                at_index = int(cast(Any, item))
                v = at_index % size if -size <= at_index < size else None
                if v is None:
                    return None
                if size > 1:
                    selected.append((axis, v, v + 1, 0))
            elif isinstance(item, list):
                one = cast("list[Any]", item)
                if len(one) != 1 or not isinstance(one[0], (int, np.integer)) or isinstance(one[0], bool):
                    return None
                first = int(cast(Any, one[0]))
                if not -size <= first < size:
                    return None
                out_axes.append(axis)
                if size > 1:
                    selected.append((axis, first % size, first % size + 1, [0]))
            elif isinstance(item, slice):
                start, stop, step = item.indices(size)
                if step != 1 or stop <= start:
                    return None
                out_axes.append(axis)
                if (start, stop) != (0, size):
                    selected.append((axis, start, stop, slice(None)))
            else:
                return None  # None (a new axis), an array, a boolean
        if demand != WHOLE:
            d = cast(Demand, demand)
            axis = out_axes[d[0]]
            item = items[axis]
            if not isinstance(item, slice):
                return None
            start = item.indices(shape[axis])[0]
            # the item's own slice has step 1: the read part of it, counted from its start
            selected = [s for s in selected if s[0] != axis] + [(axis, start + d[1], start + d[2], slice(None))]
            step = d[3]
        else:
            step = 1
        if len(selected) != 1:
            return None
        axis, start, stop, replacement = selected[0]
        items[axis] = replacement
        new = _copy_op(op, op.kind, op.fn, (op.args[0], tuple(items)), dict(op.kwargs))
        return _Rule({x: (axis, start, stop, step)}, new, view=True)


def _reshaped_demand(source: tuple[int, ...], target: tuple[int, ...], d: Demand) -> Demand | None:
    """What of a reshape's input (``source`` shape) its output's (``target``) demand ``d``
    reads, where that is one slice of one axis: the axis kept as it is; the axis merged from
    several (``(B, T, D)`` to ``(B·T, D)``: a range of its outer one, or one index of its inner
    one read from every outer, a step); or the axis split into several (its outer part: a
    range; its inner part: one index, a step over the input's axis)."""
    axis = d[0]
    if target[axis] == 1:
        return None
    groups = _reshape_groups(source, target)
    if groups is None:
        return None
    for ins, outs in groups:
        if axis not in outs:
            continue
        if len(ins) == 1 and len(outs) == 1:
            return _on(d, ins[0])
        total = int(np.prod([source[i] for i in ins], dtype=np.int64))
        if len(outs) == 1:  # merged from ins: index m = i0·(inner of i0) + ...
            first, last = ins[0], ins[-1]
            inner = total // source[first]
            _, start, stop, step = d
            if step == 1 and start % inner == 0 and stop % inner == 0:
                return (first, start // inner, stop // inner, 1)
            if step == source[last] and start < step and _count(d) == total // step:
                return (last, start, start + 1, 1)
            return None
        if len(ins) == 1:  # split into outs
            at = outs.index(axis)
            inner = int(np.prod([target[o] for o in outs[at + 1 :]], dtype=np.int64))
            _, start, stop, step = d
            if at == 0 and step == 1:
                return (ins[0], start * inner, stop * inner, 1)
            if at == len(outs) - 1 and _count(d) == 1:
                return (ins[0], start, total, target[axis])
        return None
    return None


def _reshape_groups(source: tuple[int, ...], target: tuple[int, ...]) -> list[tuple[list[int], list[int]]] | None:
    """A reshape's axes of more than one element, paired into the groups of input and
    output axes with one product (a merge, a split, or one axis kept)."""
    ins = [i for i, n in enumerate(source) if n != 1]
    outs = [o for o, n in enumerate(target) if n != 1]
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(ins) and j < len(outs):
        group_in, group_out = [ins[i]], [outs[j]]
        left, right = source[ins[i]], target[outs[j]]
        i, j = i + 1, j + 1
        while left != right:
            if left < right and i < len(ins):
                left *= source[ins[i]]
                group_in.append(ins[i])
                i += 1
            elif right < left and j < len(outs):
                right *= target[outs[j]]
                group_out.append(outs[j])
                j += 1
            else:
                return None
        groups.append((group_in, group_out))
    return groups if i == len(ins) and j == len(outs) else None


def _constants(rec: Any) -> dict[int, Any]:
    """The registers that pure operations made from no register (the same at every replay),
    with their recorded values: NumPy arrays that no operation writes, by any view (the
    recorded value is the one the recording ended with)."""
    written = [
        rec.plain[reg]
        for op in rec.ops
        if op.kind in ("call", "method", "attr", "kernel")
        for reg in rec._writes(op.kind, op.fn, op.args, op.kwargs)  # noqa: SLF001 -- the recorder's own rule
    ]
    found: dict[int, Any] = {}
    for op in rec.ops:
        if op.kind == "call" and op.pure and isinstance(op.outs, int) and not refs((op.args, op.kwargs), []):
            value: Any = rec.plain[op.outs]
            if _is_ndarray(value) and not any(np.may_share_memory(value, w) for w in written):
                found[op.outs] = value
    return found


def _side_effect_free(rec: Any) -> bool:
    """Whether every operation changes only arrays the recording made (so that running the
    replay once more changes nothing the caller sees)."""
    for op in rec.ops:
        if op.kind == "check":
            continue
        if op.kind == "kernel":
            if op.label not in KERNEL_ROWS:
                return False
            continue
        if op.kind not in ("call", "method", "attr"):
            return False
        fn: Any = op.fn
        if isinstance(fn, (types.MethodType, functools.partial)) and not op.pure:
            return False  # a backend's helper, a random draw (asarray is pure)
        for reg in rec._writes(op.kind, fn, op.args, op.kwargs):  # noqa: SLF001 -- the recorder's own rule
            if rec.made_by[rec.owner[reg]] < 0:
                return False
    return True


def _outs(op: Op) -> list[int]:
    made: Any = op.outs
    items: tuple[Any, ...] = cast("tuple[Any, ...]", made) if isinstance(made, tuple) else (made,)
    return [o for o in items if o is not None]


def _wanted(op: Op, demand: list[Need | None]) -> Need | None:
    """What is read of an operation's results, joined over them (None: nothing)."""
    wanted: Need | None = None
    for out in _outs(op):
        found = demand[out]
        if found is not None:
            wanted = _join(wanted, found)
    return wanted


def _demands(
    rec: Any, rules: _Rules, needed: list[int], opaque: set[int]
) -> tuple[list[Need | None], dict[int, _Rule]]:
    """Each register's demand, and the rule of each operation that runs narrowed."""
    demand: list[Need | None] = [None] * len(rec.plain)
    for reg in needed:
        demand[reg] = WHOLE
    for _, reg, _ in rec.guards:
        demand[reg] = WHOLE
    narrowed: dict[int, _Rule] = {}
    for position in range(len(rec.ops) - 1, -1, -1):
        op = rec.ops[position]
        wanted = _wanted(op, demand)
        rule = None if wanted is None or position in opaque else rules.rule(op, wanted)
        if rule is not None and rules.discrete_from_floats(op):
            rule = None
        if rule is None:
            for reg in refs((op.args, op.kwargs), []):
                demand[reg] = WHOLE
            continue
        rule.demand = cast(Need, wanted)
        narrowed[position] = rule
        for reg, need in rule.inputs.items():
            demand[reg] = _join(demand[reg], need)
        for reg in refs(op.kwargs.get("out"), []):
            demand[reg] = _join(demand[reg], cast(Need, wanted))
    return demand, narrowed


def _run_view(op: Op, args: tuple[Any, ...]) -> Any:
    if op.kind == "call":
        return op.fn(*args)
    if op.kind == "attr":
        return getattr(args[0], op.fn)
    return getattr(args[0], op.fn)(*args[1:])


def _rename(template: Any, names: dict[int, int]) -> Any:
    if isinstance(template, Ref):
        return Ref(names.get(template.index, template.index))
    if isinstance(template, tuple):
        return tuple(_rename(v, names) for v in cast("tuple[Any, ...]", template))
    if isinstance(template, list):
        return [_rename(v, names) for v in cast("list[Any]", template)]
    if isinstance(template, dict):
        return {k: _rename(v, names) for k, v in cast("dict[Any, Any]", template).items()}
    return template


class _Abandon(Exception):
    """The recording stays whole."""


def narrow(rec: Any, needed: list[int]) -> tuple[Snapshot, int] | None:
    """Rewrite ``rec`` (a ``_Recorder``) to compute only the rows ``needed`` reads: the
    snapshot to restore it from and the number of operations narrowed, or None where
    nothing narrows (``rec`` unchanged)."""
    if not rec.ops or not _side_effect_free(rec):
        return None
    rules = _Rules(
        [tuple(getattr(p, "shape", ())) for p in rec.plain],
        _constants(rec),
        [getattr(getattr(p, "dtype", None), "kind", "") for p in rec.plain],
    )
    snapshot = Snapshot(
        list(rec.ops), list(rec.plain), list(rec.views), list(rec.owner), list(rec.made_by), list(rec.guards)
    )
    # a guard's ops run again on their own before each replay (``_Plan._guards``), without
    # the slices a narrowed program adds: they stay as recorded
    opaque: set[int] = {position for cone, _, _ in rec.guards for position in cone}
    for _ in range(8):
        demand, narrowed = _demands(rec, rules, needed, opaque)
        if not narrowed:
            return None
        try:
            conflict, count = _rewrite(rec, snapshot, demand, narrowed, needed)
        except _Abandon:
            return None
        if conflict is None:
            return (snapshot, count) if count else None
        opaque.add(conflict)  # an in-place write into what could not be made narrowed
    return None


def _rewrite(
    rec: Any, snapshot: Snapshot, demand: list[Need | None], narrowed: dict[int, _Rule], needed: list[int]
) -> tuple[int | None, int]:
    """Rewrite the recording's operations: (None, how many run narrowed) when done, or the
    position of an in-place operation that cannot run narrowed (what it writes into was
    made whole) with the recording left as it was."""
    old_ops, old_plain = snapshot.ops, snapshot.plain
    state: list[Need] = [WHOLE] * len(old_plain)
    plain, owner, made_by = list(old_plain), list(snapshot.owner), list(snapshot.made_by)
    views: list[Any] = list(snapshot.views)
    ops: list[Op] = []
    count = 0
    moved: dict[int, int] = {}  # old position -> new
    derived: dict[int, int] = {}  # register -> the register it is a view of, made by a view rule or a slice

    def new_register(value: Any, of: int, at: int) -> int:
        plain.append(value)
        views.append(None)
        owner.append(owner[of])
        made_by.append(at)
        state.append(WHOLE)
        return len(plain) - 1

    for position, op in enumerate(old_ops):
        rule = narrowed.get(position)
        if rule is not None and rule.view and _plain_index(rule, demand, op, state):
            rule = None  # indexing read whole: as recorded (a slice first would add an op)
        if rule is not None:
            outs = _outs(op)
            joined = _wanted(op, demand)
            wanted: Need = WHOLE if joined is None else joined
            if wanted != rule.demand:
                # an earlier operation reads more of what this one writes in place (out=)
                # than was known when its rule was made: it runs whole
                return position, 0
            for reg in refs(op.kwargs.get("out"), []):
                if state[reg] != wanted or made_by[reg] < 0:
                    return position, 0
            names: dict[int, int] = {}
            for reg, need in rule.inputs.items():
                if need == WHOLE or state[reg] == need:
                    if state[reg] != need:
                        raise _Abandon  # the joins make this impossible; never run it wrong
                    continue
                if state[reg] != WHOLE:
                    raise _Abandon
                sel = _selector(cast(Demand, need))
                sliced = new_register(plain[reg][sel], reg, len(ops))
                derived[sliced] = reg
                names[reg] = sliced
                cut = Op("method", "__getitem__", (Ref(reg), sel), {}, sliced)
                cut.pure, cut.state = True, op.state
                ops.append(cut)
            new = rule.op
            new = _copy_op(new, new.kind, new.fn, _rename(new.args, names), _rename(new.kwargs, names))
            moved[position] = len(ops)
            ops.append(new)
            count += 1
            if rule.view:
                args = tuple(plain[a.index] if isinstance(a, Ref) else a for a in new.args)
                value = _run_view(new, args)
                out = cast(int, op.outs)
                source = cast(Ref, new.args[0]).index
                plain[out] = value
                owner[out] = owner[source] if np.may_share_memory(value, plain[source]) else out
                derived[out] = source
                state[out] = wanted
            elif wanted != WHOLE:
                sel = _selector(cast(Demand, wanted))
                for out in outs:
                    if made_by[out] == position:
                        plain[out] = np.ascontiguousarray(old_plain[out][sel])
                    state[out] = wanted
            for out in outs:
                views[out] = None
        else:
            if any(state[reg] != WHOLE for reg in refs((op.args, op.kwargs), [])):
                raise _Abandon  # the joins make this impossible; never run it wrong
            moved[position] = len(ops)
            ops.append(op)
    for reg in range(len(snapshot.made_by)):
        if made_by[reg] >= 0:
            made_by[reg] = moved[made_by[reg]]
    _check_writes(rec, ops, plain, old_plain, state, derived, needed)
    rec.ops, rec.plain, rec.views, rec.owner, rec.made_by = ops, plain, views, owner, made_by
    rec.guards = [([moved[p] for p in cone], reg, answer) for cone, reg, answer in snapshot.guards]
    return None, count


def _plain_index(rule: _Rule, demand: list[Need | None], op: Op, state: list[Need]) -> bool:
    """Whether ``op`` is indexing whose result is read whole from an input that is whole."""
    outs = _outs(op)
    return (
        op.kind == "method"
        and op.fn == "__getitem__"
        and all(demand[o] == WHOLE for o in outs)
        and all(state[r] == WHOLE for r in rule.inputs)
    )


def _check_writes(
    rec: Any,
    ops: list[Op],
    plain: list[Any],
    old_plain: list[Any],
    state: list[Need],
    derived: dict[int, int],
    needed: list[int],
) -> None:
    """Raise :class:`_Abandon` where an in-place write could reach other values in the
    narrowed program than in the recorded one: for each write, every value read after it
    (other than views made of the written one after it) must share memory with it in both
    programs or in neither, and where it does, be narrowed as the written one is or not."""
    n = len(old_plain)
    last_read = [-1] * len(plain)
    first_made = [len(ops)] * len(plain)
    for position, op in enumerate(ops):
        for reg in refs((op.args, op.kwargs), []):
            last_read[reg] = position
        for reg in _outs(op):
            first_made[reg] = min(first_made[reg], position)
    for reg in needed:
        last_read[reg] = len(ops)
    changed = [r for r in range(len(plain)) if r >= n or plain[r] is not old_plain[r]]

    def origin(r: int) -> int:
        while r >= n:
            r = derived[r]
        return r

    for position, op in enumerate(ops):
        if op.kind in ("kernel", "check"):
            continue  # the row-wise kernels write only what they make
        for w in rec._writes(op.kind, op.fn, op.args, op.kwargs):  # noqa: SLF001 -- the recorder's own rule
            others = range(len(plain)) if w >= n or plain[w] is not old_plain[w] else changed
            for r in others:
                if r == w or last_read[r] <= position or not isinstance(plain[r], np.ndarray):
                    continue
                if first_made[r] > position and _made_from(r, w, derived):
                    continue  # a view of what was written, made after the write in both programs
                new_share = bool(np.may_share_memory(plain[w], plain[r]))
                old_share = bool(np.may_share_memory(old_plain[origin(w)], old_plain[origin(r)]))
                if new_share != old_share or (new_share and (state[w] == WHOLE) != (state[r] == WHOLE)):
                    raise _Abandon


def _made_from(r: int, w: int, derived: dict[int, int]) -> bool:
    while r in derived:
        r = derived[r]
        if r == w:
            return True
    return False


def agrees(recorded: list[Any], replayed: tuple[Any, ...]) -> bool:
    """Whether a narrowed replay's results are the recorded ones: equal, or for floats
    within what products of another shape round differently (a structural mistake gives
    other rows entirely)."""
    return all(_same_result(a, b) for a, b in zip(recorded, replayed, strict=True))


def _same_result(a: Any, b: Any) -> bool:
    # a reduction's scalar result: recorded as a 0-d array
    x: Any = a
    y: Any = b
    if isinstance(y, np.generic):
        y = cast(Any, np.asarray(cast(Any, y)))
    if not _is_ndarray(x) or not _is_ndarray(y):
        return x is y or (type(x) is type(y) and bool(np.all(x == y)))
    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    if x.dtype.kind not in "fc":
        return bool(np.array_equal(x, y))
    finite: Any = np.abs(x[np.isfinite(x)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    close = bool(np.allclose(y, x, rtol=1e-4, atol=1e-5 * scale, equal_nan=True))
    return close and bool(np.array_equal(np.isfinite(x), np.isfinite(y)))


def _is_ndarray(value: Any) -> bool:
    return isinstance(value, np.ndarray)
