# pyright: reportPrivateUsage=true
"""Parameter groups: settings of an optimizer that differ for the parameters a group selects."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fnmatch import fnmatchcase
from typing import Any

from .._errors import HyperparameterError

__all__ = ["Group", "Selector", "assign_groups"]

Selector = str | Callable[[str, Any], bool]


class Group:
    """Settings for the parameters that ``select`` picks, overriding the optimizer's own.

    ``select`` is a glob over dotted parameter paths (``"*.bias"``, ``"encoder.*"``; ``*``
    also crosses dots, as in ``fnmatch``) or a function of ``(path, parameter)``
    (``lambda path, p: p.ndim < 2``). A parameter under several paths (a tied weight,
    ``b.weight = a.weight``) is selected if any of them is: a function is asked with each.
    The settings are the optimizer's keyword arguments
    (``lr``, ``weight_decay``, ``betas``, ...); an unknown one, or a group that selects no
    trainable parameter, is refused when the optimizer is built (``HyperparameterError``).
    A parameter selected by several groups takes the first one's settings; a parameter no
    group selects keeps the optimizer's. PyTorch: a param group
    (``{"params": [...], "weight_decay": 0.0}``). A group's own ``lr`` replaces the
    optimizer's, schedule included: a number stays constant while the optimizer's
    schedule moves the other parameters' rate, where PyTorch's schedulers scale every
    group; for PyTorch's behaviour give the group a schedule of its own
    (``lr=lambda step: 0.1 * schedule(step)``).

    Examples:
        >>> from typing import Literal as L
        >>> import shapegrad as sg
        >>> model = sg.nn.Linear[L[2], L[1]]()
        >>> no_decay = sg.optim.Group(select=lambda path, p: p.ndim < 2, weight_decay=0.0)
        >>> opt = sg.optim.AdamW(model, lr=1e-3, weight_decay=0.1, groups=[no_decay])
    """

    __slots__ = ("select", "settings")

    def __init__(self, select: Selector, **settings: Any) -> None:
        if not isinstance(select, str) and not callable(select):
            raise HyperparameterError(
                f"Group select expects a glob over dotted paths or a function (path, parameter) -> bool, "
                f"found {type(select).__name__}"
            )
        self.select = select
        self.settings = settings

    def selects(self, path: str, param: Any) -> bool:
        """Whether this group holds the parameter at dotted ``path``."""
        if isinstance(self.select, str):
            return fnmatchcase(path, self.select)
        return bool(self.select(path, param))

    def __repr__(self) -> str:
        select = self.select if isinstance(self.select, str) else getattr(self.select, "__name__", "<function>")
        settings = "".join(f", {k}={v!r}" for k, v in self.settings.items())
        return f"Group(select={select!r}{settings})"


def assign_groups(
    optimizer: str, groups: Sequence[Group], params: Sequence[tuple[Sequence[str], Any]], known: Sequence[str]
) -> list[int | None]:
    """For each ``(paths, parameter)`` (every dotted path of the parameter, its first one
    first), the index of the first group selecting it through any of them (None: no group).
    Refuses a group setting that is not one of ``known`` and a group that selects nothing,
    before anything is built."""
    for i, group in enumerate(groups):
        if not isinstance(group, Group):  # pyright: ignore[reportUnnecessaryIsInstance] -- callers may be untyped
            raise HyperparameterError(
                f"{optimizer} groups expects sg.optim.Group values, found {type(group).__name__} at {i}"
            )
        unknown = sorted(set(group.settings) - set(known))
        if unknown:
            raise HyperparameterError(
                f"{optimizer} group {i} {group!r} overrides {', '.join(map(repr, unknown))}, which is no setting of "
                f"{optimizer}; expected one of {', '.join(known)}"
            )

    def held(group: Group, paths: Sequence[str], param: Any) -> bool:
        return any(group.selects(path, param) for path in paths)

    chosen = [next((i for i, g in enumerate(groups) if held(g, paths, p)), None) for paths, p in params]
    for i, group in enumerate(groups):
        if i in chosen:
            continue
        shadowed = any(held(group, paths, p) for paths, p in params)
        why = (
            "selects only parameters an earlier group already holds (the first group wins)"
            if shadowed
            else "selects no trainable parameter"
        )
        raise HyperparameterError(
            f"{optimizer} group {i} {group!r} {why}; expected it to select at least one of {[paths[0] for paths, _ in params]}"
        )
    return chosen
