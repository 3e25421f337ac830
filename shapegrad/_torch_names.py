"""PyTorch's spellings that shapegrad spells otherwise, and the errors that name ours.

A port of PyTorch code met a bare ``AttributeError`` on ``x.view(...)``, ``x.unsqueeze(1)``,
``x.contiguous()``, ``x.float()``, ``p.add_(g)``, ``sg.cat(...)``. Reading one of these names
still raises ``AttributeError`` (so ``hasattr(x, "view")`` stays False and
``getattr(x, "view", None)`` gives None), now with shapegrad's spelling in the message.

Run time only, as ``_inplace``: the checkers never see these names, so pyright still reports
``x.view(2)`` and ``sg.cat(...)`` as unknown attributes. On ``Tensor`` each name is a class
attribute whose ``__get__`` raises, set after the class is made; not a ``__getattr__``, which
CPython (3.11) consults through a slower lookup for *every* attribute of the class, found or
not (a slot read 6 -> 22 ns, a method call 20 -> 45 ns, measured), and which would also see
the copy and pickle protocols' dunder lookups. The module's names go through a
``__getattr__`` of ``shapegrad`` (PEP 562: called only for a name the module lacks).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn, cast

from ._errors import KeywordError
from ._opspec import OPS

__all__ = [
    "MODULE_NAMES",
    "NN_NAMES",
    "TENSOR_NAMES",
    "backend_hint",
    "install_torch_names",
    "missing_module_attribute",
    "refuse_torch_keywords",
]

# PyTorch's Tensor attribute: (PyTorch's use, shapegrad's spelling, a note or "").
_IN_PLACE = "in place where x and y are untraced; a parameter under sg.no_grad()"
_NO_CALL = "a property, no call"
TENSOR_NAMES: dict[str, tuple[str, str, str]] = {
    "view": ("x.view(...)", "x.reshape(...)", "a view of x's memory where NumPy can make one, as PyTorch's reshape"),
    "view_as": ("x.view_as(other)", "x.reshape(other.shape)", ""),
    "reshape_as": ("x.reshape_as(other)", "x.reshape(other.shape)", ""),
    "contiguous": (
        "x.contiguous()",
        "x itself",
        "drop the call: every op here takes any memory layout; x.clone() gives a copy in new memory",
    ),
    "unsqueeze": ("x.unsqueeze(dim)", "x.expand_dims(axis)", "or x[:, None]"),
    "dim": ("x.dim()", "x.ndim", _NO_CALL),
    "ndimension": ("x.ndimension()", "x.ndim", _NO_CALL),
    "numel": ("x.numel()", "x.size", f"{_NO_CALL}, the number of elements; PyTorch's x.size() is x.shape here"),
    "nelement": ("x.nelement()", "x.size", f"{_NO_CALL}, the number of elements"),
    "float": ("x.float()", 'x.astype("float32")', ""),
    "double": ("x.double()", 'x.astype("float64")', ""),
    "half": ("x.half()", 'x.astype("float16")', ""),
    "long": ("x.long()", 'x.astype("int64")', ""),
    "int": ("x.int()", 'x.astype("int32")', ""),
    "short": ("x.short()", 'x.astype("int16")', ""),
    "byte": ("x.byte()", 'x.astype("uint8")', ""),
    "bool": ("x.bool()", 'x.astype("bool")', ""),
    "type": ("x.type(dtype)", 'x.astype("float32")', "dtypes are strings; x.backend_dtype_name() names x's"),
    "type_as": ("x.type_as(other)", "x.astype(other.backend_dtype_name())", ""),
    "cuda": ("x.cuda()", 'x.to("cupy")', 'backends stand for devices: a model moves with model.to("cupy")'),
    "cpu": ("x.cpu()", 'x.to("numpy")', "x.numpy() gives a NumPy array"),
    "device": ("x.device", "x.backend", '"numpy", "cupy": backends stand for devices'),
    "requires_grad": (
        "x.requires_grad",
        "x.traced",
        "whether x is on a tape; x = x.trace(grads) puts it on one (grads = sg.Gradients() or model.alloc_grads())",
    ),
    "requires_grad_": (
        "x.requires_grad_()",
        "x = x.trace(grads)",
        'grads = sg.Gradients() or model.alloc_grads(); a parameter stops training with model.freeze("path")',
    ),
    "grad": ("x.grad", "grads[x]", "after loss.backward(): gradients live in a Gradients, not on the tensors"),
    "detach_": ("x.detach_()", "x = x.detach()", ""),
    "add_": ("x.add_(y)", "x += y", _IN_PLACE),
    "sub_": ("x.sub_(y)", "x -= y", _IN_PLACE),
    "mul_": ("x.mul_(y)", "x *= y", _IN_PLACE),
    "div_": ("x.div_(y)", "x /= y", _IN_PLACE),
    "pow_": ("x.pow_(y)", "x **= y", _IN_PLACE),
    "zero_": ("x.zero_()", "x[...] = 0", "a write into x's memory; a parameter under sg.no_grad()"),
    "fill_": ("x.fill_(value)", "x[...] = value", "a write into x's memory; a parameter under sg.no_grad()"),
    "copy_": ("x.copy_(source)", "x[...] = source", "a write into x's memory; a parameter under sg.no_grad()"),
    "masked_fill_": (
        "x.masked_fill_(mask, value)",
        "x[mask] = value",
        "a mask of x's shape; x[...] = x.masked_fill(mask, value) where it broadcasts, x = x.masked_fill(...) "
        "for a new tensor",
    ),
    "normal_": ("x.normal_(mean, std)", "sg.nn.init.normal_(x, mean, std)", ""),
    "uniform_": ("x.uniform_(a, b)", "sg.nn.init.uniform_(x, a, b)", ""),
    "expand": ("x.expand(*sizes)", "x.broadcast_to(*sizes)", "PyTorch's -1 (keep that size) is the size written out"),
    "expand_as": ("x.expand_as(other)", "x.broadcast_to(other.shape)", ""),
    "t": ("x.t()", "x.T", "a matrix's transpose; x.mT swaps the last two axes of any rank"),
    "mm": ("x.mm(y)", "x @ y", ""),
    "bmm": ("x.bmm(y)", "x @ y", ""),
    "amax": ("x.amax(dim)", "x.max(axis=...)", "the values alone, as NumPy's"),
    "amin": ("x.amin(dim)", "x.min(axis=...)", "the values alone, as NumPy's"),
    "index_select": ("x.index_select(dim, index)", "x[index]", "along the first axis; x[:, index] along the second"),
    "masked_select": ("x.masked_select(mask)", "x[mask]", ""),
    "unbind": ("x.unbind()", "list(x)", "the rows, along the first axis; list(x.swapaxes(0, d)) along axis d"),
    "clip": ("x.clip(min, max)", "x.clamp(min, max)", ""),
    "where": (
        "x.where(condition, y)",
        "sg.where(condition, x, y)",
        "the condition first; PyTorch's method puts it second",
    ),
    "equal": ("x.equal(y)", "(x == y).all()", "a Python bool; sg.equal(x, y) is element-wise"),
    "eq": ("x.eq(y)", "x == y", ""),
    "ne": ("x.ne(y)", "x != y", ""),
    "lt": ("x.lt(y)", "x < y", ""),
    "le": ("x.le(y)", "x <= y", ""),
    "gt": ("x.gt(y)", "x > y", ""),
    "ge": ("x.ge(y)", "x >= y", ""),
    "new_zeros": ("x.new_zeros(sizes)", "sg.zeros(*sizes, dtype=x.backend_dtype_name(), backend=x.backend)", ""),
    "new_ones": ("x.new_ones(sizes)", "sg.ones(*sizes, dtype=x.backend_dtype_name(), backend=x.backend)", ""),
    "new_empty": ("x.new_empty(sizes)", "sg.zeros(*sizes, dtype=x.backend_dtype_name(), backend=x.backend)", ""),
    "new_full": (
        "x.new_full(sizes, value)",
        "sg.full(sizes, value, dtype=x.backend_dtype_name(), backend=x.backend)",
        "",
    ),
    "new_tensor": ("x.new_tensor(data)", "sg.tensor(data, backend=x.backend)", ""),
}

# PyTorch's module attribute: (PyTorch's use, shapegrad's spelling, a note or "").
_DTYPE = "dtypes are strings here"
MODULE_NAMES: dict[str, tuple[str, str, str]] = {
    "cat": ("torch.cat(tensors, dim)", "sg.concat(tensors, axis=dim)", ""),
    "unsqueeze": ("torch.unsqueeze(x, dim)", "sg.expand_dims(x, axis)", "or x[:, None]"),
    "clip": ("torch.clip(x, min, max)", "sg.clamp(x, min, max)", ""),
    "as_tensor": ("torch.as_tensor(data)", "sg.asarray(data)", "shares memory where it can; sg.tensor(data) copies"),
    "manual_seed": ("torch.manual_seed(n)", "sg.seed(n)", "or generator=sg.Generator(n) per call"),
    "mm": ("torch.mm(a, b)", "a @ b", "sg.matmul(a, b)"),
    "bmm": ("torch.bmm(a, b)", "a @ b", "sg.matmul(a, b)"),
    "transpose": (
        "torch.transpose(x, d0, d1)",
        "sg.swapaxes(x, d0, d1)",
        "x.transpose() reverses every axis, as NumPy's",
    ),
    "movedim": ("torch.movedim(x, source, destination)", "sg.permute(x, axes)", "every axis in its new order"),
    "amax": ("torch.amax(x, dim)", "sg.max(x, axis=...)", ""),
    "amin": ("torch.amin(x, dim)", "sg.min(x, axis=...)", ""),
    "empty": ("torch.empty(*sizes)", "sg.zeros(*sizes)", "no uninitialised memory"),
    "empty_like": ("torch.empty_like(x)", "sg.zeros_like(x)", "no uninitialised memory"),
    "numel": ("torch.numel(x)", "x.size", "a property, the number of elements"),
    "is_tensor": ("torch.is_tensor(x)", "isinstance(x, sg.Tensor)", ""),
    "index_select": (
        "torch.index_select(x, dim, index)",
        "x[index]",
        "along the first axis; x[:, index] along the second",
    ),
    "unbind": ("torch.unbind(x)", "list(x)", "the rows, along the first axis"),
    "inference_mode": ("torch.inference_mode()", "sg.no_grad()", ""),
    "relu6": ("F.relu6(x)", "sg.clamp(x, 0.0, 6.0)", "or sg.hardtanh(x, 0.0, 6.0)"),
    "set_grad_enabled": (
        "torch.set_grad_enabled(False)",
        "sg.no_grad()",
        "outside it ops on traced tensors record",
    ),
    "enable_grad": ("torch.enable_grad()", "leaving sg.no_grad()", "outside it ops on traced tensors record"),
    "device": (
        "torch.device(...)",
        'a backend name ("numpy", "cupy")',
        'backends stand for devices: x.to("cupy"), model.to("cupy"), sg.set_backend("cupy")',
    ),
    "cuda": (
        "torch.cuda",
        'the "cupy" backend',
        'x.to("cupy"), model.to("cupy"), sg.set_backend("cupy"); sg.available_backends() lists the backends',
    ),
    **{
        name: (f"torch.{name}", f'"{dtype}"', f'{_DTYPE}: x.astype("{dtype}"), sg.zeros(..., dtype="{dtype}")')
        for name, dtype in (
            ("float32", "float32"),
            ("float", "float32"),
            ("float64", "float64"),
            ("double", "float64"),
            ("float16", "float16"),
            ("half", "float16"),
            ("int64", "int64"),
            ("long", "int64"),
            ("int32", "int32"),
            ("int", "int32"),
            ("int16", "int16"),
            ("int8", "int8"),
            ("uint8", "uint8"),
            ("bool", "bool"),
        )
    },
}


# PyTorch's torch.nn names that shapegrad spells otherwise (sg.nn.<name>).
NN_NAMES: dict[str, tuple[str, str, str]] = {
    "ReLU6": (
        "nn.ReLU6()",
        "sg.nn.Hardtanh(0.0, 6.0)",
        "PyTorch's ReLU6 is that Hardtanh; from_torch loads one for it",
    ),
    "AdaptiveAvgPool2d": (
        "nn.AdaptiveAvgPool2d(1)",
        "sg.nn.GlobalAvgPool2d()",
        "(B, C, H, W) -> (B, C), the flatten included; other output sizes are not provided",
    ),
    "AdaptiveMaxPool2d": (
        "nn.AdaptiveMaxPool2d(1)",
        "sg.nn.GlobalMaxPool2d()",
        "(B, C, H, W) -> (B, C), the flatten included; other output sizes are not provided",
    ),
    "functional": (
        "torch.nn.functional (F.relu, F.softmax, F.cross_entropy, ...)",
        "sg (sg.relu, sg.softmax, ...) and sg.losses (sg.losses.cross_entropy, ...)",
        "the functions are the ops themselves, and the tensors' methods",
    ),
    "utils": (
        "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)",
        "sg.optim.clip_grad_norm(grads, max_norm)",
        "on the Gradients; or the optimizer's clip_norm=, which a compiled step replays",
    ),
    "Softmax": ("nn.Softmax(dim)", "x.softmax(axis=dim)", "or sg.softmax(x, axis=dim): a function, no layer"),
    "LogSoftmax": ("nn.LogSoftmax(dim)", "x.log_softmax(axis=dim)", "or sg.log_softmax(x, axis=dim)"),
    "ModuleList": (
        "nn.ModuleList([...])",
        "a plain list of layers",
        "a module finds the parameters of layers held in lists, tuples and dicts",
    ),
    "ModuleDict": ("nn.ModuleDict({...})", "a plain dict of layers", "a module finds the parameters in dicts too"),
    "ParameterList": ("nn.ParameterList([...])", "a plain list of sg.nn.parameter(...) tensors", ""),
    "Parameter": ("nn.Parameter(tensor)", "sg.nn.parameter(tensor)", "trainable=False for a frozen one"),
    "MultiheadAttention": (
        "nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)",
        "sg.nn.MultiHeadAttention(num_heads, embed_dim=...)",
        "batch first, always",
    ),
    "TransformerEncoderLayer": (
        "nn.TransformerEncoderLayer(d_model, nhead, norm_first=True, activation='gelu', batch_first=True)",
        "sg.nn.TransformerEncoderBlock(num_heads, ff_dim, embed_dim=d_model)",
        "pre-norm, batch first",
    ),
    **{
        name: (f"nn.{name}()(input, target)", f"sg.losses.{ours}(input, target)", "losses are functions here")
        for name, ours in (
            ("CrossEntropyLoss", "cross_entropy"),
            ("NLLLoss", "nll_loss"),
            ("MSELoss", "mse"),
            ("L1Loss", "mae"),
            ("SmoothL1Loss", "smooth_l1"),
            ("HuberLoss", "huber"),
            ("BCELoss", "binary_cross_entropy"),
            ("BCEWithLogitsLoss", "binary_cross_entropy_with_logits"),
            ("KLDivLoss", "kl_div"),
        )
    },
}

# PyTorch's torch.nn.functional loss names that sg.losses spells otherwise.
LOSS_NAMES: dict[str, tuple[str, str, str]] = {
    name: (f"F.{name}(input, target)", f"sg.losses.{ours}(input, target)", "")
    for name, ours in (
        ("mse_loss", "mse"),
        ("l1_loss", "mae"),
        ("smooth_l1_loss", "smooth_l1"),
        ("huber_loss", "huber"),
    )
}

# PyTorch's torch.optim names that sg.optim spells otherwise.
_SCHEDULE = "a schedule is the optimizer's lr=, a function of the step"
OPTIM_NAMES: dict[str, tuple[str, str, str]] = {
    "lr_scheduler": ("torch.optim.lr_scheduler", "sg.optim.schedules", _SCHEDULE),
    "CosineAnnealingLR": (
        "lr_scheduler.CosineAnnealingLR(opt, T_max)",
        "lr=sg.optim.schedules.cosine(lr, total_steps=T_max)",
        _SCHEDULE,
    ),
    "StepLR": ("lr_scheduler.StepLR(opt, step_size)", "lr=sg.optim.schedules.step(lr, step_size)", _SCHEDULE),
    "LambdaLR": ("lr_scheduler.LambdaLR(opt, f)", "lr=lambda step: lr * f(step)", _SCHEDULE),
    "LinearLR": (
        "lr_scheduler.LinearLR(opt, ...)",
        "lr=sg.optim.schedules.warmup(lr, warmup_steps)",
        f"{_SCHEDULE}; warmup ramps up linearly",
    ),
    "clip_grad_norm_": ("nn.utils.clip_grad_norm_(params, max_norm)", "sg.optim.clip_grad_norm(grads, max_norm)", ""),
}

# PyTorch's nn.Module methods that shapegrad's Module spells otherwise (model.<name>).
_GRADIENTS = "gradients live in the Gradients from model.alloc_grads(), not in the model"
MODULE_METHOD_NAMES: dict[str, tuple[str, str, str]] = {
    "zero_grad": ("model.zero_grad()", "grads.zero()", _GRADIENTS),
    "requires_grad_": (
        "model.requires_grad_(False)",
        "model.freeze()",
        "model.unfreeze() undoes it; freeze('path') a part",
    ),
    "children": ("model.children()", "(m for _, m in model.named_children())", ""),
    "named_buffers": ("model.named_buffers()", "model.named_tensors()", "parameters and buffers together"),
    "buffers": ("model.buffers()", "[t for _, t in model.named_tensors()]", "parameters and buffers together"),
    "register_buffer": (
        "self.register_buffer(name, tensor)",
        "self.name = tensor",
        "a tensor attribute that is no parameter is a buffer: in state_dict(), moved by to()",
    ),
    "register_parameter": ("self.register_parameter(name, p)", "self.name = sg.nn.parameter(tensor)", ""),
    "add_module": ("self.add_module(name, layer)", "setattr(self, name, layer)", ""),
    "get_submodule": ("model.get_submodule(path)", "dict(model.named_modules())[path]", ""),
    "cuda": ("model.cuda()", 'model.to("cupy")', ""),
    "cpu": ("model.cpu()", 'model.to("numpy")', ""),
    "float": ("model.float()", 'model.to(dtype="float32")', ""),
    "double": ("model.double()", 'model.to(dtype="float64")', ""),
    "half": ("model.half()", 'model.to(dtype="float16")', ""),
}


def _message(owner: str, name: str, entry: tuple[str, str, str]) -> str:
    torch, ours, note = entry
    return f"{owner} has no attribute {name!r}: PyTorch's {torch} is {ours} here" + (f"; {note}" if note else "")


class _TorchName:
    """A class attribute of ``Tensor`` that is none: reading it raises ``AttributeError``
    naming shapegrad's spelling."""

    __slots__ = ("_message", "_name")

    def __init__(self, name: str, message: str) -> None:
        self._name = name
        self._message = message

    def __get__(self, instance: object, owner: type | None = None) -> NoReturn:
        raise AttributeError(self._message, name=self._name, obj=instance)


def _in_place_entry(method: str) -> tuple[str, str, str]:
    return (
        f"x.{method}_(...)",
        f"x[...] = x.{method}(...)",
        f"a write into x's memory, a parameter's under sg.no_grad(); x = x.{method}(...) for a new tensor",
    )


class _ModuleTorchName:
    """A class attribute of ``nn.Module`` that is none, as ``_TorchName``, whose message names
    the instance's own class (``'Net' object``)."""

    __slots__ = ("_entry", "_name")

    def __init__(self, name: str, entry: tuple[str, str, str]) -> None:
        self._name = name
        self._entry = entry

    def __get__(self, instance: object, owner: type | None = None) -> NoReturn:
        named = type(instance).__name__ if instance is not None else getattr(owner, "__name__", "Module")
        raise AttributeError(_message(f"'{named}' object", self._name, self._entry), name=self._name, obj=instance)


def install_module_names(cls: type) -> None:
    """Give ``cls`` (``nn.Module``) the names of ``MODULE_METHOD_NAMES`` as attributes that
    raise ``AttributeError`` with shapegrad's spelling (``model.zero_grad()``). A subclass's
    own method or attribute of that name wins."""
    for name, entry in MODULE_METHOD_NAMES.items():
        if not any(name in vars(klass) for klass in cls.__mro__):
            setattr(cls, name, _ModuleTorchName(name, entry))


def install_torch_names(cls: type) -> None:
    """Give ``cls`` (``Tensor``) the names of ``TENSOR_NAMES``, and ``<method>_`` for each op
    method of the op table (PyTorch's in-place forms, ``x.relu_()``, ``x.clamp_(0, 1)``), as
    attributes that raise ``AttributeError`` with shapegrad's spelling. A name ``cls`` has is
    left alone (a new op of that name wins; tests/test_torch_names.py reports the stale row)."""
    methods = sorted(
        name
        for op in OPS
        for name in (op.method, op.name if op.named else None)
        if name is not None and not name.startswith("_")
    )
    entries = {f"{method}_": _in_place_entry(method) for method in methods} | TENSOR_NAMES
    owner = f"'{cls.__name__}' object"
    for name, entry in entries.items():
        if not any(name in vars(klass) for klass in cls.__mro__):
            setattr(cls, name, _TorchName(name, _message(owner, name, entry)))


def missing_module_attribute(module: str, name: str) -> NoReturn:
    """The ``AttributeError`` of ``module.name`` (``sg.cat``): naming shapegrad's spelling
    where ``name`` is PyTorch's (``MODULE_NAMES``; ``NN_NAMES``, ``LOSS_NAMES`` and
    ``OPTIM_NAMES`` for ``shapegrad.nn``, ``.losses`` and ``.optim``), else Python's own message."""
    tables = {"shapegrad.nn": NN_NAMES, "shapegrad.losses": LOSS_NAMES, "shapegrad.optim": OPTIM_NAMES}
    entry = tables.get(module, MODULE_NAMES).get(name)
    owner = f"module {module!r}"
    message = _message(owner, name, entry) if entry else f"{owner} has no attribute {name!r}"
    raise AttributeError(message, name=name)


# PyTorch's keyword arguments that shapegrad spells otherwise: (PyTorch's, ours).
TORCH_KEYWORDS: dict[str, str] = {"dim": "axis", "keepdim": "keepdims"}
# ... and those of one op only: PyTorch's flip and roll take ``dims=`` (tuples), roll ``shifts=``.
OP_KEYWORDS: dict[str, dict[str, str]] = {"flip": {"dims": "axis"}, "roll": {"dims": "axis", "shifts": "shift"}}


def refuse_torch_keywords(op: str, keywords: dict[str, Any], required: str = "axis") -> NoReturn:
    """The error of ``op`` called with keywords it does not take (an op with an ``axis``
    gathers them in ``**torch_keywords``, the one cost being that dict): ``KeywordError``
    naming shapegrad's spelling of PyTorch's ``dim=`` and ``keepdim=``, else Python's own
    ``TypeError``. With no keywords, the ``TypeError`` of a missing ``required`` argument: an
    op whose axis has no default takes ``None`` for it in its implementation, so that
    ``cumsum(x, dim=1)`` reaches this refusal instead of Python's missing-argument error
    (its overloads keep the axis required, ``**torch_keywords: Never``)."""
    if not keywords:
        raise TypeError(f"{op}() missing 1 required argument: {required!r}")
    for name, value in keywords.items():
        ours = TORCH_KEYWORDS.get(name) or OP_KEYWORDS.get(op, {}).get(name)
        if ours is not None:
            raise KeywordError(
                f"{op}() got an unexpected keyword argument {name!r}: shapegrad spells PyTorch's {name}= as "
                f"{ours}= ({_written(op, ours, value)})"
            )
    raise TypeError(f"{op}() got an unexpected keyword argument {next(iter(keywords))!r}")


def _written(op: str, ours: str, value: Any) -> str:
    """How to write ``ours=value``: PyTorch's ``dims=``/``shifts=`` of flip and roll are
    tuples where ours is one int (``flip(x, dims=[0])`` is ``flip(x, axis=0)``; several axes
    are one call each)."""
    if isinstance(value, (list, tuple)) and op in OP_KEYWORDS:
        items = cast(Sequence[Any], value)
        if len(items) == 1:
            return f"write {ours}={items[0]!r}"
        if op == "flip":
            nested = "x"
            for axis in items:
                nested = f"flip({nested}, axis={axis!r})"
            return f"flip takes one axis: write {nested}"
        return f"{op} takes one {ours}: one call per axis, shift and axis each an int"
    return f"write {ours}={value!r}"


# PyTorch's dtype names (torch.float, torch.long, ...) and shapegrad's.
_DTYPE_NAMES = {
    **{name: name for name in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")},
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "short": "int16",
    "int": "int32",
    "long": "int64",
}


def backend_hint(value: Any) -> str:
    """What a backend argument that names a PyTorch device or a dtype (``"cuda"``,
    ``torch.float32``, ``"float64"``) should have been, as a sentence to append; ``""`` for
    anything else."""
    text = str(value)
    text = text.removeprefix("torch.")
    device = text.partition(":")[0]
    if device == "cuda":
        return '. PyTorch\'s "cuda" device is the "cupy" backend here: x.to("cupy"), model.to("cupy")'
    if device == "cpu":
        return '. PyTorch\'s "cpu" device is the "numpy" backend here: x.to("numpy"), model.to("numpy")'
    dtype = _DTYPE_NAMES.get(text)
    if dtype is not None:
        return (
            f". {value!s} is a dtype, and .to() takes a backend here: convert a tensor with "
            f'x.astype("{dtype}"), a model with model.to(dtype="{dtype}")'
        )
    return ""
