"""``sg.summary``: a model's sub-modules with their output shapes, dims named as the types
name them, and their parameter counts.

The model runs once on the example inputs, in eval mode. Each sub-module's class has its
``__call__`` replaced for that run by one that records the call, and put back afterwards,
even when the forward pass raises. Dim names come from the annotations: an argument's
``Tensor[T, Batch, L[4]]`` names its dims, a TypeVar bound there carries the name to the
result, and a tensor passed on unchanged (``Sequential`` hands each layer's output to the
next) keeps the names it was given.
"""

from __future__ import annotations

import functools
import inspect
import threading
import typing
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, ParamSpec, TypeVar, TypeVarTuple, cast, get_args, get_origin

from ._checking import _resolved_signature
from ._dims import Dim, Open, literal_size
from ._errors import ShapegradError
from ._tensor import AnyTensor, Tensor
from .nn._module import Layer, Module, _is_module

__all__ = ["Summary", "SummaryRow", "summary"]

P = ParamSpec("P")

# A dim's label: (rank, text). A higher rank wins where two sources label the same dim: a
# number seen in the shape says least, then a TypeVar's name (how one layer calls the dim),
# a size a type states (``L[8]``, ``Linear[L[4], L[8]]``), and an ``sg.Dim``'s name most.
_NUMBER, _VARIABLE, _SIZE, _NAMED = 0, 1, 2, 3
_Label = tuple[int, str]
# A dim of an annotation: ("size"|"any"|"anys", None), ("name", "Batch"), ("var"|"vars", key).
_Token = tuple[str, Any]

# Summaries replace class attributes: one at a time, so that each puts back what it found.
# Re-entrant, so a forward pass that itself asks for a summary does not deadlock.
_LOCK = threading.RLock()


@dataclass(frozen=True)
class SummaryRow:
    """One module of a summary.

    Attributes:
        path: its dotted path in the model (``"encoder.0"``); ``""`` for the model itself.
        class_name: its class's name (``"Linear[4, 8]"``).
        output: its first call's output shape, dims named as the types name them
            (``"(Batch, 8)"``); ``"-"`` when the example run did not call it.
        shape: the same shape in numbers (``(32, 8)``), a tuple of shapes for a tuple
            output, ``None`` when not called or not a tensor.
        calls: how many times the example run called it.
        parameters: the scalar parameters of it and its sub-modules.
    """

    path: str
    class_name: str
    output: str
    shape: Any
    calls: int
    parameters: int


@dataclass(frozen=True)
class Summary:
    """What ``sg.summary`` returns: ``str()`` (and ``repr()``, so a REPL shows it) is the
    table; ``rows`` holds a :class:`SummaryRow` per module, the model first."""

    rows: tuple[SummaryRow, ...]
    total_parameters: int
    trainable_parameters: int

    @property
    def frozen_parameters(self) -> int:
        """Parameters excluded from training (``module.freeze(...)``)."""
        return self.total_parameters - self.trainable_parameters

    def __str__(self) -> str:
        header = ("Module", "Class", "Output", "Parameters")
        cells = [
            (row.path or "(model)", row.class_name, row.output + (f" x{row.calls}" if row.calls > 1 else ""))
            for row in self.rows
        ]
        counts = [f"{row.parameters:,}" for row in self.rows]
        widths = [max(len(header[i]), *(len(c[i]) for c in cells)) for i in range(3)]
        count_width = max(len(header[3]), *(len(c) for c in counts))
        total = (
            f"Total parameters: {self.total_parameters:,} "
            f"(trainable {self.trainable_parameters:,}, frozen {self.frozen_parameters:,})"
        )
        line_width = max(sum(widths) + count_width + 6, len(total))

        def line(texts: tuple[str, str, str], count: str) -> str:
            left = "  ".join(text.ljust(width) for text, width in zip(texts, widths, strict=True))
            return f"{left}  {count.rjust(count_width)}".rstrip()

        lines = [line(header[:3], header[3]), "-" * line_width]
        lines += [line(c, n) for c, n in zip(cells, counts, strict=True)]
        lines += ["-" * line_width, total]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)


def summary(model: Callable[P, object], /, *inputs: P.args, **kwargs: P.kwargs) -> Summary:
    """A table of every module of ``model``: dotted path, class, output shape with its dims
    named as the types name them, and parameter count, totalling ``model.num_parameters()``.

    ``model`` runs once on ``inputs`` (and ``kwargs``), which pyright checks against its
    ``__call__``. Untraced inputs suffice: nothing is recorded on a tape. The run is in eval
    mode (dropout off, batch norm reads its running statistics and does not update them);
    every module's mode is put back afterwards, and so is every class's ``__call__``, also
    when the forward pass raises. While it runs, no other thread may call this model: those
    calls would be counted. A module called more than once shows its first call's output and
    the count (``x3``).

    Dims print by the most telling name found: an ``sg.Dim`` (``Batch``) in the module's
    annotation or in the annotation that gave the tensor to it; a TypeVar's name (``B``) bound
    by an argument's annotation; a layer's size as its type argument says it (``Linear[L[4],
    L[8]]``'s ``8``); otherwise the number. A result an op computes inside a forward pass
    (``self.out(h.relu())``) has no annotation of its own, so its dims print as numbers
    until a module's annotation names them. String annotations (``from __future__ import
    annotations``) resolve where the run-time check resolves them, the defining function
    included; with ``SHAPEGRAD_CHECKS=0`` only module-level names resolve, and a dim defined
    inside a function prints as its size.

    Examples:
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> from shapegrad import Tensor
        >>> from shapegrad.nn import Linear, ReLU, Sequential, T
        >>> class Batch(sg.Dim): ...
        >>> class MLP(sg.nn.Module):
        ...     def __init__(self) -> None:
        ...         self.body = Sequential(Linear[L[4], L[8]](), ReLU(), Linear[L[8], L[2]]())
        ...     def __call__(self, x: Tensor[T, Batch, L[4]]) -> Tensor[T, Batch, L[2]]:
        ...         return self.body(x)
        >>> print(sg.summary(MLP(), sg.zeros(32, 4)))
        Module   Class         Output      Parameters
        ---------------------------------------------
        (model)  MLP           (Batch, 2)          58
        body     Sequential    (Batch, 2)          58
        body.0   Linear[4, 8]  (Batch, 8)          40
        body.1   ReLU          (Batch, 8)           0
        body.2   Linear[8, 2]  (Batch, 2)          18
        ---------------------------------------------
        Total parameters: 58 (trainable 58, frozen 0)
    """
    forward = model  # as called; ``model`` below is narrowed to Module
    if not _is_module(model):
        raise ShapegradError(f"sg.summary expects a Module, found {type(model).__name__}")
    root: Module = model
    modules = _unique_modules(root)
    with _LOCK:
        recorder = _Recorder({id(m) for _, m in modules})
        with _eval_mode(m for _, m in modules), recorder.installed(type(m) for _, m in modules):
            try:
                forward(*inputs, **kwargs)
            except BaseException as exc:
                exc.add_note(f"raised while sg.summary ran {type(root).__name__} on the example inputs")
                raise
    rows = tuple(
        SummaryRow(
            path=path,
            class_name=type(module).__name__,
            output=recorder.outputs.get(id(module), ("-", None))[0],
            shape=recorder.outputs.get(id(module), ("-", None))[1],
            calls=recorder.calls.get(id(module), 0),
            parameters=module.num_parameters(),
        )
        for path, module in modules
    )
    return Summary(rows, root.num_parameters(), root.num_parameters(trainable_only=True))


def _unique_modules(model: Module) -> list[tuple[str, Module]]:
    """``named_modules()``, each module once (a shared one at its first path)."""
    seen: set[int] = set()
    unique: list[tuple[str, Module]] = []
    for path, module in model.named_modules():
        if id(module) not in seen:
            seen.add(id(module))
            unique.append((path, module))
    return unique


@contextmanager
def _eval_mode(modules: Iterator[Module]) -> Generator[None, None, None]:
    # ``training`` may be the class default or an instance attribute: put back exactly that.
    absent = object()
    saved = [(m, vars(m).get("training", absent)) for m in modules]
    try:
        for module, _ in saved:
            module.training = False
        yield
    finally:
        for module, mode in saved:
            if mode is absent:
                vars(module).pop("training", None)
            else:
                module.training = cast(bool, mode)


def _class_call(cls: type) -> Any:
    """The ``__call__`` instances of ``cls`` run (``cls.__call__`` would find ``type``'s
    when no class in the MRO defines one)."""
    for klass in cls.__mro__:
        if "__call__" in vars(klass):
            return vars(klass)["__call__"]
    return None


class _Recorder:
    """Records the calls of the watched modules: each one's first output, labelled, and how
    often it was called; and the labels of every tensor that went into or came out of one."""

    def __init__(self, watched: set[int]) -> None:
        self.watched = watched
        self.outputs: dict[int, tuple[str, Any]] = {}
        self.calls: dict[int, int] = {}
        # id -> (tensor, labels); holding the tensor keeps its id from being reused.
        self.labels: dict[int, tuple[AnyTensor, tuple[_Label, ...]]] = {}
        self.resolved: dict[int, list[inspect.Signature]] = {}

    @contextmanager
    def installed(self, classes: Iterator[type[Any]]) -> Generator[None, None, None]:
        unique = list(dict.fromkeys(classes))
        # Every original is read before any class changes: a subclass's inherited __call__
        # must be the base's own, not the base's recording one.
        originals = [(cls, vars(cls).get("__call__"), _class_call(cls)) for cls in unique]
        patched: list[tuple[type, Any]] = []
        try:
            for cls, own, original in originals:
                if original is not None:
                    setattr(cls, "__call__", self.recording(original))
                    patched.append((cls, own))
            yield
        finally:
            for cls, own in reversed(patched):
                if own is None:
                    delattr(cls, "__call__")
                else:
                    setattr(cls, "__call__", own)

    def recording(self, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def call(module: Any, *args: Any, **kwargs: Any) -> Any:
            if id(module) not in self.watched:  # another instance of the class: untouched
                return original(module, *args, **kwargs)
            return self.record(original, module, args, kwargs)

        return call

    def record(self, original: Callable[..., Any], module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        sizes, size_vars = _layer_sizes(cast(type[Any], type(module)))
        # shapegrad's own layers name their dims with TypeVars (B, H, Lq) that the reader
        # never wrote: only a user's annotation lends a TypeVar's name to a dim.
        names = not str(getattr(original, "__module__", "")).startswith("shapegrad.")
        bindings: dict[Any, Any] = {}
        chosen = self.choose(original, module, args, kwargs)
        if chosen is not None:
            for annotation, value in chosen[1]:
                self.bind(annotation, value, bindings, sizes, size_vars if names else None)
        result = original(module, *args, **kwargs)
        key = id(module)
        self.calls[key] = self.calls.get(key, 0) + 1
        returned = inspect.Signature.empty if chosen is None else chosen[0].return_annotation
        described = self.describe(returned, result, bindings, sizes)
        self.outputs.setdefault(key, described)
        return result

    def choose(
        self, original: Callable[..., Any], module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[inspect.Signature, list[tuple[Any, Any]]] | None:
        """The first signature (overloads, then the implementation) whose annotations fit
        the arguments' ranks, with its (annotation, argument) pairs."""
        for signature in self.signatures(original):
            try:
                bound = signature.bind(module, *args, **kwargs)
            except TypeError:
                continue
            pairs: list[tuple[Any, Any]] = []
            for name, value in bound.arguments.items():
                parameter = signature.parameters[name]
                if parameter.kind == parameter.VAR_POSITIONAL:
                    pairs += [(parameter.annotation, item) for item in cast(tuple[Any, ...], value)]
                elif parameter.kind == parameter.VAR_KEYWORD:
                    pairs += [(parameter.annotation, item) for item in cast(dict[str, Any], value).values()]
                else:
                    pairs.append((parameter.annotation, value))
            if all(_fits(annotation, value) for annotation, value in pairs):
                return signature, pairs
        return None

    def signatures(self, fn: Callable[..., Any]) -> list[inspect.Signature]:
        """``fn``'s overloads' and its own signatures with their annotations resolved; none
        where they cannot be (the shapes then print as numbers)."""
        key = id(fn)
        if key not in self.resolved:
            check: Any = getattr(fn, "_shapegrad_check", None)
            implementation: Any = check.fn if check is not None else inspect.unwrap(fn)
            scope = check.scope if check is not None else None
            found: list[inspect.Signature] = []
            for candidate in [*typing.get_overloads(implementation), implementation]:
                try:
                    found.append(_resolved_signature(candidate, scope))
                except Exception:  # unresolvable annotations name nothing
                    continue
            self.resolved[key] = found
        return self.resolved[key]

    def known(self, tensor: AnyTensor) -> list[_Label]:
        entry = self.labels.get(id(tensor))
        if entry is not None and entry[0] is tensor:
            return list(entry[1])
        return [(_NUMBER, str(n)) for n in tensor.shape]

    def remember(self, tensor: AnyTensor, labels: list[_Label]) -> None:
        self.labels[id(tensor)] = (tensor, tuple(labels))

    def bind(
        self,
        annotation: Any,
        value: Any,
        bindings: dict[Any, Any],
        sizes: dict[Any, _Label],
        size_vars: set[Any] | None,
    ) -> None:
        """Bind the TypeVars ``annotation`` holds to ``value``'s labels, and label ``value``
        by the annotation, for the modules it is passed on to. A TypeVar outside
        ``size_vars`` offers its own name (none does where ``size_vars`` is None)."""
        if isinstance(value, Tensor):
            tensor = cast(AnyTensor, value)
            labels = self.known(tensor)
            for token, positions in _match(annotation, tensor.shape) or ():
                kind, key = token
                if kind == "var":
                    (at,) = positions
                    named = size_vars is not None and key not in size_vars
                    offered = sizes.get(key) or ((_VARIABLE, key.__name__) if named else None)
                    # What the tensor is already called beats the TypeVar's own name.
                    bound = bindings.setdefault(key, _best(labels[at], offered))
                    _improve(labels, positions, [bound])
                elif kind == "vars":
                    _improve(labels, positions, bindings.setdefault(key, [labels[p] for p in positions]))
                else:
                    _improve(labels, positions, _stated(token, tensor.shape, positions))
            self.remember(tensor, labels)
        for element_annotation, element in _elements(annotation, value):
            self.bind(element_annotation, element, bindings, sizes, size_vars)

    def describe(
        self, annotation: Any, value: Any, bindings: dict[Any, Any], sizes: dict[Any, _Label]
    ) -> tuple[str, Any]:
        """``value``'s output text and shape, labelling it (and a tuple's tensors)."""
        if isinstance(value, Tensor):
            tensor = cast(AnyTensor, value)
            labels = self.known(tensor)
            for token, positions in _match(annotation, tensor.shape) or ():
                kind, key = token
                if kind == "var":
                    # A TypeVar no argument bound names nothing the reader could look up.
                    offered = bindings.get(key) or sizes.get(key)
                    _improve(labels, positions, [offered])
                elif kind == "vars":
                    bound = bindings.get(key)
                    if bound is not None and len(bound) == len(positions):
                        _improve(labels, positions, bound)
                else:
                    _improve(labels, positions, _stated(token, tensor.shape, positions))
            self.remember(tensor, labels)
            texts = [text for _, text in labels]
            return ("(" + ", ".join(texts) + ("," if len(texts) == 1 else "") + ")", tensor.shape)
        if isinstance(value, (tuple, list)):
            items = cast("tuple[Any, ...] | list[Any]", value)
            element_annotations = dict(enumerate(a for a, _ in _elements(annotation, value)))
            described = [
                self.describe(element_annotations.get(i, inspect.Signature.empty), item, bindings, sizes)
                for i, item in enumerate(items)
            ]
            return (", ".join(text for text, _ in described), tuple(shape for _, shape in described))
        return (type(value).__name__, None)


def _stated(token: _Token, shape: tuple[int, ...], positions: tuple[int, ...]) -> list[_Label | None]:
    """The labels an annotation's own dim gives: a Dim's name, a literal's size."""
    kind, key = token
    if kind == "name":
        return [(_NAMED, key)]
    if kind == "size":
        return [(_SIZE, str(shape[positions[0]]))]
    return [None] * len(positions)


def _fits(annotation: Any, value: Any) -> bool:
    """Whether a tensor argument has a rank ``annotation`` allows (anything else fits)."""
    if not isinstance(value, Tensor):
        return True
    members = _members(annotation)
    if not any(_tokens(member) is not None for member in members):
        return True
    return _match(annotation, cast(AnyTensor, value).shape) is not None


def _best(current: _Label, offered: _Label | None) -> _Label:
    """The more telling label; ``current`` on a tie."""
    return offered if offered is not None and offered[0] > current[0] else current


def _improve(labels: list[_Label], positions: tuple[int, ...], offered: list[_Label | None]) -> None:
    # The annotation's label replaces one as telling as itself: the enclosing module's
    # name for a dim is the one its reader knows.
    for position, label in zip(positions, offered, strict=True):
        if label is not None and label[0] >= labels[position][0]:
            labels[position] = label


def _elements(annotation: Any, value: Any) -> list[tuple[Any, Any]]:
    """The (annotation, item) pairs of a tuple or list annotated element-wise."""
    if not isinstance(value, (tuple, list)) or get_origin(annotation) not in (tuple, list):
        return []
    items = list(cast("tuple[Any, ...] | list[Any]", value))
    args = get_args(annotation)
    if get_origin(annotation) is list or (len(args) == 2 and args[1] is Ellipsis):
        return [(args[0], item) for item in items] if args else []
    return list(zip(args, items, strict=True)) if len(args) == len(items) else []


def _match(annotation: Any, shape: tuple[int, ...]) -> list[tuple[_Token, tuple[int, ...]]] | None:
    """Each dim of the first member of ``annotation`` (``X | None``) that fits ``shape``,
    with the axes it covers (a variadic one covers any number)."""
    for member in _members(annotation):
        tokens = _tokens(member)
        if tokens is None:
            continue
        variadic = [i for i, (kind, _) in enumerate(tokens) if kind in ("vars", "anys")]
        if not variadic and len(tokens) == len(shape):
            return [(token, (i,)) for i, token in enumerate(tokens)]
        extra = len(shape) - len(tokens) + 1
        if len(variadic) == 1 and extra >= 0:
            v = variadic[0]
            return (
                [(token, (i,)) for i, token in enumerate(tokens[:v])]
                + [(tokens[v], tuple(range(v, v + extra)))]
                + [(token, (v + extra + i,)) for i, token in enumerate(tokens[v + 1 :])]
            )
    return None


_UNION_TYPE: Any = type(int | None)


def _members(annotation: Any) -> tuple[Any, ...]:
    """The members of ``X | Y`` (``Optional[X]``), or ``(annotation,)``."""
    return get_args(annotation) if get_origin(annotation) in (typing.Union, _UNION_TYPE) else (annotation,)


def _tokens(annotation: Any) -> list[_Token] | None:
    """The dims of a ``Tensor[...]`` (or jaxtyping) annotation, or None for any other."""
    from ._annotations import run_time_check  # imports jaxtyping: not at import (SHAPEGRAD_CHECKS=0)

    annotation = run_time_check(annotation)  # a Tensor[...] holding TypeVars: its check class
    params = getattr(annotation, "_shapegrad_params", None)
    if isinstance(params, tuple):  # a Tensor[...] holding TypeVars: the TypeVars themselves
        return [_param_token(p) for p in cast(tuple[Any, ...], params)[1:]]
    dim_str = getattr(annotation, "dim_str", None)
    if isinstance(annotation, type) and isinstance(dim_str, str):
        return [_string_token(s) for s in dim_str.split()]
    return None


def _param_token(param: Any) -> _Token:
    origin = get_origin(param)
    if origin is Literal:
        return ("size", None)
    if param is Open:
        return ("any", None)
    if isinstance(param, type) and issubclass(param, Dim):
        return ("name", param.__name__)
    if isinstance(param, TypeVar):
        return ("var", param)
    if isinstance(param, TypeVarTuple):
        return ("vars", param)
    unpacked: Any = getattr(cast(object, param), "__typing_unpacked_tuple_args__", None)
    if origin is typing.Unpack or unpacked is not None:
        inner: Any = get_args(param)[0] if get_args(param) else None
        return ("vars", inner) if isinstance(inner, TypeVarTuple) else ("anys", None)
    if type(cast(object, param)).__name__ == "_UnpackGenericAlias":
        return ("anys", None)
    return ("size", None) if literal_size(param) is not None else ("any", None)  # Prod/Sum/Half of literals


def _string_token(dim: str) -> _Token:
    # jaxtyping's dim strings: "4", "Batch", "*batch", "...", "_", "*_" (and expressions)
    if dim.isdigit():
        return ("size", None)
    if dim in ("...", "*_", "#..."):
        return ("anys", None)
    if dim.startswith("*") and dim[1:].isidentifier():
        return ("vars", dim[1:])
    if dim.isidentifier() and dim != "_":
        return ("name", dim)
    return ("any", None)


def _layer_sizes(cls: type[Any]) -> tuple[dict[Any, _Label], set[Any]]:
    """A layer class's sizes as its type arguments give them (``Linear[L[4], L[8]]``: ``I``
    is 4, ``O`` is 8), and every TypeVar that stands for a layer's size: those print as the
    size, never as the TypeVar's name.

    ``Layer.__class_getitem__`` makes a subclass holding ``_type_args`` (``Linear`` derives
    from ``Layer[I, O]``, whose ``_type_args`` are those TypeVars): a class's own size
    parameters are the TypeVars in its bases' ``_type_args``."""
    sized = [k for k in cls.__mro__ if "_type_args" in vars(k) and k is not Layer]
    size_vars = {v for k in sized for v in _type_variables(getattr(k, "_type_args", ()))}
    sizes: dict[Any, _Label] = {}
    concrete = next((k for k in sized if not _type_variables(getattr(k, "_type_args", ()))), None)
    if concrete is not None and concrete.__bases__:
        generic = concrete.__bases__[0]
        parameters = [
            v
            for base in generic.__bases__
            if "_type_args" in vars(base)
            for v in _type_variables(getattr(base, "_type_args", ()))
        ]
        for variable, argument in zip(dict.fromkeys(parameters), getattr(concrete, "_type_args", ()), strict=False):
            label = _size_label(argument)
            if label is not None:
                sizes[variable] = label
    return sizes, size_vars


def _type_variables(arguments: tuple[Any, ...]) -> list[Any]:
    """The TypeVars in ``arguments`` (``Chan[I]`` holds ``I``), in order."""
    found: list[Any] = []
    for argument in arguments:
        if isinstance(argument, TypeVar):
            found.append(argument)
        else:
            found.extend(_type_variables(get_args(argument)))
    return found


def _size_label(argument: Any) -> _Label | None:
    if get_origin(argument) is Literal:
        return (_SIZE, str(int(get_args(argument)[0])))
    if isinstance(argument, type) and issubclass(argument, Dim):
        return (_NAMED, argument.__name__)
    return None
