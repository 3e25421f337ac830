"""Writes shapegrad's second typed surface: stubs in Pyrefly's tensor-shape syntax (issue #28).

    python shapegrad/_pyrefly_stubs.py          # rewrite the stubs under shapegrad/_pyrefly/
    python shapegrad/_pyrefly_stubs.py --check  # exit 1 when they are stale (run by the tests)
    python shapegrad/_pyrefly_stubs.py --path   # the directory to put on Pyrefly's search-path

Python's type system cannot compute a size; Pyrefly's shape extension (``pyrefly-shape-extensions``,
experimental upstream) can: ``IntVar`` dims, arithmetic on them in annotations, and shape rules
written as ``@type_shape_dsl_function``s. Its spelling is not pyright's (``Tensor[T, [B, 784]]``,
PEP 695 type parameters bound to ``IntVar``/``IntTuple``), so it takes a second stub set. These
stubs are that set, generated from the same op table (``_opspec.OPS``) as the pyright surface
(``_typegen``): each row's method and function form, its tape rule (one tape variable, ``NoTape``
the bottom, as for pyright) and its shape rule, where the rule is

- computed by Pyrefly: broadcasting (``broadcast``), ``reshape`` with literal sizes and one
  ``-1``, ``flatten``, indexing and slicing with literal bounds (``index_shape``);
- the pyright table's own patterns, translated (``Prod[K, A]`` is ``K * A``, ``Sum[A, K]`` is
  ``A + K``, ``L[1]`` is ``1``, an ``Open`` dim is ``int``): matmul, reductions, squeeze,
  permute, concat and stack of a pair, where;
- written per op: the layers (``nn``), where a convolution's and a pooling's output sizes are
  the arithmetic of their stride, padding, dilation and kernel.

An op the stubs give no shape rule (``topk``, ``einsum``, ...) answers ``Any``: unchecked, never
a false error. Pyrefly reads the stubs only when their directory is on its search path (opt-in,
``search-path`` in ``pyrefly.toml``); pyright, mypy and ty never see them.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

if __package__:
    from . import _typegen
    from ._opspec import HAND_KINDS, OPS, OpSpec
else:  # run as a script: works while the package cannot import
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _typegen
    from _opspec import HAND_KINDS, OPS, OpSpec

__all__ = ["STUBS", "check", "main", "stub_files", "write"]

PACKAGE = Path(__file__).resolve().parent
# The search-path entry: it holds a package named ``shapegrad`` made of .pyi files only.
STUBS = PACKAGE / "_pyrefly"

# The type parameters of the pyright surface, by what they stand for in Pyrefly's syntax.
_DIM_VARS = ("N", "K", "A", "C")
_SHAPE_VARS = ("S",)
_TAPE_VARS = ("T",)


# --------------------------------------------------------------------------- translation
def _split(args: str) -> list[str]:
    """Top-level comma-separated parts of ``args`` (brackets nest)."""
    parts: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(args):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(args[start:i].strip())
            start = i + 1
    tail = args[start:].strip()
    if tail:
        parts.append(tail)
    return parts


def _closing(text: str, open_at: int) -> int:
    """The index of the bracket that closes the one at ``open_at``."""
    depth = 0
    for i in range(open_at, len(text)):
        depth += text[i] == "["
        depth -= text[i] == "]"
        if depth == 0:
            return i
    raise ValueError(f"unbalanced brackets: {text!r}")


def _dim(dim: str) -> str:
    """One pyright dim as a Pyrefly dim."""
    if dim in ("Open", "Any"):
        return "int"  # a gradual dim
    literal = re.fullmatch(r"L\[(-?\d+)\]", dim)
    if literal:
        return literal[1]
    for wrapper, op in (("Prod", " * "), ("Sum", " + ")):
        if dim.startswith(f"{wrapper}["):
            return "(" + op.join(_dim(d) for d in _split(dim[len(wrapper) + 1 : -1])) + ")"
    return dim


def translate(text: str) -> str:
    """A pyright annotation (``Tensor[T, *S, Prod[K, A]]``) in Pyrefly's spelling
    (``Tensor[T, [*S, (K * A)]]``); a rank-0 ``Tensor[T]`` is ``Tensor[T, []]`` and an open
    rank (``*tuple[Open, ...]``) a gradual shape, ``Any``."""
    out, i = "", 0
    while (at := text.find("Tensor[", i)) >= 0:
        end = _closing(text, at + len("Tensor"))
        tape, *dims = _split(text[at + len("Tensor[") : end])
        if dims == ["*tuple[Open, ...]"] or dims == ["*tuple[Any, ...]"]:
            shape = "Any"
        else:
            shape = "[" + ", ".join(_dim(d) for d in dims) + "]"
        out += text[i:at] + f"Tensor[{tape}, {shape}]"
        i = end + 1
    return out + text[i:]


def _type_params(signature: str) -> str:
    """The PEP 695 parameter list a translated signature needs (Pyrefly scopes a shape DSL
    call's variables only in that form)."""
    body = re.sub(r"L\[[^\]]*\]", "", signature)
    used = [v for v in (*_TAPE_VARS, *_SHAPE_VARS, *_DIM_VARS, "S2", "NS", "I") if re.search(rf"\b{v}\b", body)]
    bound = {**dict.fromkeys(_SHAPE_VARS + ("S2", "NS"), ": IntTuple"), **dict.fromkeys(_DIM_VARS, ": IntVar")}
    bound["I"] = ": Index"
    return "[" + ", ".join(v + bound.get(v, "") for v in used) + "]" if used else ""


Sig = tuple[str, list[str], str]  # (the first operand's type, the other parameters, the result)


def _table(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    """The pyright table's patterns for ``op``, translated; the copies with an untraced first
    operand are left out (a pyright solver workaround: Pyrefly joins ``NoTape`` with a
    caller's tape variable in one overload)."""
    # where's pyright overloads check the mask through a protocol: the plain patterns here
    render = _typegen.where_patterns if op.kind == "where" else _typegen.RENDERERS[op.kind]
    for first, rest, ret in render(op, other, form):
        operand = rest[0].partition(": ")[2] if op.kind == "where" else first
        if operand.startswith(f"Tensor[{_typegen.UNTRACED_FIRST}") and op.tape == "join":
            continue
        # the class's own tape parameter (pyright's method form) is the stubs' one tape variable
        first, rest, ret = (
            first.replace("Tape_", "T"),
            [r.replace("Tape_", "T") for r in rest],
            ret.replace("Tape_", "T"),
        )
        if any(f"Tensor[T, {_typegen.OPEN_DIMS}]" in t for t in (first, *rest[:1])):
            continue  # an open-rank operand: pyright's gradual fallback, Any here, would accept anything
        yield translate(first), [translate(r) for r in rest], translate(ret)


# --------------------------------------------------------------------------- Pyrefly's own rules
def _binary(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    yield "Tensor[T, S]", [f"{other}: Tensor[T, S2]"], "Tensor[T, broadcast(S, S2)]"
    yield "Tensor[T, S]", [f"{other}: float"], "Tensor[T, S]"
    if form == "function":
        yield "float", [f"{other}: Tensor[T, S]"], "Tensor[T, S]"


def _compare(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    yield "Tensor[Any, S]", [f"{other}: Tensor[Any, S2]"], "Tensor[NoTape, broadcast(S, S2)]"
    yield "Tensor[Any, S]", [f"{other}: float"], "Tensor[NoTape, S]"
    if form == "function":
        yield "float", [f"{other}: Tensor[Any, S]"], "Tensor[NoTape, S]"


def _reshape(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    sizes = "*shape: *NS" if form == "method" else "shape: IntTupleOrList[NS]"
    yield "Tensor[T, S]", [sizes], "Tensor[T, reshaped(S, NS)]"


def _flatten(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    yield "Tensor[T, S]", [], "Tensor[T, flattened(S)]"


def _getitem(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    yield "Tensor[T, S]", ["index: I"], "Tensor[T, index_shape(S, I)]"


def _axis_name(axis: str) -> str:
    """``L[1]`` -> ``1``, ``L[-1]`` -> ``last``, ``L[-2]`` -> ``from_end_2``: the suffix of a
    per-axis DSL rule."""
    k = int(axis[2:-1])
    if k < -1:
        return f"from_end_{-k}"
    return "last" if k == -1 else str(k)


def _concat(op: OpSpec, other: str, form: str) -> Iterator[Sig]:
    """A pair given as a tuple joins by a DSL rule per axis of the table's pairs (a plain
    generic signature, ``A + K``, loses its variables when the call is itself an argument of
    a generic call, ``conv(sg.concat((up, skip), axis=1))``); a sequence has no length in
    its type and takes the table's open rules."""
    pairs = len(_typegen._CONCAT_PAIRS)
    for i, (axis, *_) in enumerate(_typegen._CONCAT_PAIRS):
        default = " = 0" if i == 0 else ""
        yield (
            "tuple[Tensor[T, S], Tensor[T, S2]]",
            [f"axis: {axis}{default}"],
            f"Tensor[T, joined_{_axis_name(axis)}(S, S2)]",
        )
    yield from list(_table(op, other, form))[pairs:]


def joined_rules() -> str:
    """The DSL rule of each concat pair axis in the table: the joined axis is the sum, the
    others must agree."""
    rules: list[str] = []
    for axis, *_ in _typegen._CONCAT_PAIRS:
        name = _axis_name(axis)
        head = f"@type_shape_dsl_function\ndef joined_{name}(a: IntTuple, b: IntTuple) -> IntTuple:\n"
        head += f'    """``concat`` of a pair at axis {axis[2:-1]}."""\n'
        if name == "last":
            body = (
                "    if len(a) != len(b) or len(a) < 1:\n"
                '        return dsl.Invalid("concat: the two tensors\' ranks differ")\n'
                "    rest = a[:-1]\n"
                "    differ = dsl.IntTuple(a[i] for i in range(len(rest)) if a[i] != b[i])\n"
                "    if len(differ) > 0:\n"
                '        return dsl.Invalid("concat: the dims other than the joined one differ")\n'
                "    return dsl.concat(rest, dsl.IntTuple((a[-1] + b[-1],)))\n"
            )
        elif name.startswith("from_end_"):
            back = int(name.removeprefix("from_end_"))
            body = (
                f"    if len(a) != len(b) or len(a) < {back}:\n"
                '        return dsl.Invalid("concat: the two tensors\' ranks differ")\n'
                f"    differ = dsl.IntTuple(a[i] for i in range(len(a)) if i != len(a) - {back} and a[i] != b[i])\n"
                "    if len(differ) > 0:\n"
                '        return dsl.Invalid("concat: the dims other than the joined one differ")\n'
                f"    return dsl.IntTuple(a[i] + b[i] if i == len(a) - {back} else a[i] for i in range(len(a)))\n"
            )
        else:
            body = (
                f"    if len(a) != len(b) or len(a) <= {name}:\n"
                '        return dsl.Invalid("concat: the two tensors\' ranks differ")\n'
                f"    differ = dsl.IntTuple(a[i] for i in range(len(a)) if i != {name} and a[i] != b[i])\n"
                "    if len(differ) > 0:\n"
                '        return dsl.Invalid("concat: the dims other than the joined one differ")\n'
                f"    return dsl.IntTuple(a[i] + b[i] if i == {name} else a[i] for i in range(len(a)))\n"
            )
        rules.append(head + body)
    return "\n\n".join(rules)


RULES: dict[str, Callable[[OpSpec, str, str], Iterator[Sig]]] = {
    "binary": _binary,
    "compare": _compare,
    "reshape": _reshape,
    "flatten": _flatten,
    "getitem": _getitem,
    "concat": _concat,
    **dict.fromkeys(("matmul", "reduce", "squeeze", "expand_dims", "permute", "transpose", "stack", "where"), _table),
}


def _overloads(name: str, sigs: list[Sig], first_name: str, indent: str) -> list[str]:
    lines: list[str] = []
    for first, rest, ret in sigs:
        params = ", ".join([f"{first_name}: {first}", *rest])
        signature = f"({params}) -> {ret}"
        if len(sigs) > 1:
            lines.append(f"{indent}@overload")
        suffix = _OVERRIDE if name in ("__eq__", "__ne__") else ""
        lines.append(f"{indent}def {name}{_type_params(signature)}{signature}: ...{suffix}")
    return lines


def method_lines(op: OpSpec, name: str) -> list[str]:
    """The method ``name`` of ``op`` (its operator, or its named form)."""
    if op.kind in HAND_KINDS:
        return _hand(op, name, "self", "    ")
    sigs = list(RULES[op.kind](op, "other", "method"))
    lines = _overloads(name, sigs, "self", "    ")
    if op.reflected and name == op.method and op.tape == "untraced":  # True & mask: untraced
        lines.append(
            f"    def {op.reflected}[S: IntTuple](self: Tensor[Any, S], other: float) -> Tensor[NoTape, S]: ..."
        )
    elif op.reflected and name == op.method:
        lines.append(f"    def {op.reflected}[T, S: IntTuple](self: Tensor[T, S], other: float) -> Tensor[T, S]: ...")
    return lines


def function_lines(op: OpSpec) -> list[str]:
    """The function form ``sg.<name>`` of ``op``."""
    if op.kind in HAND_KINDS or op.kind == "sizes":
        return _hand(op, op.name, op.params[0], "")
    first_name, *others = op.params
    sigs = list(RULES[op.kind](op, others[0] if others else "other", "function"))
    return _overloads(op.name, sigs, first_name, "")


# Element-wise ``==`` is the op table's meaning (as NumPy and PyTorch), not object's bool.
_OVERRIDE = "  # pyrefly: ignore[bad-override] -- element-wise, as NumPy's"
_GRADUAL = "*args: Any, **kwargs: Any"


def _hand(op: OpSpec, name: str, first: str, indent: str) -> list[str]:
    """A hand-typed op (typed by its own signature for pyright): unary ops keep the shape
    and tape, index-valued and boolean ones are untraced, losses join the tapes into a
    scalar; the rest (``topk``, ``einsum``, creation) answer ``Any`` unless written below."""
    if op.kind == "unary":
        return [f"{indent}def {name}[T, S: IntTuple]({first}: Tensor[T, S], {_GRADUAL}) -> Tensor[T, S]: ..."]
    if op.kind == "untraced" and not op.hand_method:
        return [f"{indent}def {name}({first}: Tensor[Any, Any], {_GRADUAL}) -> Tensor[NoTape, Any]: ..."]
    if op.kind == "loss":
        return [
            "@overload",
            f"def {name}[T](input: Tensor[T, Any], target: Tensor[T, Any], *args: Any, reduction: L['none'], "
            "**kwargs: Any) -> Tensor[T, Any]: ...",
            "@overload",
            f"def {name}[T](input: Tensor[T, Any], target: Tensor[T, Any], {_GRADUAL}) -> Tensor[T, []]: ...",
        ]
    if op.kind == "sizes" and op.name in _SIZED_CREATION:
        return [
            f"def {name}[S: IntTuple](*dims: *S, dtype: str | None = None, backend: Any = None, "
            "**kwargs: Any) -> Tensor[NoTape, S]: ..."
        ]
    if indent:
        return [f"{indent}def {name}(self, {_GRADUAL}) -> Any: ..."]
    return [f"def {name}({_GRADUAL}) -> Any: ..."]


_SIZED_CREATION = ("zeros", "ones", "rand", "randn")


# --------------------------------------------------------------------------- the files
_GENERATED = "Generated by ``python shapegrad/_pyrefly_stubs.py`` from ``shapegrad/_opspec.py``: do not edit."

_INIT_HEAD = f'''"""shapegrad for Pyrefly with exact sizes: ``Tensor[Tape, [dims]]``, dims computed.

{_GENERATED}
Read by Pyrefly only, when this directory's parent is on its search path (see README,
"Exact sizes on Pyrefly"); the run-time package is ``shapegrad`` itself.
"""

# fmt: off
from collections.abc import Iterator, Sequence
from typing import Any, Generic, Literal as L, Never, TypeAlias, TypeVar, overload

import shape_extensions.dsl as dsl
from shape_extensions import Index, IntTuple, IntTupleOrList, IntVar, broadcast, index_shape, type_shape_dsl_function
from typing_extensions import deprecated

from shapegrad import losses as losses, nn as nn, optim as optim

# As for pyright, the untraced tape is the bottom type: an untraced operand joins a traced one
# under one tape variable, and a traced tensor is refused where NoTape is declared.
NoTape: TypeAlias = Never
_M = TypeVar("_M")
Tape = TypeVar("Tape", covariant=True)
Shape = TypeVar("Shape", bound=IntTuple, covariant=True)


class OwnedTape(Generic[_M]):
    """Type-level marker: the tensor is traced; its gradients are for model ``M``. Invariant:
    two models' tapes join into a union, which ``backward()`` refuses."""


class Gradients(Generic[_M]):
    """The gradients one tape delivers, for the model ``M`` they were recorded for."""

    @overload
    def __init__(self: Gradients[None]) -> None: ...
    @overload
    def __init__(self, *, model: _M, parameters: Sequence[tuple[str, Tensor[Any, Any]]]) -> None: ...
    def __getitem__[T, S: IntTuple](self, tensor: Tensor[T, S]) -> Tensor[NoTape, S]: ...
    def __contains__(self, tensor: Tensor[Any, Any]) -> bool: ...
    def zero(self) -> None: ...
    def items(self) -> Iterator[tuple[str, Tensor[NoTape, Any]]]: ...
    def parameter_paths(self) -> list[str]: ...
    def received(self) -> list[str]: ...
    @property
    def model(self) -> _M: ...


class Dim(int):
    """A named size (the pyright surface's dims); under Pyrefly, sizes are ``IntVar``s."""


Open: TypeAlias = int


# ---- shape rules Pyrefly evaluates (type-level DSL functions)
@type_shape_dsl_function
def reshaped(shape: IntTuple, target: IntTuple) -> IntTuple:
    """``reshape``'s result: the target sizes, one ``-1`` computed from the rest."""
    holes = dsl.IntTuple(d for d in target if dsl.is_concrete_int(d) and d == -1)
    known_dims = dsl.IntTuple(d for d in target if not (dsl.is_concrete_int(d) and d == -1))
    known = dsl.prod(known_dims)
    if len(holes) > 1:
        return dsl.Invalid("reshape: at most one size may be -1")
    if len(holes) == 0:
        if known != dsl.prod(shape):
            return dsl.Invalid("reshape: the sizes' product is not the tensor's size")
        return target
    total = dsl.prod(shape)
    # Divisibility is decided for literal sizes only: with a symbolic batch it is unknown,
    # and the quotient (B * 150528) // (B * 768) still simplifies.
    if dsl.is_concrete_int(total) and dsl.is_concrete_int(known) and total % known != 0:
        return dsl.Invalid("reshape: the sizes' product is not the tensor's size")
    return dsl.IntTuple(total // known if dsl.is_concrete_int(d) and d == -1 else d for d in target)


@type_shape_dsl_function
def flattened(shape: IntTuple) -> IntTuple:
    """``flatten``'s result: the first axis, then the product of the others."""
    if len(shape) < 2:
        return shape
    return dsl.IntTuple((shape[0], dsl.prod(shape[1:])))


{{joined}}


class Tensor(Generic[Tape, Shape]):
    """A tensor whose type carries its tape and its shape: ``Tensor[NoTape, [B, 784]]``."""

    @property
    def shape(self) -> Shape: ...
    @property
    def ndim(self) -> int: ...
    @property
    def dtype(self) -> str: ...
    @property
    def traced(self) -> bool: ...
    def item(self) -> float: ...
    def tolist(self) -> Any: ...
    def numpy(self) -> Any: ...
    def __len__(self) -> int: ...
    def __neg__[T, S: IntTuple](self: Tensor[T, S]) -> Tensor[T, S]: ...
    def __invert__[S: IntTuple](self: Tensor[Any, S]) -> Tensor[NoTape, S]: ...
    def detach[S: IntTuple](self: Tensor[Any, S]) -> Tensor[NoTape, S]: ...
    def trace[S: IntTuple, M](
        self: Tensor[NoTape, S], grads: Gradients[M], *also: Gradients[Any], keep_grad: bool | None = None
    ) -> Tensor[OwnedTape[M], S]: ...
    @overload
    @deprecated("backward() of an untraced tensor: trace an input with x.trace(grads) first")
    def backward(self: Tensor[NoTape, Any], seed: Any = None, *, retain: bool = False) -> Never: ...
    @overload
    def backward[M](self: Tensor[OwnedTape[M], []], *, retain: bool = False) -> Gradients[M]: ...
    @overload
    def backward[M](self: Tensor[OwnedTape[M], Any], seed: Any, *, retain: bool = False) -> Gradients[M]: ...
    # The rest of the run-time API (``to``, ``astype``'s keywords, ...): unchecked, never a false error.
    def __getattr__(self, name: str) -> Any: ...

    # ---- the op table's method forms
'''

_INIT_TAIL = '''

# ---- not in the op table
def cast[T, S: IntTuple](x: Tensor[Any, Any], to: type[Tensor[T, S]]) -> Tensor[T, S]:
    """``x`` typed as ``to`` (checked at run time): needed only where no rule computes a size."""
    ...
def checked[F](fn: F) -> F: ...
@overload
@deprecated("backward() of an untraced tensor: trace an input with x.trace(grads) first")
def backward(*outputs: Tensor[NoTape, Any], seeds: Any = None, retain: bool = False) -> Never: ...
@overload
def backward[M](*outputs: Tensor[OwnedTape[M], Any], seeds: Any = None, retain: bool = False) -> Gradients[M]: ...
# Everything else shapegrad exports (backends, errors, save/load, ...): unchecked here.
def __getattr__(name: str) -> Any: ...
'''

_NN = f'''"""shapegrad.nn for Pyrefly: layers whose output sizes are computed.

{_GENERATED}
A convolution's output size is ``(H + 2·padding - dilation·(kernel - 1) - 1) // stride + 1``
from the sizes given to its constructor; a pooling's likewise. ``Sequential`` checks that the
chain's feature sizes (a Linear's in and out features, a convolution's channels) agree, also
across activations, and types its result by the last layer's; the spatial sizes inside it are
not computed (Pyrefly does not apply a generic layer through a chain): write the chain as
calls in a ``Module``.
"""

# fmt: off
from collections.abc import Iterator
from typing import Any, Generic, Protocol, Self, TypeVar, overload

from shape_extensions import Int, IntTuple, IntVar

from shapegrad import Gradients, NoTape, Tensor, flattened

_X = TypeVar("_X")
_Y = TypeVar("_Y")


class Module:
    """A model: its parameters, and ``alloc_grads`` (``Gradients[Self]``)."""

    def __init_subclass__(cls, *, checked: bool = True, **kwargs: Any) -> None: ...
    def alloc_grads(self) -> Gradients[Self]: ...
    def parameters(self, *, trainable_only: bool = False) -> list[Tensor[Any, Any]]: ...
    def named_parameters(self, *, trainable_only: bool = False) -> Iterator[tuple[str, Tensor[Any, Any]]]: ...
    def num_parameters(self, *, trainable_only: bool = False) -> int: ...
    def train(self, mode: bool = True) -> Self: ...
    def eval(self) -> Self: ...
    def to(self, backend: Any = None, *, dtype: str | None = None) -> Self: ...
    def freeze(self, *paths: str) -> Self: ...
    def unfreeze(self, *paths: str) -> Self: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: Any, strict: bool = True) -> Any: ...


class Feat[N: IntVar]:
    """A feature size, the last axis (Linear's): what ``Sequential`` chains."""
    size: Int[N]  # a mutable attribute: Feat is invariant in N, so 128 is not 100


class Chan[N: IntVar]:
    """A channel count, axis 1 of ``(B, C, H, W)`` (a convolution's)."""
    size: Int[N]


class Layer(Module, Generic[_X, _Y]):
    """A module mapping sizes ``_X`` to ``_Y`` (``Feat``/``Chan``); ``Sequential`` chains them."""
    def _sizes(self, x: _X, /) -> _Y: ...  # what Sequential matches (no such method at run time)


class Chains[X, Y](Protocol):
    """What ``Sequential`` takes at each position: a layer from sizes ``X`` to ``Y``. A layer
    that keeps its input's shape has a generic ``_sizes``, so it passes any size through and
    the layers on either side are still compared (``Linear, ReLU, Linear``)."""
    def _sizes(self, x: X, /) -> Y: ...


class Linear[I: IntVar, O: IntVar](Layer[Feat[I], Feat[O]]):
    weight: Tensor[NoTape, [I, O]]
    bias: Tensor[NoTape, [O]] | None
    def __init__(
        self, in_features: Int[I], out_features: Int[O], *, bias: bool = True, generator: Any = None,
        dtype: str = "float32",
    ) -> None: ...
    def __call__[T, S: IntTuple](self, x: Tensor[T, [*S, I]]) -> Tensor[T, [*S, O]]: ...


class Conv2d[I: IntVar, O: IntVar, K: IntVar, St: IntVar = 1, P: IntVar = 0, D: IntVar = 1](
    Layer[Chan[I], Chan[O]]
):
    @overload
    def __init__(
        self, kernel_size: Int[K], stride: Int[St] = 1, padding: Int[P] = 0, dilation: Int[D] = 1,
        groups: int = 1, *, in_channels: Int[I], out_channels: Int[O], bias: bool = True, generator: Any = None,
        dtype: str = "float32",
    ) -> None: ...
    # (height, width) pairs: the channels stay typed, the spatial sizes are not computed.
    @overload
    def __init__(
        self: Conv2d[I, O, Any, Any, Any, Any], kernel_size: int | tuple[int, int],
        stride: int | tuple[int, int] = 1, padding: int | tuple[int, int] = 0, dilation: int | tuple[int, int] = 1,
        groups: int = 1, *, in_channels: Int[I], out_channels: Int[O], bias: bool = True, generator: Any = None,
        dtype: str = "float32",
    ) -> None: ...
    def __call__[T, B: IntVar, H: IntVar, W: IntVar](
        self, x: Tensor[T, [B, I, H, W]]
    ) -> Tensor[T, [B, O, (H + 2 * P - D * (K - 1) - 1) // St + 1, (W + 2 * P - D * (K - 1) - 1) // St + 1]]: ...


class ConvTranspose2d[I: IntVar, O: IntVar, K: IntVar, St: IntVar = 1, P: IntVar = 0, OP: IntVar = 0, D: IntVar = 1](
    Layer[Chan[I], Chan[O]]
):
    def __init__(
        self, kernel_size: Int[K], stride: Int[St] = 1, padding: Int[P] = 0, output_padding: Int[OP] = 0,
        dilation: Int[D] = 1, *, in_channels: Int[I], out_channels: Int[O], bias: bool = True, generator: Any = None,
        dtype: str = "float32",
    ) -> None: ...
    def __call__[T, B: IntVar, H: IntVar, W: IntVar](
        self, x: Tensor[T, [B, I, H, W]]
    ) -> Tensor[
        T, [B, O, (H - 1) * St - 2 * P + D * (K - 1) + OP + 1, (W - 1) * St - 2 * P + D * (K - 1) + OP + 1]
    ]: ...


class SameConv2d[I: IntVar, O: IntVar](Layer[Chan[I], Chan[O]]):
    def __init__(
        self, kernel_size: int, dilation: int = 1, groups: int = 1, *, in_channels: Int[I], out_channels: Int[O],
        bias: bool = True, generator: Any = None, dtype: str = "float32",
    ) -> None: ...
    def __call__[T, B: IntVar, H: IntVar, W: IntVar](self, x: Tensor[T, [B, I, H, W]]) -> Tensor[T, [B, O, H, W]]: ...


class _Pool2d[K: IntVar, St: IntVar, P: IntVar](Layer[Chan[Any], Chan[Any]]):
    @overload
    def __init__(self: _Pool2d[K, K, P], kernel_size: Int[K], stride: None = None, padding: Int[P] = 0) -> None: ...
    @overload
    def __init__(self, kernel_size: Int[K], stride: Int[St], padding: Int[P] = 0) -> None: ...
    def __call__[T, B: IntVar, C: IntVar, H: IntVar, W: IntVar](
        self, x: Tensor[T, [B, C, H, W]]
    ) -> Tensor[T, [B, C, (H + 2 * P - K) // St + 1, (W + 2 * P - K) // St + 1]]: ...


class MaxPool2d[K: IntVar, St: IntVar = K, P: IntVar = 0](_Pool2d[K, St, P]):
    """Maximum over each window; stride defaults to the kernel size."""
    @overload
    def __init__(self: MaxPool2d[K, K, P], kernel_size: Int[K], stride: None = None, padding: Int[P] = 0) -> None: ...
    @overload
    def __init__(self, kernel_size: Int[K], stride: Int[St], padding: Int[P] = 0) -> None: ...


class AvgPool2d[K: IntVar, St: IntVar = K, P: IntVar = 0](_Pool2d[K, St, P]):
    """Mean over each window; stride defaults to the kernel size."""
    @overload
    def __init__(self: AvgPool2d[K, K, P], kernel_size: Int[K], stride: None = None, padding: Int[P] = 0) -> None: ...
    @overload
    def __init__(self, kernel_size: Int[K], stride: Int[St], padding: Int[P] = 0) -> None: ...


class GlobalAvgPool2d(Layer[Chan[Any], Feat[Any]]):
    def __call__[T, B: IntVar, C: IntVar, H: IntVar, W: IntVar](self, x: Tensor[T, [B, C, H, W]]) -> Tensor[T, [B, C]]: ...


class GlobalMaxPool2d(Layer[Chan[Any], Feat[Any]]):
    def __call__[T, B: IntVar, C: IntVar, H: IntVar, W: IntVar](self, x: Tensor[T, [B, C, H, W]]) -> Tensor[T, [B, C]]: ...


class Embedding[V: IntVar, D: IntVar](Module):
    def __init__(self, num_embeddings: Int[V], embedding_dim: Int[D], *, padding_idx: int | None = None, generator: Any = None, dtype: str = "float32") -> None: ...
    def __call__[T, S: IntTuple](self, ids: Tensor[T, S]) -> Tensor[T, [*S, D]]: ...


class Flatten(Layer[Chan[Any], Feat[Any]]):
    def __call__[T, S: IntTuple](self, x: Tensor[T, S]) -> Tensor[T, flattened(S)]: ...


class BatchNorm2d[C: IntVar](Layer[Chan[C], Chan[C]]):
    def __init__(self, num_features: Int[C], *args: Any, **kwargs: Any) -> None: ...
    def __call__[T, B: IntVar, H: IntVar, W: IntVar](self, x: Tensor[T, [B, C, H, W]]) -> Tensor[T, [B, C, H, W]]: ...


class LayerNorm[N: IntVar](Layer[Feat[N], Feat[N]]):
    def __init__(self, normalized_shape: Int[N], *args: Any, **kwargs: Any) -> None: ...
    def __call__[T, S: IntTuple](self, x: Tensor[T, [*S, N]]) -> Tensor[T, [*S, N]]: ...


class _SameShape(Module):
    """A layer that keeps its input's shape (an activation, dropout): any size in a chain."""
    def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    def __call__[T, S: IntTuple](self, x: Tensor[T, S]) -> Tensor[T, S]: ...
    def _sizes[X](self, x: X, /) -> X: ...


{{activations}}


class Sequential[X, Y](Layer[X, Y]):
    """Layers applied in order; a chain whose feature sizes do not agree is an error."""
{{sequential}}
    @overload
    def __call__[T, B: IntVar, E: IntVar, F: IntVar, H: IntVar, W: IntVar](
        self: Sequential[Chan[E], Chan[F]], x: Tensor[T, [B, E, H, W]]
    ) -> Tensor[T, [B, F, int, int]]: ...
    @overload
    def __call__[T, B: IntVar, E: IntVar, F: IntVar, H: IntVar, W: IntVar](
        self: Sequential[Chan[E], Feat[F]], x: Tensor[T, [B, E, H, W]]
    ) -> Tensor[T, [B, F]]: ...
    @overload
    def __call__[T, S: IntTuple, E: IntVar, F: IntVar](
        self: Sequential[Feat[E], Feat[F]], x: Tensor[T, [*S, E]]
    ) -> Tensor[T, [*S, F]]: ...


# The other layers (attention, recurrent, embedding, ...): unchecked here.
def __getattr__(name: str) -> Any: ...
'''

# Layers that keep their input's shape (the pyright surface's ``Layer[N, N, N]``).
_SAME_SHAPE_LAYERS = (
    "ReLU GELU Tanh Sigmoid Softplus SiLU Mish SELU LogSigmoid ELU Hardtanh LeakyReLU Dropout"
).split()
SEQUENTIAL_MAX = 8  # layers per Sequential typed here; nest Sequentials for longer chains


def _sequential() -> str:
    lines: list[str] = []
    for n in range(1, SEQUENTIAL_MAX + 1):
        xs = [f"X{i}" for i in range(n + 1)]
        params = ", ".join(f"l{i + 1}: Chains[X{i}, X{i + 1}]" for i in range(n))
        lines += [
            "    @overload",
            f"    def __init__[{', '.join(xs)}](self: Sequential[X0, X{n}], {params}, /) -> None: ...",
        ]
    return "\n".join(lines)


def nn_module() -> str:
    """The whole text of ``_pyrefly/shapegrad/nn/__init__.pyi``."""
    activations = "\n\n\n".join(f"class {name}(_SameShape): ..." for name in _SAME_SHAPE_LAYERS)
    return _NN.replace("{activations}", activations).replace("{sequential}", _sequential())


_OPTIM = f'''"""shapegrad.optim for Pyrefly: an optimizer updates its own model with that model's gradients.

{_GENERATED}
"""

# fmt: off
from typing import Any, Generic, TypeVar

from shapegrad import Gradients

_M = TypeVar("_M")


class Optimizer(Generic[_M]):
    def __init__(self, model: _M, lr: float = ..., *args: Any, **kwargs: Any) -> None: ...
    def update(self, model: _M, grads: Gradients[_M]) -> None: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: Any) -> None: ...
    step_count: int
    lr: float


{{optimizers}}
SGD = Sgd


def clip_grad_norm(grads: Gradients[Any], max_norm: float, *args: Any, **kwargs: Any) -> float: ...
def __getattr__(name: str) -> Any: ...
'''
_OPTIMIZERS = "Adadelta Adagrad Adam AdamW RMSprop Sgd".split()


def optim_module() -> str:
    """The whole text of ``_pyrefly/shapegrad/optim/__init__.pyi``."""
    classes = "\n\n\n".join(f"class {name}(Optimizer[_M]): ..." for name in _OPTIMIZERS)
    return _OPTIM.replace("{optimizers}", classes + "\n\n")


_LOSSES_HEAD = f'''"""shapegrad.losses for Pyrefly: a loss joins its operands' tapes into a scalar.

{_GENERATED}
"""

# fmt: off
from typing import Any, Literal as L, overload

from shapegrad import Tensor
'''


def losses_module() -> str:
    """The whole text of ``_pyrefly/shapegrad/losses.pyi``: every loss row of the op table."""
    blocks = ["\n".join(_hand(op, op.name, "input", "")) for op in OPS if op.kind == "loss"]
    return _LOSSES_HEAD + "\n\n" + "\n\n".join(blocks) + "\n\n\ndef __getattr__(name: str) -> Any: ...\n"


def init_module() -> str:
    """The whole text of ``_pyrefly/shapegrad/__init__.pyi``: ``Tensor`` with the table's
    method forms, then the function forms ``sg.<name>``."""
    methods: list[str] = []
    for op in OPS:
        if op.method and not op.hand_method:
            methods += [*method_lines(op, op.method), ""]
        if op.named:
            methods += [*method_lines(op, op.name), ""]
        if op.hand_method and op.method:
            methods += [*_hand_gradual(op.method), ""]
    functions: list[str] = []
    for op in OPS:
        if op.module and op.module != "losses" and op.top_level:
            functions += ["", *function_lines(op)]
    head = _INIT_HEAD.replace("{joined}", joined_rules())
    return head + "\n".join(methods) + "\n" + "\n".join(functions) + "\n" + _INIT_TAIL


def _hand_gradual(name: str) -> list[str]:
    # A method written by hand in _tensor.py (its meaning differs from the function's).
    return [f"    def {name}(self, {_GRADUAL}) -> Any: ..."]


def stub_files() -> dict[Path, str]:
    """Each stub file and its text."""
    root = STUBS / "shapegrad"
    return {
        root / "__init__.pyi": init_module(),
        root / "nn" / "__init__.pyi": nn_module(),
        root / "optim" / "__init__.pyi": optim_module(),
        root / "losses.pyi": losses_module(),
    }


def _stale() -> dict[Path, str]:
    return {p: text for p, text in stub_files().items() if not p.exists() or p.read_text() != text}


def write() -> list[Path]:
    """Rewrite the stale stub files; the files that changed."""
    changed = _stale()
    for path, text in changed.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return list(changed)


def check() -> list[Path]:
    """The stale stub files (empty when every one is up to date)."""
    return list(_stale())


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "--path" in args:
        print(STUBS)
        return 0
    if "--check" in args:
        stale = check()
        for path in stale:
            print(f"stale: {path.relative_to(PACKAGE.parent)} (run python shapegrad/_pyrefly_stubs.py)")
        return 1 if stale else 0
    for path in write():
        print(f"wrote {path.relative_to(PACKAGE.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
