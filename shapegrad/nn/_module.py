"""``Module``: a model is a plain class whose typed ``__call__`` is its forward pass."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NoReturn, Self, cast

import numpy as np
from typing_extensions import TypeIs, TypeVar

from .._autodiff import ParamInfo, make_parameter
from .._checking import checked as checked_function, checks_enabled
from .._dims import Dim, literal_size
from .._errors import DTypeError, ParameterError, ShapeError, ShapegradError
from .._gradients import Gradients
from .._tensor import AnyTensor, Tensor
from .._torch_names import install_module_names
from .._typevars import S
from ..ops._toolkit import integer

if TYPE_CHECKING:
    from ._state import IncompatibleKeys

__all__ = ["ChanLayer", "Layer", "Module", "parameter"]

I = TypeVar("I")
O = TypeVar("O")
# A module's own type arguments (a layer's sizes, Linear[I, O] -> Module[I, O]), so that
# ``isinstance(m, Linear)`` on a ``Module`` narrows to ``Linear[Any, Any]``: pyright infers
# the narrowed class's arguments from the declared type's (it never uses TypeVar defaults
# there), so they must appear unwrapped in a base. The defaults make a bare ``Module``
# (a model subclass, an annotation) ``Module[Any, Any]``.
Own0 = TypeVar("Own0", default=Any)
Own1 = TypeVar("Own1", default=Any)


def parameter(tensor: Tensor[Any, *S], *, trainable: bool = True) -> Tensor[Any, *S]:
    """Mark ``tensor`` as a parameter and return it: assigned to a module attribute, it is
    found by ``named_parameters()``, gets a buffer from ``alloc_grads()``, and ops that meet
    it on a tape record its gradient.

    Examples:
        >>> import shapegrad as sg
        >>> class Scale(sg.nn.Module):
        ...     def __init__(self) -> None:
        ...         self.factor = sg.nn.parameter(sg.ones(3))
        >>> [name for name, _ in Scale().named_parameters()]
        ['factor']
    """
    if tensor._node is not None:
        raise ShapegradError(
            "parameter() expects a plain tensor, found the result of a recorded op; use .detach() first"
        )
    data = tensor._data
    flags = getattr(data, "flags", None)
    if flags is not None and not (getattr(flags, "writeable", True) and getattr(flags, "owndata", True)):
        # A parameter owns writable memory: a view of someone else's array (or a read-only
        # one) would make an optimizer step fail half-way or change that array too.
        tensor._data = tensor._backend.xp.asarray(data, copy=True)
    make_parameter(tensor, trainable)
    return tensor


def _check_same_layout(path: str, current: AnyTensor, value: AnyTensor) -> None:
    """Refuse tying a weight kept as ``(out, in)`` (an embedding's, a recurrent layer's: PyTorch's
    layout) into a slot kept as ``(in, out)`` (``Linear.weight``): PyTorch's
    ``self.decoder.weight = self.encoder.weight`` computed ``x @ E`` where PyTorch computes
    ``x @ E.T``, silently when the two sizes are equal. A new parameter (``nn.parameter(...)``)
    states no layout, so the reverse cannot be told from a fresh weight: it is let through."""
    was, new = current._param, value._param
    if was is None or new is None or was.out_in or not new.out_in or current.ndim != 2 or value.ndim != 2:
        return
    layout = {False: "(in, out), as x @ weight reads it", True: "(out, in), PyTorch's layout"}
    raise ParameterError(
        f"{path} is kept as {layout[was.out_in]}, and the parameter assigned to it, shape "
        f"{tuple(value.shape)}, as {layout[new.out_in]}: the layer would multiply by its transpose, "
        "silently where the two sizes are equal. Expected a weight of the slot's layout. To tie an "
        "output head to an embedding (PyTorch's decoder.weight = encoder.weight), use the embedding's "
        "weight transposed in the forward pass: logits = h @ self.embed.weight.T (examples/gpt.py)"
    )


def out_in(tensor: Tensor[Any, *S]) -> Tensor[Any, *S]:
    """Mark the 2-D parameter ``tensor`` as stored in PyTorch's ``(out, in)`` layout (a
    recurrent weight, ``Embedding.weight``) and return it: ``sg.nn.init`` then takes its fans
    as PyTorch does (``fan_in = shape[1]``), not as ``Linear``'s ``(in, out)``."""
    _param_info(tensor).out_in = True
    return tensor


class Module(Generic[Own0, Own1]):
    """Base of every model and layer.

    Subclass it, assign parameters (``sg.nn.parameter``), layers and lists or dicts of
    layers as attributes, and write a typed ``__call__``. When run-time checks are on,
    ``__call__`` is checked like an ``sg.checked`` function. Dropout and batch
    normalization follow ``model.train()`` / ``model.eval()``; a new module is in training
    mode.

    Examples:
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> from shapegrad import Tensor
        >>> from shapegrad.nn import Linear
        >>> from shapegrad.nn import T
        >>> class Batch(sg.Dim): ...
        >>> class MLP(sg.nn.Module):
        ...     def __init__(self) -> None:
        ...         self.hidden = Linear[L[4], L[8]]()
        ...         self.out = Linear[L[8], L[2]]()
        ...     def __call__(self, x: Tensor[T, Batch, L[4]]) -> Tensor[T, Batch, L[2]]:
        ...         return self.out(self.hidden(x).relu())
        >>> MLP().num_parameters()
        58
    """

    training: bool = True

    def __init_subclass__(cls, checked: bool = True, **kwargs: Any) -> None:
        """``checked=False`` leaves ``__call__`` unchecked: shapegrad's own layers use it,
        since their annotations hold only TypeVars (a check could only bind them) and their
        ops already raise ``ShapeError`` naming both shapes."""
        super().__init_subclass__(**kwargs)
        if "forward" in cls.__dict__ and not any("__call__" in vars(klass) for klass in cls.__mro__[:-1]):
            cls.__call__ = _forward_is_not_called
        call = cls.__dict__.get("__call__")
        if checked and call is not None and checks_enabled() and not getattr(call, "_shapegrad_checked", False):
            wrapped = checked_function(call)
            wrapped._shapegrad_checked = True
            setattr(cls, "__call__", wrapped)

    def __setattr__(self, name: str, value: Any) -> None:
        # Replacing a parameter by a plain tensor (model.out.weight = sg.tensor(w), or
        # layer.weight = layer.weight.to("cupy")) would silently turn it into an untrained
        # buffer: refuse it, as PyTorch does.
        current = self.__dict__.get(name)
        if (
            isinstance(current, Tensor)
            and cast(AnyTensor, current)._param is not None
            and isinstance(value, Tensor)
            and cast(AnyTensor, value)._param is None
        ):
            path = f"{type(self).__name__}.{name}"
            raise ParameterError(
                f"{path} is a parameter; assigning a plain tensor {value!r} to it would make it an "
                f"untrained buffer. Expected a parameter: self.{name} = sg.nn.parameter(tensor), or copy "
                f"values in place with sg.load, or move the whole model with model.to(...)"
            )
        if isinstance(current, Tensor) and isinstance(value, Tensor):
            _check_same_layout(f"{type(self).__name__}.{name}", cast(AnyTensor, current), cast(AnyTensor, value))
        object.__setattr__(self, name, value)

    # -- structure ---------------------------------------------------------------------
    def named_children(self) -> Iterator[tuple[str, Any]]:
        """``(name, value)`` of the attributes that make up this module, in assignment order:
        every public attribute, and every private one (a name starting with ``_``) that holds
        a sub-module or a parameter, directly or inside lists, tuples and dicts: as PyTorch
        registers ``self._enc = nn.Linear(...)``, its parameters are ``_enc.weight`` and
        ``_enc.bias``. A plain tensor (not a parameter) under a private name is no state (a
        cache: not in ``state_dict``, not moved by ``to()``), nor are the other private
        attributes (a generator, a comm)."""
        for name, value in vars(self).items():
            if not name.startswith("_") or _holds_state(value):
                yield name, value

    def _walk(self, prefix: str, within: tuple[int, ...] = ()) -> Iterator[tuple[str, Any]]:
        """``(dotted path, value)`` of what this module holds, a tied one under each of its
        paths; ``within``: the ids of the modules above this one on the path."""
        within = (*within, id(self))
        for name, value in self.named_children():
            yield from _walk_value(f"{prefix}{name}", value, within, name.startswith("_"))

    def named_tensors(self) -> Iterator[tuple[str, AnyTensor]]:
        """``(dotted path, tensor)`` for every parameter and buffer (state such as batch-norm
        running statistics), each once (a tied one at its first path). Two different values
        at one path (a dict with keys ``0`` and ``"0"``) raise ``ShapegradError``."""
        seen: set[int] = set()
        for path, value in self._walk(""):
            if isinstance(value, Tensor):
                tensor = cast(AnyTensor, value)
                if id(tensor) not in seen:
                    seen.add(id(tensor))
                    yield path, tensor

    def named_parameters(self, *, trainable_only: bool = False) -> Iterator[tuple[str, AnyTensor]]:
        """``(dotted path, parameter)`` pairs, such as ``("encoder.0.weight", tensor)``."""
        for path, tensor in self.named_tensors():
            info = tensor._param
            if info is not None and (info.trainable or not trainable_only):
                yield path, tensor

    def parameters(self, *, trainable_only: bool = False) -> list[AnyTensor]:
        """Every parameter (frozen ones too unless ``trainable_only``)."""
        return [t for _, t in self.named_parameters(trainable_only=trainable_only)]

    def num_parameters(self, *, trainable_only: bool = False) -> int:
        """The number of scalar parameters."""
        return sum(t.size for t in self.parameters(trainable_only=trainable_only))

    def modules(self) -> Iterator[Module]:
        """This module and every sub-module, each once (PyTorch's ``modules()``), as
        ``named_modules()`` without the paths.

        Examples:
            >>> import shapegrad as sg
            >>> mlp = sg.nn.Sequential(sg.nn.Linear(3, 4), sg.nn.ReLU(), sg.nn.Linear(4, 1))
            >>> [type(m).__name__ for m in mlp.modules()]
            ['Sequential', 'Linear', 'ReLU', 'Linear']
        """
        seen: set[int] = set()
        for _, module in self.named_modules():
            if id(module) not in seen:
                seen.add(id(module))
                yield module

    def named_modules(self) -> Iterator[tuple[str, Module]]:
        """``(dotted path, module)`` for this module (path ``""``) and every sub-module."""
        yield "", self
        for path, value in self._walk(""):
            if _is_module(value):
                yield path, value

    def _select(self, paths: tuple[str, ...]) -> list[AnyTensor]:
        named = dict(self.named_parameters())
        if not paths:
            return list(named.values())
        every = tensor_paths(self)
        chosen: list[AnyTensor] = []
        for path in paths:
            # Any of a parameter's paths: a tied weight (b.weight = a.weight) is b's too.
            matches = [t for t in named.values() if any(p == path or p.startswith(path + ".") for p in every[id(t)])]
            if not matches:
                raise ShapegradError(f"no parameter or sub-module at {path!r}; parameters: {', '.join(named)}")
            chosen.extend(matches)
        return chosen

    def freeze(self, *paths: str) -> Self:
        """Stop training the parameters at ``paths`` (dotted; a module path covers all of
        its parameters, a tied one included: any of a parameter's paths selects it), or all
        of them. Frozen parameters get no gradient buffer and no update, and are not
        reported as unused."""
        for tensor in self._select(paths):
            _param_info(tensor).trainable = False
        return self

    def unfreeze(self, *paths: str) -> Self:
        """Train the parameters at ``paths`` (or all of them) again."""
        for tensor in self._select(paths):
            _param_info(tensor).trainable = True
        return self

    # -- training ----------------------------------------------------------------------
    def alloc_grads(self) -> Gradients[Self]:
        """A ``Gradients[Self]`` with one preallocated buffer per trainable parameter.

        Allocate it once and call ``grads.zero()`` at the start of each step: the buffers
        are reused, so no step allocates parameter gradients.
        """
        return Gradients(model=self, parameters=list(self.named_parameters(trainable_only=True)))

    def to(self, backend: str | Any | None = None, *, dtype: str | None = None) -> Self:
        """Move every parameter and buffer to ``backend`` (``"cupy"``, ``"numpy"``, a Backend)
        and/or cast its floating-point ones to ``dtype`` (``"float64"``; integer buffers keep
        theirs, as PyTorch's), in place. Parameters stay parameters, under the same dotted
        paths but with new gradient slots: call ``alloc_grads()`` again (an older
        ``Gradients`` is refused by an optimizer with ``GradientsMismatchError``). Refused
        while an optimizer built for this model exists: its state lives in the old arrays, so
        build the optimizer after moving.

        Examples:
            >>> import shapegrad as sg
            >>> layer = sg.nn.Linear(2, 1).to("numpy")
            >>> layer.weight.backend
            'numpy'
            >>> layer.to(dtype="float64").weight.backend_dtype_name()
            'float64'
        """
        from .._backend import as_backend_array, resolve_backend

        if dtype is not None and not dtype.startswith("float"):
            raise DTypeError(
                f"{type(self).__name__}.to(dtype={dtype!r}): expected a floating-point dtype "
                "('float16', 'float32', 'float64'); integer buffers are never cast"
            )
        chosen = None if backend is None else resolve_backend(backend, f"{type(self).__name__}.to(backend)")
        live = [type(o).__name__ for o in self.__dict__.get("_optimizers", ())]
        if live:
            change = [repr(chosen.name)] if chosen is not None else []
            change += [f"dtype={dtype!r}"] if dtype is not None else []
            raise ShapegradError(
                f"{type(self).__name__}.to({', '.join(change)}) while an optimizer ({', '.join(live)}) exists for "
                "it: its state would stay in the old arrays. Move the model first, then build the optimizer again."
            )
        moves: list[tuple[AnyTensor, Any, Any]] = []
        for _, tensor in self.named_tensors():
            target = tensor._backend if chosen is None else chosen
            floating = tensor._backend.dtype_name(tensor._data.dtype).startswith("float")
            # its values (detach: a traced state tensor, a stateful RNN's self.h, moves as before)
            moves.append((tensor, target, as_backend_array(target, tensor.detach(), dtype if floating else None)))
        for tensor, target, data in moves:  # every copy made before the first change
            tensor._data, tensor._backend = data, target
            info = tensor._param
            if info is not None:
                make_parameter(tensor, info.trainable, info.out_in)
        return self

    def apply(self, fn: Callable[[Module], object]) -> Self:
        """Call ``fn`` on every sub-module, then on this one (PyTorch's order: children
        first), each once; returns this module. Used with ``sg.nn.init`` to initialise a
        model's layers by type.

        Examples:
            >>> import shapegrad as sg
            >>> def zero_biases(m: sg.nn.Module) -> None:
            ...     if isinstance(m, sg.nn.Linear) and m.bias is not None:
            ...         sg.nn.init.zeros_(m.bias)
            >>> mlp = sg.nn.Sequential(sg.nn.Linear(3, 4), sg.nn.ReLU(), sg.nn.Linear(4, 1))
            >>> mlp.apply(zero_biases)[2].bias.tolist()
            [0.0]
        """
        seen: set[int] = set()

        def visit(module: Module) -> None:
            if id(module) in seen:
                return
            seen.add(id(module))
            for _, value in module._walk(""):
                if _is_module(value) and id(value) not in seen:
                    visit(value)
            fn(module)

        visit(self)
        return self

    def state_dict(self) -> dict[str, np.ndarray[Any, Any]]:
        """``{dotted path: NumPy copy}`` of every parameter and buffer (batch-norm running
        statistics), as ``named_tensors()`` names them; ``load_state_dict`` takes it back.

        Examples:
            >>> import shapegrad as sg
            >>> sorted(sg.nn.BatchNorm1d(num_features=3).state_dict())
            ['bias', 'running_mean', 'running_var', 'weight']
        """
        from ._state import state_dict

        return state_dict(self)

    def load_state_dict(self, state: Mapping[str, Any], strict: bool = True) -> IncompatibleKeys:
        """Copy ``state`` (dotted path -> array, as ``state_dict()`` gives) into this model's
        parameters and buffers, in place.

        Every name (with ``strict``: none missing, none extra), shape and dtype is checked
        before the first copy; a ``CheckpointError`` names the first that does not fit and
        leaves the model unchanged. With ``strict=False`` names on one side only are skipped
        and returned, as PyTorch's ``(missing_keys, unexpected_keys)``.

        A PyTorch model's ``state_dict()`` goes to ``sg.nn.from_torch``: a torch tensor whose
        layout differs from ours (``Linear.weight``, transposed here) is refused, naming it.
        """
        from ._state import load_state_dict
        from ._torch import refuse_torch_layouts

        refuse_torch_layouts(self, state)
        return load_state_dict(self, state, strict, "load_state_dict")

    def torch_layout(self, name: str, array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """``array``, PyTorch's value for this module's own tensor ``name`` (``"weight"``),
        in this module's layout; ``sg.nn.from_torch`` calls it. The same layout: unchanged.
        Layers whose layout differs from PyTorch's override it (``Linear`` transposes its
        weight)."""
        return array

    def torch_unpack(self, name: str, array: np.ndarray[Any, Any], key: str) -> dict[str, np.ndarray[Any, Any]] | None:
        """PyTorch's tensor ``name`` of this module (a name that is no tensor of ours, such
        as ``MultiheadAttention``'s packed ``in_proj_weight``) as the tensors it holds:
        ``{our dotted name below this module: array in PyTorch's layout}``, each then given
        its own layer's ``torch_layout``. ``None``: not a name this module unpacks (the
        default). ``sg.nn.from_torch`` calls it for a key that names none of the model's
        tensors; ``key`` is the whole dotted key, for a ``CheckpointError`` naming what
        cannot be represented."""
        del name, array, key
        return None

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Raise ``CheckpointError`` if ``torch_module`` (the PyTorch module at this module's
        ``path``) is configured in a way its state dict does not show and this module cannot
        compute (``MultiheadAttention(add_zero_attn=True)``). ``sg.nn.from_torch`` calls it
        when given the PyTorch model itself. Nothing to check: the default."""
        del torch_module, path

    def train(self, mode: bool = True) -> Self:
        """Training mode (dropout active, batch norm uses and updates batch statistics)."""
        for _, module in self.named_modules():
            module.training = mode
        return self

    def eval(self) -> Self:
        """Evaluation mode (dropout off, batch norm uses its running statistics)."""
        return self.train(False)

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        clone = object.__new__(type(self))
        memo[id(self)] = clone
        for name, value in vars(self).items():
            if name != "_optimizers":  # a copy has no optimizer yet
                setattr(clone, name, copy.deepcopy(value, memo))
        return clone

    def __repr__(self) -> str:
        children = [f"  {n}: {type(v).__name__}" for n, v in self.named_children() if _is_module(v)]
        body = "\n" + "\n".join(children) + "\n" if children else ""
        return f"{type(self).__name__}({body})"


def _forward_is_not_called(self: Module, *args: Any, **kwargs: Any) -> NoReturn:
    """The ``__call__`` of a module that defines PyTorch's ``forward`` and no ``__call__``:
    a ``TypeError`` saying what to rename, where Python's said "'Net' object is not callable"."""
    name = type(self).__name__
    raise TypeError(
        f"'{name}' object is not callable: a shapegrad module runs __call__, not PyTorch's forward; "
        f"rename {name}.forward to __call__ (its annotations then type and check the calls)"
    )


_forward_is_not_called._shapegrad_checked = True  # pyright: ignore[reportFunctionMemberAccess] -- nothing to check
install_module_names(Module)


def _is_module(value: object) -> TypeIs[Module]:
    """``isinstance(value, Module)``, narrowing to ``Module[Any, Any]`` (a plain ``isinstance``
    of an ``Any`` value gives ``Module[Unknown, Unknown]``)."""
    return isinstance(value, Module)


def _holds_state(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is or holds (in lists, tuples and dicts) a module or a parameter:
    what makes a private attribute part of its module. A container is judged by its first
    item (a list of layers, not a private history of 200,000 losses read through at every
    optimizer step), and containers nested past a few levels (or holding themselves) are not."""
    if _is_module(value):
        return True
    if isinstance(value, Tensor):
        return cast(AnyTensor, value)._param is not None
    if depth > 3:
        return False
    if isinstance(value, (list, tuple)):
        items = cast(Sequence[Any], value)
        return len(items) > 0 and _holds_state(items[0], depth + 1)
    if isinstance(value, dict):
        entries = cast(dict[Any, Any], value)
        return len(entries) > 0 and _holds_state(next(iter(entries.values())), depth + 1)
    return False


def _walk_value(path: str, value: Any, within: tuple[int, ...], private: bool) -> Iterator[tuple[str, Any]]:
    if _is_module(value):
        if id(value) in within:
            # A back-reference (self._parent = parent) would never end here, and skipping it
            # would still make the parent part of the child: child.freeze() would freeze it.
            raise ShapegradError(
                f"the {type(value).__name__} at {path!r} is also a module above that path: a cycle (a back-reference "
                "such as self._parent = parent); expected a module to hold only its sub-modules: keep a reference to "
                "a parent as weakref.ref(parent), which is no part of a module"
            )
        yield path, value
        yield from value._walk(path + ".", within)
    elif isinstance(value, Tensor):
        if not private or cast(AnyTensor, value)._param is not None:  # a private plain tensor: a cache
            yield path, value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(cast(Sequence[Any], value)):
            yield from _walk_value(f"{path}.{i}", item, within, private)
    elif isinstance(value, dict):
        entries = cast(dict[Any, Any], value)
        names = [str(key) for key in entries]
        if len(set(names)) != len(names):
            # One name for two values (keys 0 and "0") would make state_dict keep one of them
            # and a strict load leave the other unloaded, silently. (The same value twice is
            # one tensor under one path.)
            held: dict[str, int] = {}
            for name, item in zip(names, entries.values(), strict=True):
                if held.setdefault(name, id(item)) != id(item):
                    raise ShapegradError(
                        f"two different values of the dict at {path!r} have the dotted path {path}.{name} "
                        "(keys equal as strings, such as 0 and '0'); expected keys that differ as strings"
                    )
        for name, item in zip(names, entries.values(), strict=True):
            yield from _walk_value(f"{path}.{name}", item, within, private)


def tensor_paths(model: Module) -> dict[int, list[str]]:
    """Every dotted path of each tensor ``model`` holds, by ``id``: a tied one has several,
    the first being the one ``named_tensors()`` gives."""
    paths: dict[int, list[str]] = {}
    for path, value in model._walk(""):
        if isinstance(value, Tensor):
            paths.setdefault(id(cast(AnyTensor, value)), []).append(path)
    return paths


def _param_info(tensor: AnyTensor) -> ParamInfo:
    info = tensor._param
    assert info is not None, "named_parameters yields parameters only"
    return info


class Chan(Generic[I]):
    """The kind of a layer's size that counts an image's channels (axis 1 of ``(B, C, H, W)``),
    as opposed to features (the last axis): ``Conv2d[L[1], L[8]]`` is a
    ``Layer[Chan[L[1]], Chan[L[8]]]``, ``Linear[L[392], L[10]]`` a ``Layer[L[392], L[10]]``. So
    ``Sequential`` refuses a convolution followed by a Linear without ``Flatten``, and a chain
    whose channels drift. Never instantiated."""


class ChanLayer(Generic[I, O]):
    """The channels reading of a layer that maps features and, equally, the channels of a
    ``(B, C, L)`` signal: ``BatchNorm1d[L[16]]`` is a ``Layer[L[16], L[16]]`` (after a
    ``Linear``) and a ``ChanLayer[Chan[L[16]], Chan[L[16]]]`` (after a ``Conv1d``).
    ``Sequential`` takes a layer as either, so the sizes still chain: a ``Conv1d`` to 16
    channels followed by ``BatchNorm1d[L[8]]`` stays a pyright error. (Pyright reads a class's
    type arguments from one base per generic class, hence a second class rather than a second
    ``Layer`` base.) Never instantiated on its own."""


class Layer(Module[Own0, Own1], Generic[I, O, Own0, Own1]):
    """A module mapping feature size ``I`` to ``O`` (Linear's in and out features, a
    convolution's channels); ``Sequential`` chains layers whose sizes agree.

    ``Linear[L[784], L[128]]()`` is both the static type and, at run time, where the layer
    learns its sizes; sizes that are ``sg.Dim`` classes are given as arguments instead.
    The last two type arguments are the layer's own (``Linear[I, O]`` is a
    ``Layer[I, O, I, O]``, ``Conv2d[I, O]`` a ``Layer[Chan[I], Chan[O], I, O]``): they are
    what ``isinstance`` narrowing reads (see :class:`Module`); written as ``Layer[I, O]``
    they are ``Any``.
    """

    _type_args: ClassVar[tuple[Any, ...]] = ()

    def __class_getitem__(cls, params: Any) -> Any:
        args: tuple[Any, ...] = params if isinstance(params, tuple) else (params,)  # pyright: ignore[reportUnknownVariableType] -- any type arguments
        return _sized(cls, args)

    @classmethod
    def _size_arg(cls, index: int, given: Any, name: str) -> int:
        type_arg = cls._type_args[index] if index < len(cls._type_args) else None
        from_type = literal_size(type_arg)
        if given is not None and not isinstance(given, int):  # a sg.Dim is an int; a float was truncated
            given = integer(cls.__name__, name, given)
        if (
            given is not None
            and isinstance(type_arg, type)
            and issubclass(type_arg, Dim)
            and not isinstance(given, type_arg)
        ):
            raise ShapeError(
                f"{cls.__name__}: {name}={given!r} is not a {type_arg.__name__} size; the type says "
                f"{type_arg.__name__}, so write {type_arg.__name__}({int(given)})"
            )
        if given is not None:
            if from_type is not None and from_type != given:
                raise ShapeError(f"{cls.__name__}: {name}={given} contradicts the type's {from_type}")
            return int(given)
        if from_type is None:
            raise ShapeError(
                f"{cls.__name__} needs its {name}: write the sizes as Literal types "
                f"({cls.__name__.split('[')[0]}[L[784], L[128]]()) or pass {name}= explicitly"
            )
        return from_type


@functools.cache
def _sized(cls: type[Layer[Any, Any]], args: tuple[Any, ...]) -> type[Layer[Any, Any]]:
    names = ", ".join(str(literal_size(a) if literal_size(a) is not None else getattr(a, "__name__", a)) for a in args)
    return type(f"{cls.__name__}[{names}]", (cls,), {"_type_args": args, "__module__": cls.__module__})
