"""The typed tensor: an array of one backend, plus the tape node that produced it.

``Tensor[Tape, *Dims]`` is what pyright checks (the tape first, covariant with ``NoTape``
as its bottom, then the dims, invariant); at run time the same subscription builds a jaxtyping check of those dims (see
``_annotations``), or, with ``SHAPEGRAD_CHECKS=0``, a plain generic alias.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    Literal as L,
    Never,
    NoReturn,
    TypeAlias,
    TypeVar,
    TypeVarTuple,
    cast,
    overload,
)

import numpy as np
from typing_extensions import deprecated

from . import _device_checks, _hooks, _tensor_ops
from ._autodiff import (
    Node,
    NoTape,
    OwnedTape,
    ParamInfo,
    Rule,
    Version,
    leaf_node,
    make_parameter,
    merge_tapes,
    new_leaf_key,
    note_written,
    record_binary_node,
    record_node,
    record_unary_node,
    run_backward,
    share_version,
    watch_reads,
)
from ._backend import Backend, active_backend, as_backend_array, bind_rule, bound_rules as _bound_rules, get_backend
from ._dims import Open
from ._errors import DTypeError, ShapeError, ShapegradError, TapeError
from ._inplace import install_in_place_operators
from ._no_grad import inside_no_grad
from ._shape import ShapeOf
from ._tensor_ops import TensorOps
from ._torch_names import install_torch_names, refuse_torch_keywords
from ._typevars import BM, Z0, Z1, Z2, Z3, K, M, N, S, T

if TYPE_CHECKING:
    from ._gradients import Gradients

__all__ = ["AnyTensor", "Tensor"]

# Covariant: an untraced tensor (``NoTape``, the bottom tape) is a tensor of any tape. The
# methods below name the receiver's tape by it, never by the ops' ``T``: in this class body
# ``T`` is also the transpose property, and an annotation's ``T`` resolves to the property
# (ty: anywhere in the class; mypy and Pyrefly: after the property), so the tape came out
# ``Unknown`` (``x.mT``, ``-x``, ``x.to(...)``). pyright reads the module's ``T`` there.
Tape_ = TypeVar("Tape_", covariant=True)
_REPR_VALUES = 16  # repr shows the values of tensors this small
Dims = TypeVarTuple("Dims")


class _ElementCount(int):
    """``x.size``: an int, the number of elements; called as PyTorch's ``x.size()`` or
    ``x.size(d)`` (its tensor's shape), a ``TypeError`` naming ``x.shape`` where Python's would
    say "'int' object is not callable"."""

    __slots__ = ()

    def __call__(self, dim: int | None = None) -> NoReturn:
        shape = "x.shape" if dim is None else f"x.shape[{dim!r}]"
        raise TypeError(
            f"x.size is the number of elements here ({int(self)}: NumPy's size, a property, no call); "
            f"PyTorch's x.size({'' if dim is None else repr(dim)}) is {shape}"
        )


# A fresh token each time an attribute of Tensor (or a subclass) is set or deleted after
# import: ``sg.Tensor.__add__ = patched`` and its restoring. A compiled step replays none of
# Tensor's methods, operators included, and checks this token once per call instead of each
# method's identity (see _compile_layout).
CLASS_WRITES: dict[str, object] = {"token": object()}


class _CountsClassWrites(type):
    """Tensor's metaclass: notes every write of a class attribute in :data:`CLASS_WRITES`."""

    def __setattr__(cls, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        CLASS_WRITES["token"] = object()

    def __delattr__(cls, name: str) -> None:
        super().__delattr__(name)
        CLASS_WRITES["token"] = object()


class Tensor(TensorOps[Tape_, *Dims], metaclass=_CountsClassWrites):
    """An n-dimensional array whose type carries its tape and its dims.

    ``Tensor[NoTape, Batch, L[784]]`` is an untraced batch of 784-vectors;
    ``Tensor[OwnedTape[MLP], Batch, L[10]]`` is traced, and its ``backward`` yields
    ``Gradients[MLP]``. Build tensors with :func:`shapegrad.tensor`, :func:`shapegrad.zeros`
    and friends; every op exists as a method and as a function (``x.exp()``, ``sg.exp(x)``).

    Examples:
        >>> import shapegrad as sg
        >>> x = sg.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> x
        Tensor([[1., 2.], [3., 4.]], shape=(2, 2), dtype=float32)
        >>> (x * 2).sum().item()
        20.0
    """

    __slots__ = ("_data", "_node", "_backend", "_param", "_version", "__weakref__")

    _data: Any
    _node: Node | None
    _backend: Backend
    _param: ParamInfo | None
    _version: Version | None

    def __init__(self, data: Any, *, backend: str | Backend | None = None) -> None:
        chosen = (
            active_backend() if backend is None else (get_backend(backend) if isinstance(backend, str) else backend)
        )
        self._data = as_backend_array(chosen, data, None)
        self._backend = chosen
        self._node = None
        self._param = None
        self._version = None

    def __class_getitem__(cls, params: Any) -> Any:
        # Pyright ignores this hook; at run time the subscription becomes a jaxtyping check
        # of the same dims and tape, so one annotation serves both checkers.
        if not _hooks.checks_enabled:
            plain: Any = getattr(super(), "__class_getitem__")  # Generic's own subscription
            return plain(params)
        from ._annotations import tensor_annotation

        args: tuple[Any, ...] = params if isinstance(params, tuple) else (params,)  # pyright: ignore[reportUnknownVariableType] -- any type arguments
        return tensor_annotation(args)

    # ----------------------------------------------------------------- basic facts
    if TYPE_CHECKING:
        shape = ShapeOf()
    else:  # a property at run time: a Python __get__ costs ~10 ns more per access

        @property
        def shape(self):
            """The size of each axis, typed by the dims where each is an int to the checker
            (``B, S, C = x.shape`` of a ``Tensor[T, Batch, Seq, L[32]]`` are ``Batch``,
            ``Seq``, ``L[32]``; see ``_shape``), else ``tuple[int, ...]``."""
            return tuple(self._data.shape)

    @property
    def dtype(self) -> Any:
        """The element type, as the backend spells it (``numpy.float32`` on NumPy)."""
        return self._data.dtype

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return self._data.ndim

    @property
    def size(self) -> int:
        """The number of elements (NumPy's ``size``; PyTorch's ``numel()``)."""
        size = 1
        for n in self._data.shape:
            size *= n
        return _ElementCount(size)

    def backend_dtype_name(self) -> str:
        """The dtype's canonical name (``"float32"``), the same on every backend."""
        return self._backend.dtype_name(self._data.dtype)

    @property
    def backend(self) -> str:
        """The name of the backend holding the data (``"numpy"``, ``"cupy"``, ...)."""
        return self._backend.name

    @property
    def traced(self) -> bool:
        """Whether ops on this tensor are recorded on a tape."""
        node = self._node
        return node is not None and node.tape is not None

    @property
    def data(self) -> Any:
        """The backend array itself (no copy, no tape)."""
        return self._data

    def numpy(self) -> np.ndarray[Any, np.dtype[Any]]:
        """The values as a NumPy array (a copy when the data lives on a device)."""
        if _device_checks.pending():
            _device_checks.flush()
        return np.asarray(self._backend.to_numpy(self._data))

    def item(self) -> float:
        """The single value of a one-element tensor, as a Python number."""
        if self.size != 1:
            raise ShapeError(f"item() expects a tensor with one element, found shape {self.shape}")
        return self.numpy().reshape(()).item()

    def tolist(self) -> Any:
        """The values as nested Python lists."""
        return self.numpy().tolist()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any:
        # Implicit conversion (np.asarray(t)) of a traced tensor would drop its tape, as
        # PyTorch refuses .numpy() on a tensor that requires grad. An untraced one gives a
        # read-only view (or a copy when asked): writing into it must not change a parameter.
        if self.traced:
            raise TapeError(
                f"implicit conversion of a traced tensor {self!r} to a NumPy array would drop its tape; "
                "expected an untraced tensor. Use t.detach().numpy() to read the values, or a shapegrad op "
                "to keep the gradient"
            )
        if not getattr(self._backend, "on_host", True):
            raise TypeError(
                f"implicit conversion of a {self._backend.name} tensor to a NumPy array would copy it from the "
                "device, which CuPy refuses too; use t.numpy() (explicit) for the values"
            )
        array = self.numpy()
        if dtype is not None and array.dtype != np.dtype(dtype):
            return array.astype(dtype)
        if copy:
            return array.copy()
        view = array.view()
        view.flags.writeable = False
        return view

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        # NumPy hands a Tensor operand to this hook (``ndarray * t``, ``np.float64(0.1) * t``,
        # ``np.exp(t)``). Arithmetic and comparisons become shapegrad ops, so the result is a
        # Tensor that keeps the tape, as in PyTorch; any other ufunc on a traced tensor would
        # silently make a constant of it, so it is refused.
        if method == "__call__" and not kwargs and len(inputs) == 2:
            op = _ew.UFUNC_OPS.get(ufunc.__name__)
            if op is not None:
                return op(*inputs)
        for value in (*inputs, *kwargs.get("out", ())):
            if isinstance(value, Tensor) and cast(AnyTensor, value).traced:
                raise TapeError(
                    f"numpy.{ufunc.__name__} on a traced tensor would drop its tape (the result would be "
                    f"a constant with no gradient); use the shapegrad op (sg.{ufunc.__name__}(x)) instead, "
                    "or .detach() first if no gradient is wanted"
                )
        host = [
            np.asarray(cast(AnyTensor, v)) if isinstance(v, Tensor) else v for v in inputs
        ]  # refuses device tensors
        return getattr(ufunc, method)(*host, **kwargs)

    def __iter__(self: Tensor[Tape_, N, *S]) -> Iterator[Tensor[Tape_, *S]]:
        """The sub-tensors along the first axis (each traced when this one is)."""
        for i in range(len(self)):
            yield self[i]

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a rank-0 tensor")
        return self._data.shape[0]

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ShapeError(
                f"the truth value of a tensor with shape {self.shape} is ambiguous; "
                "expected a one-element tensor (use .any() or .all() on comparisons)"
            )
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __format__(self, spec: str) -> str:
        # f"{loss:.4f}" formats a one-element tensor's value; other tensors format as repr.
        if self.size == 1:
            return format(self.item(), spec)
        if spec:
            raise TypeError(f"format spec {spec!r} needs a one-element tensor, found shape {self.shape}")
        return repr(self)

    # -- DLPack: zero-copy exchange with NumPy, PyTorch, CuPy, JAX -------------------------
    def __dlpack__(self, **kwargs: Any) -> Any:
        if self.traced:
            raise TapeError(
                f"DLPack export of a traced tensor {self!r} would drop its tape (as PyTorch refuses to export a "
                "tensor that requires grad); expected an untraced tensor: export t.detach()"
            )
        return self._exportable().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self._exportable().__dlpack_device__()

    def _exportable(self) -> Any:
        # What DLPack exports: a rank-0 result's NumPy scalar as a 0-d array (a scalar has no
        # __dlpack__), and a view with a negative stride as a copy (PyTorch's importer aborts
        # the process on one).
        data = self._data
        xp = self._backend.xp
        if not hasattr(data, "__dlpack__"):
            return xp.asarray(data)
        if any(step < 0 for step in getattr(data, "strides", None) or ()):
            return xp.asarray(data, copy=True)
        return data

    def __setitem__(self, index: Any, value: Any) -> None:
        # In-place writes are for untraced data (a buffer being filled); on a traced tensor
        # they would silently change what its backward pass saved.
        if self.traced:
            raise TapeError(
                f"in-place assignment into a traced tensor {self!r} would corrupt its gradient; expected an "
                "untraced tensor. Use the functional update x.at[index].set(value) (or .add(value))"
            )
        if isinstance(value, Tensor):
            source = cast(AnyTensor, value)
            node, param = source._node, source._param
            if (
                self._param is None
                and ((node is not None and node.wants) or (param is not None and param.trainable))
                and not inside_no_grad()
            ):
                # Copying the numbers would cut the gradient path with no error (PyTorch
                # records the copy instead). A parameter written is an update: no path wanted.
                raise TapeError(
                    f"x[index] = value copies the numbers of {source!r}, which carries a gradient "
                    "(traced, or computed from parameters), and the gradient would stop there; expected "
                    "an untraced value. Use x = x.at[index].set(value) (differentiable), value.detach() "
                    "to copy the numbers alone, or `with sg.no_grad():` around the copy"
                )
            raw = source._data
        else:
            raw = value
        try:
            self._data = _index.assign_into(self, _index.raw_index(index, self), raw)
        except ValueError as error:
            if "read-only" not in str(error):
                raise
            raise ShapegradError(
                f"x[index] = value (or x += y) writes into the memory of {self!r}, which is read-only (a "
                "broadcast view, such as broadcast_to's result, or a read-only array such as a memory "
                "map's); expected writable memory. Write x = x + y (a new tensor) instead"
            ) from None
        # A backward pass through values an op saved from this memory would now be wrong.
        note_written(self)

    @property
    def at(self: Tensor[Tape_, *S]) -> _At[Tape_, *S]:
        """Functional updates, as JAX: ``x.at[idx].set(v)`` and ``x.at[idx].add(v)`` return a
        new tensor, differentiable in both ``x`` and ``v``; ``x`` is not changed.

        Examples:
            >>> import shapegrad as sg
            >>> x = sg.zeros(3)
            >>> x.at[1].set(5.0).tolist(), x.tolist()
            ([0.0, 5.0, 0.0], [0.0, 0.0, 0.0])
        """
        return _At(self)

    def _describe(self, values: str) -> str:
        dtype = self._backend.dtype_name(self._data.dtype)
        traced = ", traced" if self.traced else ""
        backend = "" if self._backend.name == "numpy" else f", backend={self._backend.name}"
        return f"Tensor({values}shape={self.shape}, dtype={dtype}{backend}{traced})"

    def _values(self, threshold: int) -> str:
        # On a device this reads the values back: only where a person asked to see them.
        array = np.asarray(self._backend.to_numpy(self._data))
        text = np.array2string(array, separator=", ", threshold=threshold, edgeitems=3, precision=4)
        return " ".join(text.split()) + ", "

    def __repr__(self) -> str:
        # Short, as jaxtyping and shapegrad's errors print it: values only for a few elements.
        return self._describe(self._values(16) if self.size <= _REPR_VALUES else "")

    def __str__(self) -> str:
        """``print(t)``: the values (NumPy's summary for large tensors), shape, dtype, tape."""
        return self._describe(self._values(1000))

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor[Tape_, *Dims]:
        # A copy owns new storage and, when this is a parameter, a new gradient key: a
        # copied model must never deliver gradients into the original's slots.
        clone = _wrap(self._backend.xp.asarray(self._data, copy=True), None, self._backend)
        if self._param is not None:
            make_parameter(clone, self._param.trainable, self._param.out_in)
        memo[id(self)] = clone
        return clone

    def __reduce__(self) -> Any:
        raise TypeError("Tensors are not pickled; save models with sg.save(model, path)")

    # ----------------------------------------------------------------- tracing
    def trace(
        self: Tensor[NoTape, *S], grads: Gradients[M], *also: Gradients[Any], keep_grad: bool | None = None
    ) -> Tensor[OwnedTape[M], *S]:
        """This tensor, traced onto the tape behind ``grads`` (and behind ``also``).

        Tracing several inputs with one ``grads`` puts them on one tape. A parameter traced
        this way delivers its gradient into its slot in ``grads``. Any other tensor becomes
        a leaf whose gradient ``grads[traced]`` returns after ``backward`` when
        ``keep_grad`` is true, which is the default for free-standing ``sg.Gradients()``.
        With a model's ``Gradients`` (``model.alloc_grads()``) an input only carries the
        tape by default, as PyTorch inputs do not require grad: no time is spent on its
        gradient; pass ``keep_grad=True`` to get it (saliency, adversarial examples).
        Integer tensors (token ids) carry the tape but never receive a gradient.

        Two models chained, each with its own ``Gradients`` and optimizer (an encoder and a
        decoder, a GAN's generator and discriminator): trace the input with both,
        ``x.trace(g_enc, g_dec)``; one backward pass then fills each model's buffers.

        Examples:
            >>> import shapegrad as sg
            >>> grads = sg.Gradients()
            >>> x = sg.tensor([1.0, 2.0]).trace(grads)
            >>> _ = (x * x).sum().backward()
            >>> grads[x].tolist()
            [2.0, 4.0]
        """
        if self.traced:
            raise TapeError("trace() expects an untraced tensor, found one already traced; use .detach() first")
        if self._node is not None and self._param is None:
            # Computed from parameters (w.T, an embedding's rows): a leaf of its own would cut
            # the path its gradient takes back to them, with no error.
            raise TapeError(
                "trace() expects an input, found a tensor computed from parameters (such as m.weight.T): "
                "tracing it would make it a leaf of its own and its gradient would not reach the "
                "parameters. Use it as it is (it joins the tape of the traced tensors it meets), trace "
                "the parameter before the op (m.weight.trace(grads).T), or .detach().trace(grads) for "
                "a leaf of its own"
            )
        dtype_name = self._backend.dtype_name(self._data.dtype)
        if not dtype_name.startswith(("float", "int", "uint")):
            raise DTypeError(
                f"trace() expects a floating-point tensor (or integer indices, which carry the "
                f"tape without receiving a gradient), found dtype {dtype_name}"
            )
        tape = grads._recording_tape()
        for other in also:
            tape = merge_tapes(tape, other._recording_tape())
        param = self._param
        if param is not None:
            node = leaf_node(self, tape, param.key)
        else:
            keep = grads.model is None if keep_grad is None else keep_grad
            if not dtype_name.startswith("float"):
                keep = False  # integer ids carry the tape only
            node = leaf_node(self, tape, new_leaf_key(), wants=keep)
        traced = _wrap(self._data, node, self._backend)
        share_version(self, traced)  # the same memory: a write into self is a write into it
        return traced

    def detach(self: Tensor[Any, *S]) -> Tensor[NoTape, *S]:
        """The same values, untraced: ops on the result record nothing. It shares this
        tensor's memory, so a write into it is seen by a backward pass that saved this one."""
        detached = _wrap(self._data, None, self._backend)
        share_version(self, detached)
        return detached

    # First: an untraced tensor (the bottom tape) fits every overload below, so it is caught
    # here, and strict mode reports the deprecation as an error (it raises TapeError). Not
    # ``-> Never``: mypy types a call no overload matches (a join of two models' tapes) by
    # the first overload, and a ``Never`` there left the rest of the function unchecked.
    @overload
    @deprecated("backward() of an untraced tensor: trace an input first (x.trace(grads)) so that ops record a tape")
    def backward(self: Tensor[NoTape, *S], seed: Any = None, *, retain: bool = False) -> Gradients[Any]: ...
    @overload
    def backward(self: Tensor[OwnedTape[BM]], *, retain: bool = False) -> Gradients[BM]: ...
    # An open rank may be rank 0 (``sg.einsum("bh,bh->", q, k)``): the run time checks it.
    @overload
    def backward(self: Tensor[OwnedTape[BM], *tuple[Open, ...]], *, retain: bool = False) -> Gradients[BM]: ...
    @overload
    def backward(
        self: Tensor[OwnedTape[BM], *tuple[Any, ...]], seed: Any, *, retain: bool = False
    ) -> Gradients[BM]: ...
    # Last: only a traced tensor of rank > 0 without a seed gets here, and reads our text
    # instead of a bare "Argument missing for parameter seed" (strict mode reports it).
    @overload
    @deprecated(
        "backward() without a seed starts from a rank-0 tensor (a loss): reduce this one first "
        "(.sum(), .mean()), or pass seed=, the gradient of a scalar with respect to it"
    )
    def backward(self: Tensor[OwnedTape[BM], *tuple[Any, ...]], *, retain: bool = False) -> Gradients[BM]: ...
    def backward(self, seed: Any = None, *, retain: bool = False) -> Any:
        """Reverse pass from this rank-0 tensor (any rank with a ``seed``, the gradient of
        some scalar with respect to this tensor); returns the ``Gradients`` it fills.

        Calling it on several outputs in turn accumulates into the same ``Gradients``; for
        one pass over several outputs use :func:`shapegrad.backward`. A second call on the
        same output raises ``TapeError`` (the gradients would double) unless one of the calls
        passes ``retain=True``.
        """
        run: Any = backward  # the overloads below are the types
        return run(self, seeds=None if seed is None else (seed,), retain=retain)

    def to(self: Tensor[Tape_, *S], backend: str | Backend) -> Tensor[Tape_, *S]:
        """The same values on another backend (``"numpy"``, ``"cupy"``); the tape is kept,
        so gradients flow back across the move."""
        from .ops.movement import to_backend

        return to_backend(self, backend)

    # ----------------------------------------------------------------- element-wise

    def __neg__(self: Tensor[Tape_, *S]) -> Tensor[Tape_, *S]:
        return _ew.neg(self)

    def __invert__(self: Tensor[Any, *S]) -> Tensor[NoTape, *S]:
        """``~x``: logical not of a boolean tensor (``~causal``), bitwise not of an integer one;
        floats are refused (``sg.bitwise_not``). Untraced, as PyTorch's."""
        return _ew.bitwise_not(self)

    @property
    def T(self: Tensor[Tape_, N, K]) -> Tensor[Tape_, K, N]:
        """The transpose of a 2-D tensor (PyTorch's ``.T``); ``.mT`` for batches of matrices."""
        if self.ndim != 2:
            raise ShapeError(f".T expects a 2-D tensor, found shape {self.shape}; use .mT or .permute(...)")
        return _shape.swap_last(self)

    @overload
    def any(self) -> bool: ...
    @overload
    def any(self: Tensor[Any, *S, N], axis: L[-1], keepdims: L[False] = False) -> Tensor[NoTape, *S]: ...
    @overload
    def any(self, axis: int, keepdims: bool = False) -> Tensor[NoTape, *tuple[Open, ...]]: ...
    def any(self, axis: int | None = None, keepdims: bool = False, **torch_keywords: Any) -> Any:
        """Whether any element is true (non-zero): a Python bool; along ``axis`` (PyTorch's
        ``x.any(dim=...)``), untraced booleans (``sg.any``)."""
        if torch_keywords:
            refuse_torch_keywords("any", torch_keywords)
        if axis is None and not keepdims:
            return bool(self._backend.xp.any(self._data))
        return _red.any(self, axis, keepdims)

    @overload
    def all(self) -> bool: ...
    @overload
    def all(self: Tensor[Any, *S, N], axis: L[-1], keepdims: L[False] = False) -> Tensor[NoTape, *S]: ...
    @overload
    def all(self, axis: int, keepdims: bool = False) -> Tensor[NoTape, *tuple[Open, ...]]: ...
    def all(self, axis: int | None = None, keepdims: bool = False, **torch_keywords: Any) -> Any:
        """Whether every element is true (non-zero): a Python bool; along ``axis`` (PyTorch's
        ``x.all(dim=...)``), untraced booleans (``sg.all``)."""
        if torch_keywords:
            refuse_torch_keywords("all", torch_keywords)
        if axis is None and not keepdims:
            return bool(self._backend.xp.all(self._data))
        return _red.all(self, axis, keepdims)

    # ----------------------------------------------------------------- shape
    @property
    def mT(self: Tensor[Tape_, *S, N, K]) -> Tensor[Tape_, *S, K, N]:
        """The last two axes swapped (a batch of matrices transposed)."""
        return _shape.swap_last(self)

    # Sizes that are sg.Dim instances or literals keep their types, as reshape's do
    # (``start.broadcast_to(b, 32)`` with ``b, _ = x.shape``); any plain int gives an open rank.
    @overload
    def broadcast_to(self: Tensor[Tape_, *S], d0: Z0, /) -> Tensor[Tape_, Z0]: ...  # pyright: ignore[reportOverlappingOverload] -- the typed case goes first, the open fallback last
    @overload
    def broadcast_to(self: Tensor[Tape_, *S], d0: Z0, d1: Z1, /) -> Tensor[Tape_, Z0, Z1]: ...
    @overload
    def broadcast_to(self: Tensor[Tape_, *S], d0: Z0, d1: Z1, d2: Z2, /) -> Tensor[Tape_, Z0, Z1, Z2]: ...
    @overload
    def broadcast_to(self: Tensor[Tape_, *S], d0: Z0, d1: Z1, d2: Z2, d3: Z3, /) -> Tensor[Tape_, Z0, Z1, Z2, Z3]: ...
    @overload
    def broadcast_to(self: Tensor[Tape_, *S], shape: tuple[Z0], /) -> Tensor[Tape_, Z0]: ...  # pyright: ignore[reportOverlappingOverload] -- the typed case goes first, the open fallback last
    @overload
    def broadcast_to(self: Tensor[Tape_, *S], shape: tuple[Z0, Z1], /) -> Tensor[Tape_, Z0, Z1]: ...
    @overload
    def broadcast_to(self: Tensor[Tape_, *S], shape: tuple[Z0, Z1, Z2], /) -> Tensor[Tape_, Z0, Z1, Z2]: ...
    @overload
    def broadcast_to(self: Tensor[Tape_, *S], shape: tuple[Z0, Z1, Z2, Z3], /) -> Tensor[Tape_, Z0, Z1, Z2, Z3]: ...
    @overload
    def broadcast_to(self: Tensor[Tape_, *S], shape: Sequence[int], /) -> Tensor[Tape_, *tuple[Open, ...]]: ...
    @overload
    def broadcast_to(self: Tensor[Tape_, *S], *shape: int) -> Tensor[Tape_, *tuple[Open, ...]]: ...
    def broadcast_to(self: Tensor[Tape_, *S], *shape: Any) -> Tensor[Tape_, *tuple[Any, ...]]:
        """The values repeated along new or size-1 axes to ``shape`` (sizes, or one tuple:
        ``x.broadcast_to(4, 3)``, ``x.broadcast_to((4, 3))``, as ``Tensor.expand``). Sizes
        that are ``sg.Dim`` instances or literals keep their types."""
        return _shape.broadcast_to(self, shape)

    def take_along_axis(
        self: Tensor[Tape_, *S, N], indices: Tensor[Any, *S, K], axis: L[-1] = -1, **torch_keywords: Never
    ) -> Tensor[Tape_, *S, K]:
        """Values picked along the last axis: ``out[..., j] = x[..., indices[..., j]]``."""
        if torch_keywords:
            refuse_torch_keywords("take_along_axis", torch_keywords)
        return _index.take_along_axis(self, indices, axis)


# x += y and the other augmented assignments, as PyTorch's (see _inplace): set on the class
# at run time only, so the checkers check x += y as x = x + y, the same shape rule.
install_in_place_operators(Tensor)
# PyTorch's spellings shapegrad spells otherwise (x.view, x.unsqueeze, x.float(), x.add_): an
# AttributeError that names ours (see _torch_names), at run time only, so pyright still reports
# them as unknown attributes.
install_torch_names(Tensor)


class _At(Generic[Tape_, *Dims]):
    """``x.at``: index it to get an :class:`_AtIndex` with ``set`` and ``add``."""

    __slots__ = ("_tensor",)

    def __init__(self, tensor: Tensor[Tape_, *Dims]) -> None:
        self._tensor = tensor

    @overload
    def __getitem__(self: _At[T, N, K, *S], index: int | Tensor[Any, Any]) -> _AtRows[T, N, K, *S]: ...
    @overload
    def __getitem__(self, index: Any) -> _AtIndex[Tape_, *Dims]: ...
    def __getitem__(self, index: Any) -> Any:
        return _AtIndex[Any, *tuple[Any, ...]](self._tensor, index)  # _AtRows: its type only


class _AtIndex(Generic[Tape_, *Dims]):
    """``x.at[index]``: ``.set(v)`` / ``.add(v)`` give updated copies of ``x``, traced when
    ``x`` or ``v`` is (an untraced ``x``, a traced ``v``: the GNN's scatter-add
    ``sg.zeros(n, d).at[dst].add(messages)``)."""

    __slots__ = ("_tensor", "_index")

    def __init__(self, tensor: AnyTensor, index: Any) -> None:
        self._tensor, self._index = tensor, index

    # The overloads: a number keeps ``x``'s tape; an untraced ``x`` takes ``v``'s tape (first:
    # pyright solves a tape variable from an untraced receiver to ``Never`` and does not widen
    # it to a caller's tape variable, see ``_typegen.UNTRACED_FIRST``); else the join of both.
    @overload
    def set(self, value: float) -> Tensor[Tape_, *Dims]: ...
    @overload
    def set(self: _AtIndex[NoTape, *S], value: Tensor[T, *tuple[Any, ...]]) -> Tensor[T, *S]: ...
    @overload
    def set(self: _AtIndex[T, *S], value: Tensor[T, *tuple[Any, ...]]) -> Tensor[T, *S]: ...
    def set(self, value: Any) -> Any:
        """A copy of ``x`` with ``value`` at ``index``; the gradient of ``x`` is 0 there."""
        return _index.update_at(self._tensor, self._index, value, add=False)

    @overload
    def add(self, value: float) -> Tensor[Tape_, *Dims]: ...
    @overload
    def add(self: _AtIndex[NoTape, *S], value: Tensor[T, *tuple[Any, ...]]) -> Tensor[T, *S]: ...
    @overload
    def add(self: _AtIndex[T, *S], value: Tensor[T, *tuple[Any, ...]]) -> Tensor[T, *S]: ...
    def add(self, value: Any) -> Any:
        """A copy of ``x`` with ``value`` added at ``index`` (repeated indices add once
        each, as in JAX)."""
        return _index.update_at(self._tensor, self._index, value, add=True)


if TYPE_CHECKING:
    # What x.at[rows] takes (see _AtRows).
    _RowValue: TypeAlias = (
        Tensor[T, *tuple[Any, ...], N]
        | Tensor[T, *tuple[Any, ...], L[1]]
        | Tensor[T, *tuple[Any, ...], Open]
        | Tensor[T]
        | Tensor[T, *tuple[Open, ...]]
    )

    class _AtRows(Generic[Tape_, *Dims]):
        """``x.at[rows]`` (an int or a vector of indices into axis 0 of a tensor of rank 2 or
        more), seen by the type checker only (the run time's is an :class:`_AtIndex`):
        ``set``/``add`` with the value's last axis checked against ``x``'s
        (``sg.zeros(n, 16).at[dst].add(m[:, :3])`` is an error). It takes a value whose last
        axis is ``x``'s, 1 or ``Open``, a rank-0 tensor, an open rank or a number; the rest is
        checked at run time."""

        @overload
        def set(self, value: float) -> Tensor[Tape_, *Dims]: ...
        @overload
        def set(self: _AtRows[NoTape, *S, N], value: _RowValue[T, N]) -> Tensor[T, *S, N]: ...
        @overload
        def set(self: _AtRows[T, *S, N], value: _RowValue[T, N]) -> Tensor[T, *S, N]: ...
        def set(self, value: Any) -> Any: ...
        @overload
        def add(self, value: float) -> Tensor[Tape_, *Dims]: ...
        @overload
        def add(self: _AtRows[NoTape, *S, N], value: _RowValue[T, N]) -> Tensor[T, *S, N]: ...
        @overload
        def add(self: _AtRows[T, *S, N], value: _RowValue[T, N]) -> Tensor[T, *S, N]: ...
        def add(self, value: Any) -> Any: ...


AnyTensor: TypeAlias = Tensor[Any, *tuple[Any, ...]]
"""A tensor of any tape and any dims (for code that does not check shapes)."""


_new: Callable[[type], Any] = object.__new__


def _wrap(data: Any, node: Node | None, backend: Backend) -> Any:
    tensor: AnyTensor = _new(Tensor)
    tensor._data = data
    tensor._node = node
    tensor._backend = backend
    tensor._param = None
    tensor._version = None
    return tensor


def wrap(data: Any, backend: Backend) -> Any:
    """An untraced tensor around a backend array (no copy)."""
    return _wrap(data, None, backend)


def record(
    data: Any,
    rule: Rule,
    inputs: Sequence[AnyTensor],
    saved: tuple[Any, ...],
    backend: Backend,
    reads: tuple[bool, ...] | None = None,
    watch: tuple[AnyTensor, ...] = (),
) -> Any:
    """The op's result as a tensor, recorded by the engine (:func:`shapegrad._autodiff.record_node`)
    when any input needs a gradient. This is the one place every op is recorded, and where a
    backend's fused kernel for the op's rule (same name) takes the rule's place. ``reads``
    (one flag per input, then one for the result) says whose memory the rule reads, where
    that is less than what ``saved`` holds: later writes into those are detected. ``watch``:
    tensors the rule reads through a view or as no input (``where``'s condition, a gather's
    indices, cross-entropy's labels), whose later writes are detected too."""
    for tensor in inputs:
        if tensor._node is not None or tensor._param is not None:
            return record_traced(data, rule, inputs, saved, backend, reads, watch)
    return untraced_result(data, rule, inputs, backend)


def untraced_result(data: Any, rule: Rule, inputs: Sequence[AnyTensor], backend: Backend) -> Any:
    """:func:`record` where no input has a node or a parameter (the caller knows): nothing to
    record, the anomaly detector told, a view's write counter shared with its source."""
    hook = _hooks.anomaly
    if hook is not None:
        hook.forward(rule, inputs, data)
    result: AnyTensor = _new(Tensor)
    result._data = data
    result._node = None
    result._backend = backend
    result._param = None
    result._version = None
    if getattr(data, "base", None) is not None:
        share_view(data, inputs, result)
    return result


def record_traced(
    data: Any,
    rule: Rule,
    inputs: Sequence[AnyTensor],
    saved: tuple[Any, ...],
    backend: Backend,
    reads: tuple[bool, ...] | None = None,
    watch: tuple[AnyTensor, ...] = (),
) -> Any:
    """:func:`record` where some input has a node or a parameter (the caller knows)."""
    untraced = _hooks.untraced
    if untraced is not None and untraced.depth:  # inside_no_grad(), written out: every traced op asks
        return untraced_result(data, rule, inputs, backend)
    result: AnyTensor = _new(Tensor)
    result._data = data
    result._backend = backend
    result._param = None
    result._version = None
    # The rule as the node will hold it (a backend's fused kernel in its place): bind_rule's
    # cache read inline, bind_rule itself on a miss and while sg.compile records.
    bound: Rule
    if _hooks.recorder is None:
        try:
            bound = _bound_rules[backend][rule][data.dtype]
        except KeyError:
            bound = bind_rule(backend, rule, data.dtype)
    else:
        bound = bind_rule(backend, rule, data.dtype)
    count = len(inputs)
    if count == 2 and reads is not None:
        node = record_binary_node(data, bound, inputs[0], inputs[1], saved, backend.xp, reads, result)
    elif count == 1 and reads is None:
        node = record_unary_node(data, bound, inputs[0], saved, backend.xp, result)
    else:
        node = record_node(data, bound, inputs, saved, backend.xp, reads, result)
    if watch and node is not None and node.wants:
        watch_reads(node, watch)
    result._node = node
    hook = _hooks.anomaly
    if hook is not None:
        hook.forward(rule, inputs, data, node) if node is not None else hook.forward(rule, inputs, data)
    if getattr(data, "base", None) is not None:
        share_view(data, inputs, result)
    return result


def share_view(data: Any, inputs: Sequence[AnyTensor], result: AnyTensor) -> None:
    # A view (reshape, slice, transpose): writes through it or its source are one count.
    base = data.base
    for tensor in inputs:
        source = tensor._data
        if source is base or getattr(source, "base", None) is base:
            share_version(tensor, result)
            break


# -- the reverse pass's entry ----------------------------------------------------------------
# First: untraced outputs (the bottom tape) fit the overloads below; strict mode reports this
# one (its result type: as the method's, not ``Never``, which mypy leaves the rest unchecked by).
@overload
@deprecated("backward() of untraced tensors: trace an input first (x.trace(grads)) so that ops record a tape")
def backward(
    *outputs: Tensor[NoTape, *tuple[Any, ...]], seeds: Sequence[Any] | None = None, retain: bool = False
) -> Gradients[Any]: ...
@overload
def backward(*outputs: Tensor[OwnedTape[BM]], retain: bool = False) -> Gradients[BM]: ...
@overload
def backward(
    *outputs: Tensor[OwnedTape[BM], *tuple[Any, ...]], seeds: Sequence[Any], retain: bool = False
) -> Gradients[BM]: ...
@overload
@deprecated(  # last: only an output of rank > 0 without seeds gets here (pyright: a literal text)
    "sg.backward() without seeds starts from rank-0 outputs (losses): reduce each one first "
    "(.sum(), .mean()), or pass seeds=[...], one gradient per output (None for a rank-0 one)"
)
def backward(*outputs: Tensor[OwnedTape[BM], *tuple[Any, ...]], retain: bool = False) -> Gradients[BM]: ...
def backward(
    *outputs: Tensor[OwnedTape[M], *tuple[Any, ...]], seeds: Sequence[Any] | None = None, retain: bool = False
) -> Gradients[M]:
    """One reverse pass from several outputs of one traced computation (rank 0 unless
    ``seeds`` are given: the type says so too).

    Rank-0 outputs are seeded with 1; give ``seeds`` (one per output, ``None`` for 1) for
    outputs of other shapes. Equivalent to ``backward`` of the sum of the outputs, in one
    pass. Returns the ``Gradients`` the outputs' tape delivers to.

    One backward pass per output: a second from the same output raises ``TapeError`` (it
    would add the same gradients again) unless either pass says ``retain=True``. Passes
    from different outputs of one graph accumulate. A backward pass into a ``Gradients``
    an optimizer update has used raises until ``grads.zero()``.

    Examples:
        >>> import shapegrad as sg
        >>> grads = sg.Gradients()
        >>> x = sg.tensor(3.0).trace(grads)
        >>> _ = sg.backward(x * x, x * 2)
        >>> grads[x].item()
        8.0
    """
    _device_checks.flush()
    if not outputs:
        raise TapeError("backward expects at least one output, found none")
    if seeds is not None and len(seeds) != len(outputs):
        raise TapeError(f"backward got {len(outputs)} outputs but {len(seeds)} seeds; expected one seed per output")
    roots = traced_roots(outputs, seeds)
    hook = _hooks.anomaly
    tape = run_backward(roots, None if hook is None else hook.backward, retain)
    first: Any = tape.sinks[0]  # a Gradients: the only sink there is
    return first


# What a NumPy-backed floating result holds, a rank-0 one a NumPy scalar too (the exact types:
# sg.compile's recording subclass is not one of them).
NUMPY_FLOAT_RESULTS = frozenset({np.ndarray, np.float16, np.float32, np.float64})


def traced_roots(outputs: Sequence[AnyTensor], seeds: Sequence[Any] | None) -> list[tuple[Node, Any]]:
    """Validate the outputs of a backward pass and pair each node with its seed."""
    roots: list[tuple[Node, Any]] = []
    for i, out in enumerate(outputs):
        node = out._node
        if node is None or node.tape is None:
            raise TapeError(
                f"backward expects traced outputs, found output {i} untraced; "
                "trace an input with x.trace(grads) before the ops"
            )
        xp = out._backend.xp
        data = out._data
        if seeds is None or seeds[i] is None:
            if data.ndim != 0:
                raise TapeError(
                    f"backward without a seed expects a rank-0 (scalar) output, found output {i} "
                    f"with shape {tuple(data.shape)}; reduce it (.sum(), .mean()) or pass a seed "
                    "of that shape"
                )
            # a loss is a NumPy scalar or 0-d array: np.array(1, dtype) is 8× np.ones_like
            seed = np.array(1, data.dtype) if type(data) in NUMPY_FLOAT_RESULTS else xp.ones_like(data)
        else:
            raw = seeds[i]
            seed = (
                raw._data if isinstance(raw, Tensor) else out._backend.asarray(raw, out._backend.dtype_name(data.dtype))
            )
            if tuple(seed.shape) != tuple(data.shape):
                raise ShapeError(f"seed for output {i} expected shape {tuple(data.shape)}, found {tuple(seed.shape)}")
            if seed.dtype != data.dtype:
                seed = xp.astype(seed, data.dtype)
            else:  # a leaf's gradient may view the seed (reshape's, sum's): not the caller's memory
                seed = xp.asarray(seed, copy=True)
        roots.append((node, seed))
    return roots


# -- the library's view of a tensor ---------------------------------------------------------
# The optimizers, checkpoints and `distributed` read a tensor's storage through these three,
# not its underscore fields (reportPrivateUsage is on in those modules).


def array_of(tensor: AnyTensor) -> Any:
    """The backend array a tensor wraps (no copy): the storage an optimizer writes into."""
    return tensor._data


def backend_of(tensor: AnyTensor) -> Backend:
    """The backend a tensor's array belongs to."""
    return tensor._backend


def parameter_info(tensor: AnyTensor) -> ParamInfo | None:
    """What makes ``tensor`` a parameter (its gradient key, leaf, counter), or None."""
    return tensor._param


__all__ += [
    "array_of",
    "backend_of",
    "backward",
    "parameter_info",
    "record",
    "record_traced",
    "traced_roots",
    "untraced_result",
    "wrap",
]

# The op modules import Tensor; importing them last keeps the cycle harmless (the one cycle
# there is: _tensor <-> ops, see shapegrad/ops/README.md).
from .ops import (  # noqa: E402
    activations as _act,
    creation as _creation,
    elementwise as _ew,
    indexing as _index,
    linalg as _linalg,
    math as _math,
    order as _order,
    reductions as _red,
    shape as _shape,
)

# Untyped handles on the function forms, for the generated method bodies (_tensor_ops.py):
# their overloads are the types, and going through these costs nothing per operator call.
# One per entry of _typegen.ALIASES (tests/test_typegen.py holds that).
_tensor_ops._ew_any = _ew
_tensor_ops._act_any = _act
_tensor_ops._math_any = _math
_tensor_ops._red_any = _red
_tensor_ops._order_any = _order
_tensor_ops._shape_any = _shape
_tensor_ops._index_any = _index
_tensor_ops._linalg_any = _linalg
_tensor_ops._creation_any = _creation
