"""The one table of shapegrad's typed op surface: what each op's overloads say.

``_typegen`` turns this table into the ``@overload`` stacks of the method forms (the class
``TensorOps`` in ``_tensor_ops.py``, which ``Tensor`` inherits) and of the function forms
(``sg.add``, ``sg.mean``, ... in ``_function_ops.py``), two wholly generated modules;
``tests/test_typegen.py`` fails when they are stale and checks that every op here exists at
run time in each form it names.

A row names the op, its shape rule (``kind``), its tape rule and where its forms live. The
rules themselves (which broadcast patterns, which literal axes) are the tables below: they are
the whole static meaning of an op, so a new idiom is one line here, not one overload per op.

Dims are written as in an annotation: ``*S`` the untouched dims, ``N``/``K``/``A`` single dims,
``L[1]`` a size-1 axis, ``Open`` a size Python cannot compute (see ``sg.Open``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "BROADCAST",
    "NARROWED_SLICES",
    "COLUMN_OF_ITS_OWN_LENGTH",
    "OPEN_DIM",
    "OUTER",
    "HAND_KINDS",
    "NOT_OPS",
    "NO_METHOD",
    "SIGNATURE_METHODS",
    "GETITEM",
    "OPS",
    "REDUCE_AXES",
    "SQUEEZE_AXES",
    "OpSpec",
    "TapeRule",
]

TapeRule = Literal["join", "keep", "untraced"]
Kind = Literal[
    "binary",
    "compare",
    "reduce",
    "matmul",
    "squeeze",
    "expand_dims",
    "permute",
    "transpose",
    "reshape",
    "flatten",
    "getitem",
    "concat",
    "stack",
    "where",
    "sizes",  # a new tensor from sizes, one typed dim per size (``zeros(b, 3)``: ``Open, L[3]``)
    # Typed by the op's own signature, written with the function in its module (the kind says
    # what that signature must state; tests/test_typegen.py holds it):
    "unary",  # one tensor in, the same shape and tape out (``sin``, ``relu``, ``softmax``)
    "untraced",  # a NoTape result: index-valued, boolean, sampled (``argmax``, ``isnan``)
    "shaped",  # a shape rule of its own (``topk``, ``split``, ``einsum``, ``layer_norm``)
    "creation",  # a new tensor from sizes, data or another tensor's shape (``zeros``, ``tensor``)
    "loss",  # a loss function of ``sg.losses`` (``cross_entropy``)
]
HAND_KINDS: tuple[Kind, ...] = ("unary", "untraced", "shaped", "creation", "loss")


@dataclass(frozen=True)
class OpSpec:
    """One op of the typed surface.

    Attributes:
        name: the function form, ``sg.<name>`` (also the generated block's name in ``module``).
        kind: the shape rule (a key of ``_typegen.RENDERERS``).
        tape: ``join`` (traced when any operand is; two different tapes are an error),
            ``keep`` (the operand's tape), ``untraced`` (a ``NoTape`` result, e.g. comparisons).
        module: the module of the function form (under ``shapegrad``), or None for a method only.
        method: the ``Tensor`` method form, or None for a function only.
        reflected: the reflected operator (``__radd__``) taking a Python number on the left.
        params: the function form's parameter names (the method's first is ``self``).
        extra: extra trailing parameters, as written in a signature (``correction: float = 0.0``).
        doc: the method form's docstring.
        named: the op also has a method named like its function (``x.add(y)`` beside
            ``x + y``), as PyTorch's tensors do.
        no_method: why the op has no method form (``method`` is None), as PyTorch decides
            its ``variants``.
        hand_method: why the method is written by hand in ``_tensor.py`` instead of generated
            (its signature or meaning differs from the function's).
        top_level: the function form is also ``sg.<name>`` (False: only in its module).
    """

    name: str
    kind: Kind
    tape: TapeRule
    module: str | None
    method: str | None = None
    reflected: str | None = None
    params: tuple[str, ...] = ("x",)
    extra: tuple[str, ...] = field(default=())
    doc: str = ""
    named: bool = False
    no_method: str = ""
    hand_method: str = ""
    top_level: bool = True


# Broadcasting the way models are written: (name, left dims, right dims, result dims). Every
# binary op and comparison gets all of them; each is sound (numpy's rules give that result
# whenever the pattern matches) and together they leave out only what needs a cast or a reshape.
# Most common first: pyright evaluates a nested argument (``sg.add(sg.mul(x, w), b)``) once
# per overload it tries, so the time of a nested expression multiplies by each level's match
# position; the bias and the same-shape patterns match at the first or second try. A function
# form opens with the common patterns as union overloads (``_typegen._common``, measured in
# tests/test_typing_speed.py) and then the rest of this table in this order.
BROADCAST: tuple[tuple[str, str, str, str], ...] = (
    ("vector (bias, scale) on the right", "*S, N", "N", "*S, N"),
    ("same shape", "*S", "*S", "*S"),
    ("keepdims on the last axis, right", "*S, N", "*S, L[1]", "*S, N"),
    ("rank 0 on the right", "*S", "", "*S"),
    ("vector on the left", "N", "*S, N", "*S, N"),
    ("keepdims on the last axis, left", "*S, L[1]", "*S, N", "*S, N"),
    ("rank 0 on the left", "", "*S", "*S"),
    ("keepdims on the first axis, right", "N, *S", "L[1], *S", "N, *S"),
    ("keepdims on the first axis, left", "L[1], *S", "N, *S", "N, *S"),
    ("keepdims on axis 1, right", "A, N, *S", "A, L[1], *S", "A, N, *S"),
    ("keepdims on axis 1, left", "A, L[1], *S", "A, N, *S", "A, N, *S"),
    ("lower-rank suffix on the right (positional table)", "A, *S", "*S", "A, *S"),
    ("lower-rank suffix on the left", "*S", "A, *S", "A, *S"),
    ("suffix two ranks lower on the right (mask over heads)", "A, K, *S", "*S", "A, K, *S"),
    ("suffix two ranks lower on the left", "*S", "A, K, *S", "A, K, *S"),
    ("per-item mask over heads, right", "A, K, N, *S", "A, L[1], L[1], *S", "A, K, N, *S"),
    ("per-item mask over heads, left", "A, L[1], L[1], *S", "A, K, N, *S", "A, K, N, *S"),
    (
        "keepdims on the last two axes, right (instance norm, a squeeze-excite scale)",
        "*S, A, N",
        "*S, L[1], L[1]",
        "*S, A, N",
    ),
    ("keepdims on the last two axes, left", "*S, L[1], L[1]", "*S, A, N", "*S, A, N"),
    # a per-sample (B, 1, 1, 1) over (B, C, H, W): a noise schedule's a[:, None, None, None]
    ("per-item scale over images, right", "A, K, N, C, *S", "A, L[1], L[1], L[1], *S", "A, K, N, C, *S"),
    ("per-item scale over images, left", "A, L[1], L[1], L[1], *S", "A, K, N, C, *S", "A, K, N, C, *S"),
)

# Outer products, the way sinusoidal embeddings, causal masks and scalings are built:
# (name, left dims, right dims, result dims, deprecation). They follow BROADCAST (nested
# function forms rarely reach them). A column met by a vector of its own length,
# ``values - returns`` with values (N, 1) and returns (N,), is NumPy's silent (N, N): a
# ``@deprecated`` guard before the general pattern keeps it an error in strict mode.
COLUMN_OF_ITS_OWN_LENGTH = (
    "(..., N, 1) op (N,) broadcasts to (..., N, N): squeeze(-1) the column for an elementwise"
    " result, or write v[None] (a row, (1, N)) for an outer product"
)
OUTER: tuple[tuple[str, str, str, str, str], ...] = (
    ("column with row", "*S, A, L[1]", "*S, L[1], N", "*S, A, N", ""),
    ("row with column", "*S, L[1], N", "*S, A, L[1]", "*S, A, N", ""),
    ("column with a vector of its length", "*S, A, L[1]", "A", "*S, A, A", COLUMN_OF_ITS_OWN_LENGTH),
    ("column with a vector", "*S, L[1]", "N", "*S, N", ""),
    ("a vector of its length with column", "A", "*S, A, L[1]", "*S, A, A", COLUMN_OF_ITS_OWN_LENGTH),
    ("vector with a column", "N", "*S, L[1]", "*S, N", ""),
)

# An open dim meeting a typed one (issue #23 §2, "open dims flow"): a convolution's open
# height and width added to its input (a residual with padding 1), a list-indexed column
# ``v[:, [-1]]`` compared with logits, a batch of data against a named one. At run time the
# open size is the typed one or 1, so the result has the typed dim — except where the typed
# side is 1, which the guards before a pattern give as open (the table's keepdims patterns
# cover a size-1 last, first or last two axes). (name, left dims, right dims, result dims);
# after OUTER.
OPEN_DIM: tuple[tuple[str, str, str, str], ...] = (
    ("open last axis, left", "*S, Open", "*S, N", "*S, N"),
    ("open last axis, right", "*S, N", "*S, Open", "*S, N"),
    ("open first axis, left", "Open, *S", "N, *S", "N, *S"),
    ("open first axis, right", "N, *S", "Open, *S", "N, *S"),
    ("open height and width against keepdims height, left", "*S, Open, Open", "*S, L[1], N", "*S, Open, N"),
    ("open height and width against keepdims width, left", "*S, Open, Open", "*S, A, L[1]", "*S, A, Open"),
    ("open height and width, left", "*S, Open, Open", "*S, A, N", "*S, A, N"),
    ("open height and width against keepdims height, right", "*S, L[1], N", "*S, Open, Open", "*S, Open, N"),
    ("open height and width against keepdims width, right", "*S, A, L[1]", "*S, Open, Open", "*S, A, Open"),
    ("open height and width, right", "*S, A, N", "*S, Open, Open", "*S, A, N"),
)

# Reductions: (axis type, input dims, result without keepdims, result with keepdims).
REDUCE_AXES: tuple[tuple[str, str, str, str], ...] = (
    ("L[-1]", "*S, N", "*S", "*S, L[1]"),
    ("L[0]", "N, *S", "*S", "L[1], *S"),
    ("L[1]", "N, K, *S", "N, *S", "N, L[1], *S"),
    ("L[2]", "N, K, A, *S", "N, K, *S", "N, K, L[1], *S"),
    ("L[3]", "N, K, A, C, *S", "N, K, A, *S", "N, K, A, L[1], *S"),
    ("L[-2]", "*S, K, N", "*S, N", "*S, L[1], N"),
    ("tuple[L[1], L[2]]", "N, K, A, *S", "N, *S", "N, L[1], L[1], *S"),
    ("tuple[L[2], L[3]]", "N, K, A, C, *S", "N, K, *S", "N, K, L[1], L[1], *S"),
    ("tuple[L[-2], L[-1]]", "*S, K, N", "*S", "*S, L[1], L[1]"),
    ("tuple[L[0], L[1]]", "N, K, *S", "*S", "L[1], L[1], *S"),
)

# squeeze and expand_dims at a literal axis: (axis, dims with the size-1 axis, dims without).
SQUEEZE_AXES: tuple[tuple[str, str, str], ...] = (
    ("L[0]", "L[1], *S", "*S"),
    ("L[1]", "N, L[1], *S", "N, *S"),
    ("L[2]", "N, K, L[1], *S", "N, K, *S"),
    ("L[-1]", "*S, L[1]", "*S"),
    ("L[-2]", "*S, L[1], N", "*S, N"),
)

_ALL = "slice[None, None, None]"  # a bare `:`
_FROM = "slice[int, Any, Any]"  # `a:` or `a:b`
_TO = "slice[None, int, Any]"  # `:b`
_STEP = "slice[None, None, int]"  # `::k`

_TO_SIZE = "slice[None, Z0, Any]"  # `:k` with k a literal size or a Dim: keeps k (a negative k is not one)
_TO_SIZE_2 = "slice[None, Z1, Any]"
_LAST = "slice[L[-1], None, None]"  # `-1:`
# Each literal slice beside the general one a later GETITEM row has for it.
NARROWED_SLICES = {_TO_SIZE: _TO, _LAST: _FROM}

# Indexing: (index type, input dims, result dims). Anything else (tensors, several bounded
# slices) gives open dims. A literal stop keeps its size (``x[:, :64]``, ``mask[:t, :t]``):
# larger than the axis, it would be the axis's size at run time, as in PyTorch; the type
# says what the program meant.
GETITEM: tuple[tuple[str, str, str], ...] = (
    ("int", "N, *S", "*S"),
    (_ALL, "N, *S", "N, *S"),
    (_TO_SIZE, "N, *S", "Z0, *S"),
    ("list[int]", "N, *S", "Open, *S"),
    # a vector into axis 0 (``h[src]``, ``h[mask]``): an open count, then the trailing dims. The
    # type holds no dtype, so an index vector and a boolean mask look alike: ``h[src]`` has
    # ``len(src)`` rows, ``h[mask]`` as many as the mask has True values (the length would be
    # a wrong size, a false error downstream). ``h.gather(src)`` keeps ``len(src)``.
    ("Tensor[Any, K]", "N, *S", "Open, *S"),
    (_LAST, "N, *S", "L[1], *S"),
    (_FROM, "N, *S", "Open, *S"),
    (_TO, "N, *S", "Open, *S"),
    (_STEP, "N, *S", "Open, *S"),
    ("None", "*S", "L[1], *S"),
    (f"tuple[{_ALL}, int]", "N, K, *S", "N, *S"),
    (f"tuple[{_ALL}, {_ALL}, int]", "N, K, A, *S", "N, K, *S"),
    ("tuple[int, int]", "N, K, *S", "*S"),
    (f"tuple[{_ALL}, {_LAST}]", "N, K, *S", "N, L[1], *S"),
    (f"tuple[{_ALL}, {_FROM}]", "N, K, *S", "N, Open, *S"),
    (f"tuple[{_ALL}, {_TO_SIZE}]", "N, K, *S", "N, Z0, *S"),
    (f"tuple[{_ALL}, {_TO}]", "N, K, *S", "N, Open, *S"),
    (f"tuple[{_ALL}, None]", "N, *S", "N, L[1], *S"),
    ("tuple[None, EllipsisType]", "*S", "L[1], *S"),
    ("tuple[EllipsisType, int]", "*S, N", "*S"),
    ("tuple[EllipsisType, None]", "*S", "*S, L[1]"),
    (f"tuple[EllipsisType, {_TO_SIZE}]", "*S, N", "*S, Z0"),
    (f"tuple[EllipsisType, {_FROM}]", "*S, N", "*S, Open"),
    (f"tuple[EllipsisType, {_TO}]", "*S, N", "*S, Open"),
    # the middle axis of three and more (x[:, -1, :], emb[:, i, :], x[None, :], v[:, [-1]])
    (f"tuple[{_ALL}, int, {_ALL}]", "N, K, A, *S", "N, A, *S"),
    (f"tuple[int, {_ALL}]", "N, K, *S", "K, *S"),
    (f"tuple[None, {_ALL}]", "N, *S", "L[1], N, *S"),
    (f"tuple[None, {_ALL}, {_ALL}]", "N, K, *S", "L[1], N, K, *S"),
    (f"tuple[{_ALL}, None, {_ALL}]", "N, K, *S", "N, L[1], K, *S"),
    (f"tuple[{_ALL}, {_ALL}, None]", "N, K, *S", "N, K, L[1], *S"),
    # size-1 axes for images: a per-channel (B, C) term over (B, C, H, W) (DDPM's time
    # embedding, emb[:, :, None, None]; emb[..., None, None]), a per-sample (B,) scale over
    # (B, C, H, W) (a noise schedule's a[:, None, None, None]) or over (B, S, D) (a[:, None, None])
    (f"tuple[{_ALL}, {_ALL}, None, None]", "N, K, *S", "N, K, L[1], L[1], *S"),
    ("tuple[EllipsisType, None, None]", "*S", "*S, L[1], L[1]"),
    (f"tuple[{_ALL}, None, None]", "N, *S", "N, L[1], L[1], *S"),
    (f"tuple[{_ALL}, None, None, None]", "N, *S", "N, L[1], L[1], L[1], *S"),
    # channels last (B, 1, 1, C), so that one meeting (B, C, H, W) is an error, not an open rank
    (f"tuple[{_ALL}, None, None, {_ALL}]", "N, K, *S", "N, L[1], L[1], K, *S"),
    (f"tuple[{_ALL}, list[int]]", "N, K, *S", "N, Open, *S"),
    (f"tuple[{_ALL}, list[int], {_ALL}]", "N, K, A, *S", "N, Open, A, *S"),
    (f"tuple[{_ALL}, {_FROM}, {_ALL}]", "N, K, A, *S", "N, Open, A, *S"),
    (f"tuple[{_ALL}, {_TO_SIZE}, {_ALL}]", "N, K, A, *S", "N, Z0, A, *S"),
    # prefixes (logits[:, :5], idx[:, -1:], mask[:t, :t], bias[:, :, :t, :t])
    (f"tuple[{_TO_SIZE}, {_TO_SIZE_2}]", "N, K, *S", "Z0, Z1, *S"),
    (f"tuple[{_ALL}, {_ALL}, {_TO_SIZE}, {_TO_SIZE_2}]", "N, K, A, C, *S", "N, K, Z0, Z1, *S"),
)

_TABLE_OPS: tuple[OpSpec, ...] = (
    OpSpec("add", "binary", "join", "ops.elementwise", "__add__", "__radd__", ("a", "b"), doc="``a + b``", named=True),
    OpSpec("sub", "binary", "join", "ops.elementwise", "__sub__", "__rsub__", ("a", "b"), doc="``a - b``", named=True),
    OpSpec("mul", "binary", "join", "ops.elementwise", "__mul__", "__rmul__", ("a", "b"), doc="``a * b``", named=True),
    OpSpec(
        "div",
        "binary",
        "join",
        "ops.elementwise",
        "__truediv__",
        "__rtruediv__",
        ("a", "b"),
        doc="``a / b``",
        named=True,
    ),
    OpSpec(
        "pow",
        "binary",
        "join",
        "ops.elementwise",
        "__pow__",
        "__rpow__",
        ("x", "exponent"),
        doc="``x ** y``",
        named=True,
    ),
    OpSpec(
        "floor_divide",
        "binary",
        "join",
        "ops.elementwise",
        "__floordiv__",
        "__rfloordiv__",
        ("a", "b"),
        doc="``a // b``",
        named=True,
    ),
    OpSpec(
        "remainder",
        "binary",
        "join",
        "ops.elementwise",
        "__mod__",
        "__rmod__",
        ("a", "b"),
        doc="``a % b``",
        named=True,
    ),
    OpSpec("maximum", "binary", "join", "ops.elementwise", "maximum", None, ("a", "b"), doc="The larger value"),
    OpSpec("minimum", "binary", "join", "ops.elementwise", "minimum", None, ("a", "b"), doc="The smaller value"),
    OpSpec("less", "compare", "untraced", "ops.elementwise", "__lt__", None, ("a", "b"), doc="``a < b``", named=True),
    OpSpec(
        "less_equal", "compare", "untraced", "ops.elementwise", "__le__", None, ("a", "b"), doc="``a <= b``", named=True
    ),
    OpSpec(
        "greater", "compare", "untraced", "ops.elementwise", "__gt__", None, ("a", "b"), doc="``a > b``", named=True
    ),
    OpSpec(
        "greater_equal",
        "compare",
        "untraced",
        "ops.elementwise",
        "__ge__",
        None,
        ("a", "b"),
        doc="``a >= b``",
        named=True,
    ),
    OpSpec(
        "equal",
        "compare",
        "untraced",
        "ops.elementwise",
        "__eq__",
        None,
        ("a", "b"),
        doc="``a == b``",
        no_method="PyTorch's Tensor.equal is whole-tensor equality (a bool); x == y is the element-wise form",
    ),
    OpSpec(
        "not_equal", "compare", "untraced", "ops.elementwise", "__ne__", None, ("a", "b"), doc="``a != b``", named=True
    ),
    # & | ^ as PyTorch's: logical on boolean masks, bitwise on integers, floats refused; typed
    # and untraced as the comparisons that make the masks (``~x`` is ``bitwise_not``'s row).
    OpSpec(
        "bitwise_and",
        "compare",
        "untraced",
        "ops.elementwise",
        "__and__",
        "__rand__",
        ("a", "b"),
        doc="``a & b``",
        named=True,
    ),
    OpSpec(
        "bitwise_or",
        "compare",
        "untraced",
        "ops.elementwise",
        "__or__",
        "__ror__",
        ("a", "b"),
        doc="``a | b``",
        named=True,
    ),
    OpSpec(
        "bitwise_xor",
        "compare",
        "untraced",
        "ops.elementwise",
        "__xor__",
        "__rxor__",
        ("a", "b"),
        doc="``a ^ b``",
        named=True,
    ),
    OpSpec(
        "where",
        "where",
        "join",
        "ops.elementwise",
        None,
        None,
        ("cond", "a", "b"),
        no_method="PyTorch's x.where(condition, y) puts the condition second: sg.where(condition, x, y) only",
    ),
    OpSpec("matmul", "matmul", "join", "ops.linalg", "__matmul__", None, ("a", "b"), doc="Matrix product", named=True),
    OpSpec("sum", "reduce", "keep", "ops.reductions", "sum", doc="Sum over ``axis`` (all axes when None)"),
    OpSpec("mean", "reduce", "keep", "ops.reductions", "mean", doc="Mean over ``axis`` (all axes when None)"),
    OpSpec("max", "reduce", "keep", "ops.reductions", "max", doc="Maximum over ``axis``; ties share the gradient"),
    OpSpec("min", "reduce", "keep", "ops.reductions", "min", doc="Minimum over ``axis``; ties share the gradient"),
    OpSpec("logsumexp", "reduce", "keep", "ops.reductions", "logsumexp", doc="``log(sum(exp(x)))``, stably"),
    OpSpec(
        "var",
        "reduce",
        "keep",
        "ops.reductions",
        "var",
        extra=("correction: float = 0.0",),
        doc="Variance over ``axis``",
    ),
    OpSpec(
        "std",
        "reduce",
        "keep",
        "ops.reductions",
        "std",
        extra=("correction: float = 0.0",),
        doc="Standard deviation over ``axis``",
    ),
    OpSpec("squeeze", "squeeze", "keep", "ops.shape", "squeeze", params=("x", "axis"), doc="A size-1 axis removed"),
    OpSpec(
        "expand_dims", "expand_dims", "keep", "ops.shape", "expand_dims", params=("x", "axis"), doc="A new size-1 axis"
    ),
    OpSpec("permute", "permute", "keep", "ops.shape", "permute", params=("x", "axes"), doc="Axes reordered"),
    OpSpec("transpose", "transpose", "keep", None, "transpose", doc="Axes reversed, or reordered"),
    OpSpec(
        "reshape", "reshape", "keep", "ops.shape", "reshape", params=("x", "shape"), doc="The values in a new shape"
    ),
    OpSpec("flatten", "flatten", "keep", "ops.shape", "flatten", doc="Every axis after the first merged into one"),
    OpSpec("getitem", "getitem", "keep", None, "__getitem__", doc="Indexing and slicing"),
    OpSpec(
        "concat",
        "concat",
        "join",
        "ops.shape",
        None,
        params=("tensors", "axis"),
        no_method="takes a sequence of tensors",
    ),
    OpSpec(
        "stack", "stack", "join", "ops.shape", None, params=("tensors", "axis"), no_method="takes a sequence of tensors"
    ),
)


# Hand-typed ops: each a row of its own, typed by its function's signature. Their method forms
# are generated from that signature (``x.topk(3)`` is ``sg.topk(x, 3)``, typed alike); the rule
# (tests/test_typegen.py holds it both ways): every public function of a tensor has a method
# unless its row says why not.
_TAPE: dict[Kind, TapeRule] = {
    "unary": "keep",
    "untraced": "untraced",
    "shaped": "keep",
    "creation": "untraced",
    "loss": "join",
}
_CREATION = "creation from sizes or data: there is no tensor to call it on"
_FILLED = ("*", "dtype: str | None = None", "backend: str | Backend | None = None")
_DRAWN = ("*", "dtype: str | None = None", "generator: Generator | None = None")
_LIKE = "creation"


def _hand(kind: Kind, module: str, names: str, tape: TapeRule | None = None, **fields: Any) -> tuple[OpSpec, ...]:
    """One row per name: the op typed by its own signature in ``module``, with its method
    (unless ``no_method`` says why not)."""
    method = not fields.get("no_method")
    return tuple(
        OpSpec(name, kind, tape or _TAPE[kind], module, name if method else None, **fields) for name in names.split()
    )


OPS: tuple[OpSpec, ...] = (
    *_TABLE_OPS,
    *_hand("unary", "ops.elementwise", "abs astype clamp clone exp log neg sqrt square"),
    *_hand("untraced", "ops.elementwise", "bitwise_not"),  # ~x: Tensor.__invert__, by hand in _tensor.py
    *_hand("shaped", "ops.math", "arctan2", "join"),
    *_hand(
        "unary",
        "ops.math",
        "arccos arcsin arctan ceil cos cosh erf erfc expm1 floor log10 log1p log2 reciprocal round rsqrt sign sin "
        "sinh tan trunc",
    ),
    *_hand("untraced", "ops.math", "isfinite isinf isnan logical_and logical_not logical_or logical_xor"),
    *_hand(
        "unary",
        "ops.activations",
        "elu gelu hardtanh leaky_relu log_sigmoid mish relu selu sigmoid silu softplus tanh",
    ),
    *_hand(
        "unary",
        "ops.activations",
        "gelu_exact",
        no_method="gelu(approximate='none')'s implementation",
        top_level=False,
    ),
    *_hand("unary", "ops.reductions", "cumprod cumsum log_softmax softmax"),
    *_hand("shaped", "ops.reductions", "norm prod"),
    *_hand("untraced", "ops.reductions", "count_nonzero"),
    *_hand(
        "untraced",
        "ops.reductions",
        "all any",
        hand_method="x.any()/x.all() answer a Python bool (if x.any(): ...); sg.any(x, axis) is the reduction",
    ),
    *_hand("untraced", "ops.order", "argmax argmin argsort"),
    *_hand("shaped", "ops.order", "sort topk"),
    *_hand("shaped", "ops.shape", "chunk flip narrow repeat roll split swapaxes tile unflatten"),
    *_hand("shaped", "ops.shape", "broadcast_to", hand_method="x.broadcast_to(2, 3) takes the sizes as arguments"),
    *_hand("shaped", "ops.shape", "pad", no_method="PyTorch's is F.pad, not a Tensor method"),
    *_hand("unary", "ops.indexing", "tril triu"),
    *_hand("shaped", "ops.indexing", "diag diagonal gather masked_fill"),
    *_hand(
        "shaped",
        "ops.indexing",
        "take_along_axis",
        hand_method="the method is typed for the last axis, where the function takes any",
    ),
    *_hand("untraced", "ops.indexing", "one_hot", no_method="PyTorch's is F.one_hot, not a Tensor method"),
    *_hand("shaped", "ops.linalg", "einsum", "join", no_method="takes a spec string, then the operands"),
    *_hand("shaped", "ops.linalg", "linear", "join", no_method="sg.nn.Linear's op", top_level=False),
    *_hand(
        "shaped",
        "ops.normalization",
        "layer_norm",
        "join",
        no_method="a layer's function form (sg.nn.LayerNorm); PyTorch has no Tensor method either",
    ),
    *_hand("untraced", "ops.creation", "multinomial"),
    *_hand(
        "creation",
        "ops.creation",
        "arange asarray eye from_dlpack from_numpy linspace randint randperm tensor",
        no_method=_CREATION,
    ),
    # Sizes as arguments or one tuple (full: a tuple, then the value): each size's dim by itself,
    # a Dim its class, a literal its literal, a plain int Open or the annotation's.
    *(
        OpSpec(name, "sizes", "untraced", "ops.creation", params=("d0",), no_method=_CREATION, extra=extra)
        for name, extra in (
            ("zeros", _FILLED),
            ("ones", _FILLED),
            ("rand", _DRAWN),
            ("randn", _DRAWN),
            ("full", ("value: float", "dtype: str | None = None", "*", "backend: str | Backend | None = None")),
        )
    ),
    *_hand("creation", "ops.creation", "full_like ones_like rand_like randn_like zeros_like", no_method=_LIKE),
    *_hand(
        "loss",
        "losses",
        "binary_cross_entropy binary_cross_entropy_with_logits cross_entropy huber kl_div mae mse nll_loss smooth_l1",
        no_method="PyTorch's losses are functions (F.cross_entropy), not Tensor methods",
        top_level=False,
    ),
)

# Public names of the op modules that are no op of the user's, and why (the parity test
# accepts these and nothing else without a row).
NOT_OPS: dict[str, str] = {
    "cast": "a statement about a type, not an op",
    "compare": "the comparison operators' shared entry point (<, <=, ==, ...)",
    "to_backend": "moves a tensor between backends: Tensor.to",
    "conv_output_size": "arithmetic on sizes, no tensor",
    "check_extents": "a check of a window op's input sizes, no tensor",
    "check_pool_padding": "a check of a pooling layer's padding, no tensor",
    "pool_output_size": "arithmetic on sizes, no tensor",
    "pool_geometry": "a check of a pooling's input and the sizes of its windows, no tensor",
    "avg_pool_cells": "arithmetic on sizes (an average pooling's divisors), no tensor",
    "fold": "im2col's adjoint, the convolution layers' op",
    "unfold": "im2col, the convolution layers' op",
    "max_pool2d": "the MaxPool2d layer's op",
    "conv2d": "the Conv2d layer's op",
    "recurrence": "the recurrent layers' op",
    "CELL_GATES": "a constant of the recurrent layers (gate blocks per cell)",
    "Generator": "the random source of the creation ops",
    "seed": "seeds the default random source",
}

# Derived views the generator and the tests read.
SIGNATURE_METHODS: tuple[tuple[str, str], ...] = tuple(
    (op.module, op.name)
    for op in OPS
    if op.kind in HAND_KINDS and op.method and not op.hand_method and op.module is not None
)
NO_METHOD: dict[str, str] = {
    **{op.name: op.no_method for op in OPS if op.no_method},
    "cast": NOT_OPS["cast"],
}
