"""Recurrent layers: ``RNN``, ``LSTM`` and ``GRU``, as PyTorch's: ``(batch, steps, features)``
inputs by default (PyTorch's ``batch_first=True``), ``(steps, batch, features)`` with
``batch_first=False``.

Each layer-direction is one input projection (one matrix product over every step) and one
recurrence op (:func:`shapegrad.ops.recurrent.recurrence`), so a 2-layer LSTM over 64 steps
records a dozen ops rather than thousands. Parameter names, shapes, gate order and
initialisation are PyTorch's, so its ``named_parameters()`` copy over one to one.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Generic, Literal, cast, overload

from typing_extensions import TypeVar

from .._dims import Open, Prod, literal_size
from .._errors import HyperparameterError, ShapeError
from .._tensor import AnyTensor, Tensor, wrap
from .._typevars import T
from ..ops._toolkit import integer
from ..ops.creation import Generator
from ..ops.linalg import linear
from ..ops.recurrent import CELL_GATES, recurrence
from ..ops.shape import concat, stack, swapaxes
from ._activations import Dropout, checked_dropout
from ._linear import uniform_parameter
from ._module import Layer, out_in
from ._torch_config import expect_kind, refuse, same, supported

__all__ = ["GRU", "LSTM", "RNN"]

# Sizes given as plain ints (GRU(n_in, n_hidden) with no type arguments) are Open, as Linear's.
I = TypeVar("I", default=Open)
H = TypeVar("H", default=Open)
# How many directions: L[1], or L[2] for a bidirectional layer, whose output is Prod[L[2], H]
# wide (both directions' states side by side). A default that is a TypeVar (the width, H)
# would be widened to int by pyright for literal sizes; a literal default is kept.
D = TypeVar("D", default=Literal[1])
# The first axis of h_n (and c_n): num_layers · directions. Built with the default
# num_layers=1 it is L[1] (L[2] bidirectional), with a literal count that count (times two
# bidirectional, for 1 and 2 layers); with any other int it is Open, the default when a type
# annotation leaves it out.
NL = TypeVar("NL", default=Open)
# A literal layer count a one-way layer's h_n takes as its first axis (constraints are kept
# literal where a plain TypeVar would widen the argument to int).
_NL = TypeVar("_NL", Literal[1], Literal[2], Literal[3], Literal[4])
_N = TypeVar("_N")
# The sizes a constructor call binds (class-scoped variables may not appear in __init__'s self).
_I = TypeVar("_I")
_H = TypeVar("_H")
Batch = TypeVar("Batch")
Steps = TypeVar("Steps")

# The signatures below spell out their states (no aliases), so that pyright's messages print
# the dims: an initial state ``Tensor[Any, Any, Batch, H]`` is ``(num_layers · directions, B,
# H)`` as PyTorch's ``h_0``; a final one ``Tensor[T, Open, Batch, H]``, on the input's tape.


class _Recurrent(Layer[I, H, I, H], Generic[I, H, D, NL], checked=False):
    """What RNN, LSTM and GRU share: the parameters, the checks and the loop over layers."""

    _cell: str

    if TYPE_CHECKING:

        def __getattr__(self, name: str) -> AnyTensor:
            """The parameters, named per layer and direction (``weight_ih_l0``, ``bias_hh_l1_reverse``)."""
            ...

    @overload
    def __init__(
        self: _Recurrent[Open, Open, Literal[1], Any],
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        *,
        bidirectional: Literal[False] = False,
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0.0,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None: ...
    @overload
    def __init__(
        self: _Recurrent[Open, Open, Literal[2], Any],
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        *,
        bidirectional: Literal[True],
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0.0,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None: ...
    @overload
    def __init__(
        self: _Recurrent[_I, _H, Literal[1], Any],
        input_size: _I | None = None,
        hidden_size: _H | None = None,
        num_layers: int = 1,
        *,
        bidirectional: Literal[False] = False,
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0.0,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None: ...
    @overload
    def __init__(
        self: _Recurrent[_I, _H, Literal[2], Any],
        input_size: _I | None = None,
        hidden_size: _H | None = None,
        num_layers: int = 1,
        *,
        bidirectional: Literal[True],
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0.0,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None: ...
    @overload
    def __init__(  # pyright: ignore[reportOverlappingOverload] -- reached when the type arguments are literal sizes and the arguments plain ints (checked at run time)
        self: _Recurrent[_I, _H, Literal[1], Any],
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        *,
        bidirectional: Literal[False] = False,
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0.0,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None: ...
    @overload
    def __init__(  # pyright: ignore[reportOverlappingOverload] -- reached when the type arguments are literal sizes and the arguments plain ints (checked at run time)
        self: _Recurrent[_I, _H, Literal[2], Any],
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        *,
        bidirectional: Literal[True],
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0.0,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None: ...
    def __init__(
        self,
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: int = 1,
        *,
        bidirectional: bool = False,
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0.0,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None:
        self._build(input_size, hidden_size, num_layers, bidirectional, bias, generator, dtype, dropout, batch_first)

    def _build(
        self,
        input_size: Any,
        hidden_size: Any,
        num_layers: int,
        bidirectional: bool,
        bias: bool,
        generator: Generator | None,
        dtype: str,
        dropout: float = 0.0,
        batch_first: bool = True,
    ) -> None:
        name = type(self).__name__
        if not isinstance(batch_first, bool):  # pyright: ignore[reportUnnecessaryIsInstance] -- checked for untyped callers
            raise HyperparameterError(f"{name} expects batch_first True or False, found {batch_first!r}")
        # PyTorch's layout: (batch, steps, features) with batch_first, else (steps, batch, features).
        self.batch_first = batch_first
        # PyTorch's dropout: on each layer's output but the last, in training mode only.
        self.dropout = checked_dropout(name, "dropout", dropout)
        self._dropout_generator = generator
        self.input_size = self._size_arg(0, input_size, "input_size")
        self.hidden_size = self._size_arg(1, hidden_size, "hidden_size")
        num_layers = integer(name, "num_layers", num_layers)
        if num_layers < 1:
            raise ShapeError(f"{name}: num_layers is a positive int, found {num_layers!r}")
        if self.hidden_size < 1:
            raise ShapeError(f"{name}: hidden_size is a positive int, found {self.hidden_size}")
        self.num_layers = num_layers
        self.bidirectional = bool(bidirectional)
        self.bias = bool(bias)
        directions = 2 if bidirectional else 1
        width = directions * self.hidden_size
        args = self._type_args
        declared = literal_size(args[2]) if len(args) > 2 else (1 if len(args) == 2 else None)
        if declared is not None and declared != directions:
            raise ShapeError(
                f"{name}: the type says {declared} direction(s), found bidirectional={bidirectional}; "
                f"a bidirectional layer's output is 2·{self.hidden_size} wide: write "
                f"{name.split('[')[0]}[L[{self.input_size}], L[{self.hidden_size}], L[{directions}]]"
                f"(bidirectional={bidirectional})"
            )
        rows = CELL_GATES[self._cell] * self.hidden_size
        bound = 1.0 / math.sqrt(self.hidden_size)
        # Assigned in PyTorch's order, so named_parameters() lists them as torch does.
        for layer in range(num_layers):
            features = self.input_size if layer == 0 else width
            for suffix in [f"l{layer}", f"l{layer}_reverse"][:directions]:
                # PyTorch's (gates · H, in) layout: out_in, so sg.nn.init reads its fans as PyTorch's.
                setattr(
                    self, f"weight_ih_{suffix}", out_in(uniform_parameter((rows, features), bound, generator, dtype))
                )
                setattr(
                    self,
                    f"weight_hh_{suffix}",
                    out_in(uniform_parameter((rows, self.hidden_size), bound, generator, dtype)),
                )
                if bias:
                    setattr(self, f"bias_ih_{suffix}", uniform_parameter((rows,), bound, generator, dtype))
                    setattr(self, f"bias_hh_{suffix}", uniform_parameter((rows,), bound, generator, dtype))

    def torch_check(self, torch_module: Any, path: str) -> None:
        """Refuse a PyTorch recurrent layer of another kind (a ``GRU`` for an ``LSTM``), with
        other sizes, ``bias``, ``bidirectional``, ``dropout``, ``batch_first`` or (``RNN``)
        ``nonlinearity``, or an ``LSTM`` with ``proj_size``."""
        kind = {"gru": "GRU", "lstm": "LSTM"}.get(self._cell, "RNN")
        expect_kind(torch_module, path, self, kind)
        for setting in ("input_size", "hidden_size", "num_layers", "bias", "bidirectional", "dropout"):
            same(torch_module, path, setting, getattr(self, setting))
        if kind == "RNN":
            same(torch_module, path, "nonlinearity", self._cell.removeprefix("rnn_"))
        if getattr(torch_module, "batch_first", self.batch_first) != self.batch_first:
            # Its weights would load, but inputs in its layout would be read with the axes swapped.
            theirs, ours = ("(steps, batch, features)", "(batch, steps, features)")[:: 1 if self.batch_first else -1]
            refuse(
                path,
                f"has batch_first={torch_module.batch_first!r} in PyTorch, {self.batch_first!r} here: its inputs "
                f"are {theirs}, this layer's {ours} (build it with batch_first={torch_module.batch_first!r}, as "
                "PyTorch's; shapegrad's default is True)",
            )
        supported(
            torch_module,
            path,
            "proj_size",
            0,
            "PyTorch's LSTM then projects each hidden state to proj_size features (build it with proj_size=0)",
        )

    def _states(self, x: AnyTensor, given: tuple[AnyTensor, ...] | None, count: int) -> tuple[AnyTensor, ...]:
        name = type(self).__name__
        if x.ndim != 3 or x.shape[-1] != self.input_size:
            layout = (
                "(batch, steps, {}) (batch_first)" if self.batch_first else "(steps, batch, {}) (batch_first=False)"
            )
            raise ShapeError(f"{name}: expected input {layout.format(self.input_size)}, found shape {x.shape}")
        batch, steps = (x.shape[0], x.shape[1]) if self.batch_first else (x.shape[1], x.shape[0])
        if steps == 0:
            raise ShapeError(f"{name}: expected a sequence of at least one step, found shape {x.shape}")
        expected = (self.num_layers * (2 if self.bidirectional else 1), batch, self.hidden_size)
        if given is None:
            zeros = x._backend.xp.zeros(expected, dtype=x._data.dtype)
            return tuple(wrap(zeros, x._backend) for _ in range(count))
        if len(given) != count or any(not isinstance(s, Tensor) or s.shape != expected for s in given):  # pyright: ignore[reportUnnecessaryIsInstance] -- checked for untyped callers
            shapes = [getattr(s, "shape", type(s).__name__) for s in given]
            what = "(h_0, c_0)" if count == 2 else "h_0"
            raise ShapeError(f"{name}: expected {what} of shape {expected} each, found {shapes}")
        return given

    def _run(self, x: AnyTensor, given: tuple[AnyTensor, ...] | None, count: int) -> tuple[Any, list[Any]]:
        """The last layer's output and the final states, each stacked as PyTorch's ``h_n``."""
        initial = self._states(x, given, count)
        finals: list[list[Any]] = [[] for _ in range(count)]
        # Time-major inside, so that each step's slice is contiguous: one copy of a batch-first
        # input (in the first projection), one view back to batch-first at the end.
        layer_input = cast(Any, swapaxes(x, 0, 1) if self.batch_first else x)
        steps = layer_input.shape[0]
        for layer in range(self.num_layers):
            outputs: list[Any] = []
            for direction, suffix in enumerate([f"l{layer}", f"l{layer}_reverse"][: 2 if self.bidirectional else 1]):
                k = layer * (2 if self.bidirectional else 1) + direction
                w_ih, w_hh = getattr(self, f"weight_ih_{suffix}"), getattr(self, f"weight_hh_{suffix}")
                b_ih: Any = getattr(self, f"bias_ih_{suffix}") if self.bias else None
                b_hh: Any = (
                    getattr(self, f"bias_hh_{suffix}")
                    if self.bias
                    else wrap(x._backend.xp.zeros((w_hh.shape[0],), dtype=x._data.dtype), x._backend)
                )
                xproj = linear(layer_input, w_ih.T, b_ih)
                result = recurrence(self._cell, xproj, w_hh, b_hh, tuple(s[k] for s in initial), bool(direction))
                last = 0 if direction else steps - 1  # where the reverse direction ends
                for j in range(count):
                    finals[j].append(result[j, last])
                outputs.append(result[0])
            layer_input = outputs[0] if len(outputs) == 1 else concat(outputs, axis=-1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                # drawn in the layer's layout, as a Dropout on this layer's output would draw it
                drop = Dropout[Any](self.dropout, generator=self._dropout_generator)
                if self.batch_first:
                    layer_input = swapaxes(drop(swapaxes(layer_input, 0, 1)), 0, 1)
                else:
                    layer_input = drop(layer_input)
        output = swapaxes(layer_input, 0, 1) if self.batch_first else layer_input
        return output, [stack(f) for f in finals]


class _OneState(_Recurrent[I, H, D, NL], checked=False):
    """RNN and GRU: one state, ``h``."""

    # A layer built from plain ints (Open input size) takes any last axis, as Linear does; the
    # run time checks it against the weights.
    @overload
    def __call__(
        self: _OneState[Open, _H, Literal[1], _N],
        x: Tensor[T, Batch, Steps, Any],
        h_0: Tensor[Any, Any, Batch, _H] | None = None,
    ) -> tuple[Tensor[T, Batch, Steps, _H], Tensor[T, _N, Batch, _H]]: ...
    @overload
    def __call__(
        self: _OneState[_I, _H, Literal[1], _N],
        x: Tensor[T, Batch, Steps, _I],
        h_0: Tensor[Any, Any, Batch, _H] | None = None,
    ) -> tuple[Tensor[T, Batch, Steps, _H], Tensor[T, _N, Batch, _H]]: ...
    @overload
    def __call__(  # pyright: ignore[reportOverlappingOverload] -- both directions of an Open width are one Open width (not Prod[L[2], Open], which no declared Open accepts)
        self: _OneState[Open, Open, Literal[2], _N],
        x: Tensor[T, Batch, Steps, Any],
        h_0: Tensor[Any, Any, Batch, Any] | None = None,
    ) -> tuple[Tensor[T, Batch, Steps, Open], Tensor[T, _N, Batch, Open]]: ...
    @overload
    def __call__(
        self: _OneState[Open, _H, Literal[2], _N],
        x: Tensor[T, Batch, Steps, Any],
        h_0: Tensor[Any, Any, Batch, _H] | None = None,
    ) -> tuple[Tensor[T, Batch, Steps, Prod[Literal[2], _H]], Tensor[T, _N, Batch, _H]]: ...
    @overload
    def __call__(
        self: _OneState[_I, _H, Literal[2], _N],
        x: Tensor[T, Batch, Steps, _I],
        h_0: Tensor[Any, Any, Batch, _H] | None = None,
    ) -> tuple[Tensor[T, Batch, Steps, Prod[Literal[2], _H]], Tensor[T, _N, Batch, _H]]: ...
    def __call__(self, x: Any, h_0: Any = None) -> Any:
        out, (h_n,) = self._run(x, None if h_0 is None else (h_0,), 1)
        return out, h_n


class RNN(_OneState[I, H, D, NL], checked=False):
    """An Elman RNN, ``h_t = tanh(x_t W_ihᵀ + b_ih + h_{t-1} W_hhᵀ + b_hh)`` (``relu`` with
    ``nonlinearity="relu"``), over ``(batch, steps, I)`` inputs: PyTorch's
    ``torch.nn.RNN(..., batch_first=True)`` (``batch_first=False``: ``(steps, batch, I)``).

    Args:
        input_size: the input size ``I``, only when it is not a ``Literal`` type argument.
        hidden_size: the state's size ``H``, likewise.
        num_layers: stacked layers (each later one reads the previous one's output).
        nonlinearity: ``"tanh"`` or ``"relu"``.
        bidirectional: also run each layer from the last step to the first; the output then
            has ``2·H`` features (the type's third argument, ``RNN[L[8], L[16], L[2]]``, says so; the output is
            ``Prod[L[2], L[16]]`` wide).
        bias: whether the layer has ``bias_ih_l*`` and ``bias_hh_l*``.
        batch_first: inputs and outputs ``(batch, steps, features)``, the default here
            (PyTorch's default is False); False takes and gives ``(steps, batch, features)``,
            as PyTorch's. The states are ``(num_layers · directions, batch, H)`` either way.
            The typed call overloads are batch-first: a layer built with ``batch_first=False``
            (or a ``bool`` that is not a literal) is typed ``Any``, its sizes open.
        dropout: in training mode, dropout on each layer's output but the last's (PyTorch's
            ``dropout``, in ``[0, 1]``; drawn from ``generator``).
        generator: the source of the initial values (``U(±1/√H)``, as PyTorch).
        dtype: the parameters' dtype.

    Returns ``(output, h_n)``: ``output``, ``(B, S, H)`` (bidirectional: ``(B, S, Prod[L[2], H])``;
    ``(S, B, ·)`` with ``batch_first=False``), is the last layer's state at every step, ``h_n`` ``(num_layers · directions, B, H)`` every layer-direction's final state.

    Examples:
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> rnn = sg.nn.RNN[L[3], L[5]](num_layers=2, generator=sg.Generator(0))
        >>> out, h_n = rnn(sg.ones(4, 7, 3))
        >>> out.shape, h_n.shape
        ((4, 7, 5), (2, 4, 5))
    """

    _cell = "rnn_tanh"

    # h_n's first axis (layers · directions): typed by a literal num_layers, Open for any other
    # int. In __new__, whose return type pyright keeps even for a subscripted class (where the
    # omitted type argument would otherwise be its default); __init__ checks the rest. A
    # one-way layer keeps a third type argument of L[2] refused (no overload takes it
    # without bidirectional=True); bidirectional=True makes it L[2].
    @overload
    def __new__(
        cls: type[RNN[I, H, Literal[1], Any]],
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: Literal[1] = 1,
        *,
        batch_first: Literal[True] = True,
        bidirectional: Literal[False] = False,
        **options: Any,
    ) -> RNN[I, H, Literal[1], Literal[1]]: ...
    @overload
    def __new__(
        cls: type[RNN[I, H, Literal[1], Any]],
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: _NL = 1,
        *,
        batch_first: Literal[True] = True,
        bidirectional: Literal[False] = False,
        **options: Any,
    ) -> RNN[I, H, Literal[1], _NL]: ...
    @overload
    def __new__(  # pyright: ignore[reportOverlappingOverload] -- the default count first, a given literal or int count after
        cls,
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: Literal[1] = 1,
        *,
        batch_first: Literal[True] = True,
        bidirectional: Literal[True],
        **options: Any,
    ) -> RNN[I, H, Literal[2], Literal[2]]: ...
    @overload
    def __new__(
        cls,
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: Literal[2] = ...,
        *,
        batch_first: Literal[True] = True,
        bidirectional: Literal[True],
        **options: Any,
    ) -> RNN[I, H, Literal[2], Literal[4]]: ...
    @overload
    def __new__(
        cls,
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: int = 1,
        *,
        batch_first: Literal[True] = True,
        bidirectional: Literal[True],
        **options: Any,
    ) -> RNN[I, H, Literal[2], Open]: ...
    @overload
    def __new__(
        cls,
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: int = 1,
        *,
        batch_first: Literal[True] = True,
        bidirectional: bool = False,
        **options: Any,
    ) -> RNN[I, H, D, Open]: ...
    # batch_first=False (or a bool that is not a literal): (steps, batch, features) inputs,
    # which the overloads above, batch-first, would type with the axes swapped. Typed Any:
    # its calls' sizes are open, and its other arguments are checked at run time only.
    @overload
    def __new__(
        cls, input_size: Any = None, hidden_size: Any = None, num_layers: int = 1, *, batch_first: bool, **options: Any
    ) -> Any: ...
    def __new__(cls, *args: Any, **options: Any) -> Any:
        return super().__new__(cls)

    @overload
    def __init__(
        self: _OneState[Open, Open, Literal[1], Any],
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        *,
        nonlinearity: Literal["tanh", "relu"] = "tanh",
        bidirectional: Literal[False] = False,
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0.0,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None: ...
    @overload
    def __init__(
        self: _OneState[Open, Open, Literal[2], Any],
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        *,
        nonlinearity: Literal["tanh", "relu"] = "tanh",
        bidirectional: Literal[True],
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0.0,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None: ...
    @overload
    def __init__(
        self: _OneState[_I, _H, Literal[1], Any],
        input_size: _I | None = None,
        hidden_size: _H | None = None,
        num_layers: int = 1,
        *,
        nonlinearity: Literal["tanh", "relu"] = "tanh",
        bidirectional: Literal[False] = False,
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0.0,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None: ...
    @overload
    def __init__(
        self: _OneState[_I, _H, Literal[2], Any],
        input_size: _I | None = None,
        hidden_size: _H | None = None,
        num_layers: int = 1,
        *,
        nonlinearity: Literal["tanh", "relu"] = "tanh",
        bidirectional: Literal[True],
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0.0,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None: ...
    @overload
    def __init__(  # pyright: ignore[reportOverlappingOverload] -- reached when the type arguments are literal sizes and the arguments plain ints (checked at run time)
        self: _OneState[_I, _H, Literal[1], Any],
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        *,
        nonlinearity: Literal["tanh", "relu"] = "tanh",
        bidirectional: Literal[False] = False,
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0.0,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None: ...
    @overload
    def __init__(  # pyright: ignore[reportOverlappingOverload] -- reached when the type arguments are literal sizes and the arguments plain ints (checked at run time)
        self: _OneState[_I, _H, Literal[2], Any],
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        *,
        nonlinearity: Literal["tanh", "relu"] = "tanh",
        bidirectional: Literal[True],
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0.0,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None: ...
    def __init__(
        self,
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: int = 1,
        *,
        nonlinearity: str = "tanh",
        bidirectional: bool = False,
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0.0,
        generator: Generator | None = None,
        dtype: str = "float32",
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ShapeError(f"RNN: nonlinearity is 'tanh' or 'relu', found {nonlinearity!r}")
        self._cell = f"rnn_{nonlinearity}"
        self.nonlinearity = nonlinearity
        self._build(input_size, hidden_size, num_layers, bidirectional, bias, generator, dtype, dropout, batch_first)


class GRU(_OneState[I, H, D, NL], checked=False):
    """A gated recurrent unit over ``(batch, steps, I)`` inputs (``(steps, batch, I)`` with
    ``batch_first=False``), PyTorch's ``torch.nn.GRU``: gates ``r, z, n`` (in that order in
    the weights), ``n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))``, ``h' = (1 - z) ⊙ n + z ⊙ h``.

    Arguments and result as :class:`RNN` (without ``nonlinearity``): ``(output, h_n)``.

    Examples:
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> gru = sg.nn.GRU[L[3], L[5], L[2]](bidirectional=True)
        >>> out, h_n = gru(sg.ones(4, 7, 3))
        >>> out.shape, h_n.shape
        ((4, 7, 10), (2, 4, 5))
    """

    _cell = "gru"

    # h_n's first axis (layers · directions): typed by a literal num_layers, Open for any other
    # int. In __new__, whose return type pyright keeps even for a subscripted class (where the
    # omitted type argument would otherwise be its default); __init__ checks the rest. A
    # one-way layer keeps a third type argument of L[2] refused (no overload takes it
    # without bidirectional=True); bidirectional=True makes it L[2].
    @overload
    def __new__(
        cls: type[GRU[I, H, Literal[1], Any]],
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: Literal[1] = 1,
        *,
        batch_first: Literal[True] = True,
        bidirectional: Literal[False] = False,
        **options: Any,
    ) -> GRU[I, H, Literal[1], Literal[1]]: ...
    @overload
    def __new__(
        cls: type[GRU[I, H, Literal[1], Any]],
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: _NL = 1,
        *,
        batch_first: Literal[True] = True,
        bidirectional: Literal[False] = False,
        **options: Any,
    ) -> GRU[I, H, Literal[1], _NL]: ...
    @overload
    def __new__(  # pyright: ignore[reportOverlappingOverload] -- the default count first, a given literal or int count after
        cls,
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: Literal[1] = 1,
        *,
        batch_first: Literal[True] = True,
        bidirectional: Literal[True],
        **options: Any,
    ) -> GRU[I, H, Literal[2], Literal[2]]: ...
    @overload
    def __new__(
        cls,
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: Literal[2] = ...,
        *,
        batch_first: Literal[True] = True,
        bidirectional: Literal[True],
        **options: Any,
    ) -> GRU[I, H, Literal[2], Literal[4]]: ...
    @overload
    def __new__(
        cls,
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: int = 1,
        *,
        batch_first: Literal[True] = True,
        bidirectional: Literal[True],
        **options: Any,
    ) -> GRU[I, H, Literal[2], Open]: ...
    @overload
    def __new__(
        cls,
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: int = 1,
        *,
        batch_first: Literal[True] = True,
        bidirectional: bool = False,
        **options: Any,
    ) -> GRU[I, H, D, Open]: ...
    # batch_first=False (or a bool that is not a literal): (steps, batch, features) inputs,
    # which the overloads above, batch-first, would type with the axes swapped. Typed Any:
    # its calls' sizes are open, and its other arguments are checked at run time only.
    @overload
    def __new__(
        cls, input_size: Any = None, hidden_size: Any = None, num_layers: int = 1, *, batch_first: bool, **options: Any
    ) -> Any: ...
    def __new__(cls, *args: Any, **options: Any) -> Any:
        return super().__new__(cls)


class LSTM(_Recurrent[I, H, D, NL], checked=False):
    """A long short-term memory layer over ``(batch, steps, I)`` inputs (``(steps, batch, I)``
    with ``batch_first=False``), PyTorch's ``torch.nn.LSTM``: gates ``i, f, g, o`` (in that
    order in the weights), ``c' = f ⊙ c + i ⊙ g``, ``h' = o ⊙ tanh(c')``.

    Arguments as :class:`RNN` (without ``nonlinearity``). ``lstm(x)`` starts from zero states,
    ``lstm(x, (h_0, c_0))`` from given ones; both return ``(output, (h_n, c_n))``.

    Examples:
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> lstm = sg.nn.LSTM[L[8], L[16]](num_layers=2)
        >>> out, (h_n, c_n) = lstm(sg.ones(4, 7, 8))
        >>> out.shape, h_n.shape, c_n.shape
        ((4, 7, 16), (2, 4, 16), (2, 4, 16))
    """

    _cell = "lstm"

    # h_n's first axis (layers · directions): typed by a literal num_layers, Open for any other
    # int. In __new__, whose return type pyright keeps even for a subscripted class (where the
    # omitted type argument would otherwise be its default); __init__ checks the rest. A
    # one-way layer keeps a third type argument of L[2] refused (no overload takes it
    # without bidirectional=True); bidirectional=True makes it L[2].
    @overload
    def __new__(
        cls: type[LSTM[I, H, Literal[1], Any]],
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: Literal[1] = 1,
        *,
        batch_first: Literal[True] = True,
        bidirectional: Literal[False] = False,
        **options: Any,
    ) -> LSTM[I, H, Literal[1], Literal[1]]: ...
    @overload
    def __new__(
        cls: type[LSTM[I, H, Literal[1], Any]],
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: _NL = 1,
        *,
        batch_first: Literal[True] = True,
        bidirectional: Literal[False] = False,
        **options: Any,
    ) -> LSTM[I, H, Literal[1], _NL]: ...
    @overload
    def __new__(  # pyright: ignore[reportOverlappingOverload] -- the default count first, a given literal or int count after
        cls,
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: Literal[1] = 1,
        *,
        batch_first: Literal[True] = True,
        bidirectional: Literal[True],
        **options: Any,
    ) -> LSTM[I, H, Literal[2], Literal[2]]: ...
    @overload
    def __new__(
        cls,
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: Literal[2] = ...,
        *,
        batch_first: Literal[True] = True,
        bidirectional: Literal[True],
        **options: Any,
    ) -> LSTM[I, H, Literal[2], Literal[4]]: ...
    @overload
    def __new__(
        cls,
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: int = 1,
        *,
        batch_first: Literal[True] = True,
        bidirectional: Literal[True],
        **options: Any,
    ) -> LSTM[I, H, Literal[2], Open]: ...
    @overload
    def __new__(
        cls,
        input_size: Any = None,
        hidden_size: Any = None,
        num_layers: int = 1,
        *,
        batch_first: Literal[True] = True,
        bidirectional: bool = False,
        **options: Any,
    ) -> LSTM[I, H, D, Open]: ...
    # batch_first=False (or a bool that is not a literal): (steps, batch, features) inputs,
    # which the overloads above, batch-first, would type with the axes swapped. Typed Any:
    # its calls' sizes are open, and its other arguments are checked at run time only.
    @overload
    def __new__(
        cls, input_size: Any = None, hidden_size: Any = None, num_layers: int = 1, *, batch_first: bool, **options: Any
    ) -> Any: ...
    def __new__(cls, *args: Any, **options: Any) -> Any:
        return super().__new__(cls)

    @overload
    def __call__(
        self: LSTM[Open, _H, Literal[1], _N],
        x: Tensor[T, Batch, Steps, Any],
        state: tuple[Tensor[Any, Any, Batch, _H], Tensor[Any, Any, Batch, _H]] | None = None,
    ) -> tuple[Tensor[T, Batch, Steps, _H], tuple[Tensor[T, _N, Batch, _H], Tensor[T, _N, Batch, _H]]]: ...
    @overload
    def __call__(
        self: LSTM[_I, _H, Literal[1], _N],
        x: Tensor[T, Batch, Steps, _I],
        state: tuple[Tensor[Any, Any, Batch, _H], Tensor[Any, Any, Batch, _H]] | None = None,
    ) -> tuple[Tensor[T, Batch, Steps, _H], tuple[Tensor[T, _N, Batch, _H], Tensor[T, _N, Batch, _H]]]: ...
    @overload
    def __call__(  # pyright: ignore[reportOverlappingOverload] -- both directions of an Open width are one Open width (not Prod[L[2], Open], which no declared Open accepts)
        self: LSTM[Open, Open, Literal[2], _N],
        x: Tensor[T, Batch, Steps, Any],
        state: tuple[Tensor[Any, Any, Batch, Any], Tensor[Any, Any, Batch, Any]] | None = None,
    ) -> tuple[Tensor[T, Batch, Steps, Open], tuple[Tensor[T, _N, Batch, Open], Tensor[T, _N, Batch, Open]]]: ...
    @overload
    def __call__(
        self: LSTM[Open, _H, Literal[2], _N],
        x: Tensor[T, Batch, Steps, Any],
        state: tuple[Tensor[Any, Any, Batch, _H], Tensor[Any, Any, Batch, _H]] | None = None,
    ) -> tuple[
        Tensor[T, Batch, Steps, Prod[Literal[2], _H]], tuple[Tensor[T, _N, Batch, _H], Tensor[T, _N, Batch, _H]]
    ]: ...
    @overload
    def __call__(
        self: LSTM[_I, _H, Literal[2], _N],
        x: Tensor[T, Batch, Steps, _I],
        state: tuple[Tensor[Any, Any, Batch, _H], Tensor[Any, Any, Batch, _H]] | None = None,
    ) -> tuple[
        Tensor[T, Batch, Steps, Prod[Literal[2], _H]], tuple[Tensor[T, _N, Batch, _H], Tensor[T, _N, Batch, _H]]
    ]: ...
    def __call__(self, x: Any, state: Any = None) -> Any:
        pair = cast(tuple[Any, ...], state) if isinstance(state, tuple) else None
        if state is not None and (pair is None or len(pair) != 2):
            kind: str = type(state).__name__  # pyright: ignore[reportUnknownArgumentType] -- any object
            raise ShapeError(f"LSTM: expected the state as a pair (h_0, c_0), found {kind}")
        out, (h_n, c_n) = self._run(x, pair, 2)
        return out, (h_n, c_n)
