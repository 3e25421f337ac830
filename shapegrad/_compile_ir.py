"""The recording's instructions: registers referenced from operations' arguments
(:class:`Ref`) and the operations themselves (:class:`Op`), shared by ``sg.compile``'s
recorder, its row narrowing and its code generator."""

from __future__ import annotations

from typing import Any, cast


class Ref:
    """A value of the recording (register ``index``) inside an operation's arguments."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class Op:
    """One recorded operation: ``fn(*args, **kwargs)`` (``kind`` "call"), a method or an
    attribute of the first argument ("method", "attr"), a kernel whose Python result must
    come out the same ("kernel"), or a host call ("host"). ``outs`` is the register of the
    result, a tuple of registers (one per item, None where an item is no array), or None.
    ``state``: the Python state the step had as it issued it (``_Recorder.here``), which a
    replay that raises in it leaves, as the step raising there does."""

    __slots__ = ("kind", "fn", "args", "kwargs", "outs", "expect", "ufunc", "pure", "label", "state")

    def __init__(self, kind: str, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], outs: Any) -> None:
        self.kind, self.fn, self.args, self.kwargs, self.outs = kind, fn, args, kwargs, outs
        self.expect: Any = None
        self.ufunc = False
        self.pure = False
        self.label: str | None = None  # a fused kernel's name in the library ("softmax")
        self.state: Any = None


def mentions_ref(template: Any) -> bool:
    """Whether an operation's argument (a template) holds a register."""
    if isinstance(template, Ref):
        return True
    if isinstance(template, (tuple, list)):
        return any(mentions_ref(v) for v in cast("tuple[Any, ...]", template))
    if isinstance(template, dict):
        return any(mentions_ref(v) for v in cast("dict[Any, Any]", template).values())
    return False


def refs(template: Any, into: list[int]) -> list[int]:
    """The registers an argument (a template) holds, appended to ``into``."""
    if isinstance(template, Ref):
        into.append(template.index)
    elif isinstance(template, (tuple, list)):
        for v in cast("tuple[Any, ...]", template):
            refs(v, into)
    elif isinstance(template, dict):
        for v in cast("dict[Any, Any]", template).values():
            refs(v, into)
    return into


def register_uses(ops: list[Op]) -> dict[int, list[int]]:
    """Each register's readers: the positions of the operations whose arguments hold it, in order."""
    uses: dict[int, list[int]] = {}
    for position, op in enumerate(ops):
        for index in refs((op.args, op.kwargs), []):
            uses.setdefault(index, []).append(position)
    return uses
