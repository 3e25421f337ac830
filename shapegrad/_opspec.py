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
from typing import Literal

__all__ = [
    "BROADCAST",
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
]


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


# Broadcasting the way models are written: (name, left dims, right dims, result dims). Every
# binary op and comparison gets all of them; each is sound (numpy's rules give that result
# whenever the pattern matches) and together they leave out only what needs a cast or a reshape.
# Most common first: pyright evaluates a nested argument (``sg.add(sg.mul(x, w), b)``) once
# per overload it tries, so the time of a nested expression multiplies by each level's match
# position; the bias and the same-shape patterns match at the first or second try.
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

# Indexing: (index type, input dims, result dims). Anything else (tensors, several bounded
# slices) gives open dims.
GETITEM: tuple[tuple[str, str, str], ...] = (
    ("int", "N, *S", "*S"),
    (_ALL, "N, *S", "N, *S"),
    (_FROM, "N, *S", "Open, *S"),
    (_TO, "N, *S", "Open, *S"),
    (_STEP, "N, *S", "Open, *S"),
    ("None", "*S", "L[1], *S"),
    (f"tuple[{_ALL}, int]", "N, K, *S", "N, *S"),
    (f"tuple[{_ALL}, {_ALL}, int]", "N, K, A, *S", "N, K, *S"),
    ("tuple[int, int]", "N, K, *S", "*S"),
    (f"tuple[{_ALL}, {_FROM}]", "N, K, *S", "N, Open, *S"),
    (f"tuple[{_ALL}, {_TO}]", "N, K, *S", "N, Open, *S"),
    (f"tuple[{_ALL}, None]", "N, *S", "N, L[1], *S"),
    ("tuple[None, EllipsisType]", "*S", "L[1], *S"),
    ("tuple[EllipsisType, int]", "*S, N", "*S"),
    ("tuple[EllipsisType, None]", "*S", "*S, L[1]"),
    (f"tuple[EllipsisType, {_FROM}]", "*S, N", "*S, Open"),
    (f"tuple[EllipsisType, {_TO}]", "*S, N", "*S, Open"),
)

OPS: tuple[OpSpec, ...] = (
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
    OpSpec("equal", "compare", "untraced", "ops.elementwise", "__eq__", None, ("a", "b"), doc="``a == b``"),
    OpSpec(
        "not_equal", "compare", "untraced", "ops.elementwise", "__ne__", None, ("a", "b"), doc="``a != b``", named=True
    ),
    OpSpec("where", "where", "join", "ops.elementwise", None, None, ("cond", "a", "b")),
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
        "ops.structure",
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
    OpSpec("concat", "concat", "join", "ops.shape", None, params=("tensors", "axis")),
    OpSpec("stack", "stack", "join", "ops.shape", None, params=("tensors", "axis")),
)


# Hand-typed ops (their one signature is written with the function, in its module) whose method
# form is generated from that signature: ``x.topk(3)`` is ``sg.topk(x, 3)``, typed alike. The rule
# (tests/test_typegen.py holds it both ways): every public function whose first parameter is a
# tensor has a method, here, in the table, or by hand in ``_tensor.py``, unless ``NO_METHOD``
# says why not.
SIGNATURE_METHODS: tuple[tuple[str, str], ...] = (
    ("_creation", "multinomial"),
    ("ops.elementwise", "abs"),
    ("ops.elementwise", "astype"),
    ("ops.elementwise", "clamp"),
    ("ops.elementwise", "exp"),
    ("ops.elementwise", "gelu"),
    ("ops.elementwise", "leaky_relu"),
    ("ops.elementwise", "log"),
    ("ops.elementwise", "neg"),
    ("ops.elementwise", "relu"),
    ("ops.elementwise", "sigmoid"),
    ("ops.elementwise", "softplus"),
    ("ops.elementwise", "sqrt"),
    ("ops.elementwise", "square"),
    ("ops.elementwise", "tanh"),
    ("ops.indexing", "gather"),
    ("ops.math", "arccos"),
    ("ops.math", "arcsin"),
    ("ops.math", "arctan"),
    ("ops.math", "arctan2"),
    ("ops.math", "ceil"),
    ("ops.math", "cos"),
    ("ops.math", "cosh"),
    ("ops.math", "elu"),
    ("ops.math", "erf"),
    ("ops.math", "erfc"),
    ("ops.math", "expm1"),
    ("ops.math", "floor"),
    ("ops.math", "hardtanh"),
    ("ops.math", "isfinite"),
    ("ops.math", "isinf"),
    ("ops.math", "isnan"),
    ("ops.math", "log10"),
    ("ops.math", "log1p"),
    ("ops.math", "log2"),
    ("ops.math", "log_sigmoid"),
    ("ops.math", "logical_and"),
    ("ops.math", "logical_not"),
    ("ops.math", "logical_or"),
    ("ops.math", "logical_xor"),
    ("ops.math", "mish"),
    ("ops.math", "reciprocal"),
    ("ops.math", "round"),
    ("ops.math", "rsqrt"),
    ("ops.math", "selu"),
    ("ops.math", "sign"),
    ("ops.math", "silu"),
    ("ops.math", "sin"),
    ("ops.math", "sinh"),
    ("ops.math", "tan"),
    ("ops.math", "trunc"),
    ("ops.reductions", "log_softmax"),
    ("ops.reductions", "softmax"),
    ("ops.shape", "repeat"),
    ("ops.shape", "swapaxes"),
    ("ops.structure", "argmax"),
    ("ops.structure", "argmin"),
    ("ops.structure", "argsort"),
    ("ops.structure", "chunk"),
    ("ops.structure", "count_nonzero"),
    ("ops.structure", "cumprod"),
    ("ops.structure", "cumsum"),
    ("ops.structure", "diag"),
    ("ops.structure", "diagonal"),
    ("ops.structure", "flip"),
    ("ops.structure", "masked_fill"),
    ("ops.structure", "narrow"),
    ("ops.structure", "norm"),
    ("ops.structure", "prod"),
    ("ops.structure", "roll"),
    ("ops.structure", "sort"),
    ("ops.structure", "split"),
    ("ops.structure", "tile"),
    ("ops.structure", "topk"),
    ("ops.structure", "tril"),
    ("ops.structure", "triu"),
    ("ops.structure", "unflatten"),
)

# Public functions of a tensor that have no method form, and why.
NO_METHOD: dict[str, str] = {
    "equal": "PyTorch's Tensor.equal is whole-tensor equality (a bool); x == y is the element-wise form",
    "where": "PyTorch's x.where(condition, y) puts the condition second: sg.where(condition, x, y) only",
    "concat": "takes a sequence of tensors",
    "stack": "takes a sequence of tensors",
    "cast": "a statement about a type, not an op",
    "full_like": "creation",
    "ones_like": "creation",
    "zeros_like": "creation",
    "rand_like": "creation",
    "randn_like": "creation",
    "layer_norm": "a layer's function form (sg.nn.LayerNorm); PyTorch has no Tensor method either",
    "pad": "PyTorch's is F.pad, not a Tensor method",
    "one_hot": "PyTorch's is F.one_hot, not a Tensor method",
}
