"""``sg.no_grad()``: a block, or a function, in which ops record nothing.

Outside it an op on a parameter records a node even when no input is traced (a tape-less
node: the parameter must still get its gradient once the result meets a traced tensor, as a
position embedding added to traced token embeddings does), so an untraced forward pass
through a model keeps every activation its backward rules would read until its output is
dropped. Inside it, as in PyTorch's ``torch.no_grad()``, parameters are constants and traced
inputs give untraced results: inference and evaluation keep nothing and do no tape work.

The switch is per thread: ``_hooks.untraced`` (what every recorded op reads) stays None
while no thread is inside a block, so then ops pay one attribute lookup; while some thread
is, it is a thread-local whose ``depth`` counts the calling thread's open blocks.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
from collections.abc import Callable, Generator
from types import TracebackType
from typing import Any, TypeVar, overload

from . import _hooks

__all__ = ["no_grad"]

F = TypeVar("F", bound=Callable[..., Any])


class _Depth(threading.local):
    depth: int = 0  # every thread starts outside any block


_depth = _Depth()
_lock = threading.Lock()
_open = 0  # blocks open in all threads together, under _lock


def inside_no_grad() -> bool:
    """Whether the calling thread is inside ``sg.no_grad()``."""
    untraced = _hooks.untraced
    return untraced is not None and untraced.depth > 0


class no_grad(contextlib.ContextDecorator):  # noqa: N801 -- PyTorch's name, for code ported from it
    """Ops in the block (or in the decorated function) record nothing: no tape, no graph.

    Use it for inference and evaluation: an untraced forward pass through a model otherwise
    records the parameters' part of the graph (their gradients must reach them if the result
    later meets a traced tensor), keeping every activation its backward rules would read
    alive until the output is dropped. Inside the block parameters are constants and an op on
    a traced tensor gives an untraced result (a backward pass from it raises ``TapeError``),
    as with ``torch.no_grad()``. Types do not follow the switch: pyright still types an op on a
    traced tensor as traced, and the run-time check of an ``OwnedTape`` annotation accepts an
    untraced tensor inside the block. The switch is per thread, and blocks nest. A decorated
    generator function runs inside a block while it computes an item, not while its caller uses
    one; an ``async def`` function's body runs when awaited, outside the block its decorator
    opened (use ``with sg.no_grad():`` inside it, and do not hold one across an ``await``: the
    switch is the thread's, so other tasks on it would record nothing too).

    Examples:
        >>> import shapegrad as sg
        >>> layer = sg.nn.Linear(3, 2, generator=sg.Generator(0))
        >>> x = sg.ones(4, 3).trace(sg.Gradients())
        >>> with sg.no_grad():
        ...     y = layer(x)
        >>> y.traced, y.shape
        (False, (4, 2))
        >>> @sg.no_grad()
        ... def predict(x: sg.Tensor) -> sg.Tensor:
        ...     return layer(x).argmax(-1)
        >>> predict(sg.ones(4, 3)).shape
        (4,)
    """

    @overload
    def __new__(cls) -> no_grad: ...
    @overload
    def __new__(cls, func: F) -> F: ...  # bare @sg.no_grad
    def __new__(cls, func: Any = None) -> Any:
        """``sg.no_grad()``, or ``func`` decorated (``@sg.no_grad`` without parentheses, as
        PyTorch's ``@torch.no_grad`` allows)."""
        block = super().__new__(cls)
        return block if func is None else block(func)

    def __call__(self, func: F) -> F:
        """``func`` run inside a block; a generator function's body is inside one each time it
        runs (from a resumption to the next ``yield``), not the caller's code between items."""
        if not inspect.isgeneratorfunction(func):
            return super().__call__(func)

        @functools.wraps(func)
        def items(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
            generator = func(*args, **kwargs)
            try:
                with no_grad():
                    item = next(generator)
                while True:
                    try:
                        sent = yield item
                    except GeneratorExit:
                        with no_grad():  # its finally clauses run inside a block too (as PyTorch's)
                            generator.close()
                        raise
                    except BaseException as error:  # noqa: BLE001 -- thrown in: passed on to func's generator
                        with no_grad():
                            item = generator.throw(error)
                    else:
                        with no_grad():
                            item = generator.send(sent)
            except StopIteration as stop:  # func's generator returned: so does this one, with its value
                return stop.value

        wrapped: Any = items
        return wrapped

    def __enter__(self) -> None:
        global _open
        with _lock:
            _open += 1
            _hooks.set_hook("untraced", _depth)
        _depth.depth += 1

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        global _open
        _depth.depth -= 1
        with _lock:
            _open -= 1
            if not _open:
                _hooks.set_hook("untraced", None)
