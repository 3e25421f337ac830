"""The identity half of :meth:`Layout.changed` as one generated function, checked before
every replay of a compiled step.

A layout notes a hundred or more objects for a small transformer (each module's attributes,
each parameter's shape, the globals its functions read), and the generic loops that compare
them cost more than a decoding step's whole Python dispatch. The generated function reads
each noted object from its own global name and compares it with one ``is`` test per value,
straight-line: several times faster, with nothing else to change. It only ever says "the
same" or "not sure": anything it does not find identical (a dtype equal but not the same
object, a missing key, a user ``__getattr__`` that raises) sends the caller to the generic
loops, which give the answer and say what changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._compile_watch import same_atom

__all__ = ["MAX_CHECKS", "identity_check"]

# Past this many compared values the function is not generated: compiling 20,000 tests takes
# about 0.3 s, which the few microseconds it saves per call repay only over many calls; the
# generic loops check such a layout.
MAX_CHECKS = 20_000


class _Source:
    """Lines of the generated function and the objects its global names hold."""

    def __init__(self) -> None:
        self.lines: list[str] = ["def same(R):"]
        self.names: dict[str, Any] = {}
        self.by_id: dict[int, str] = {}
        self.checks = 0

    def name(self, value: Any) -> str:
        """A global name for ``value`` (one per object)."""
        known = self.by_id.get(id(value))
        if known is None:
            known = self.by_id[id(value)] = f"o{len(self.names)}"
            self.names[known] = value
        return known

    def fail_if(self, condition: str) -> None:
        self.checks += 1
        self.lines.append(f"    if {condition}: return False")

    def differs(self, expression: str, value: Any) -> str:
        """The test that ``expression`` no longer holds ``value``: ``is not``, and for a number,
        a string or a tuple also unequal bit for bit (``SCALE = float(i % 3)`` is a new object
        of a value a recording baked in; ``self.last_shape = tuple(x.shape)`` one of a value it
        had)."""
        name = self.name(value)
        if type(value) in (int, float, complex, str, bytes, tuple):
            return f"({expression} is not {name} and not same_atom({expression}, {name}))"
        return f"{expression} is not {name}"

    def constant(self, value: Any) -> str:
        """``value`` as source for an ``is`` test: ``True``/``False``/``None`` as literals, any
        other object (a mode of ``1`` from ``model.train(1)``) through a global name, as ``is``
        with an int literal is a SyntaxWarning (an error under ``-W error``) and another
        object's repr need not be source at all."""
        return repr(value) if value is None or type(value) is bool else self.name(value)

    def key(self, key: Any) -> str:
        """``key`` as source: a string's literal; any other key (``vars(obj)[1] = ...``) is
        looked up through a global name."""
        return repr(key) if type(key) is str else self.name(key)


def identity_check(layout: Any, missing: object) -> Callable[[list[Any]], bool] | None:
    """A function of the roots that is True where the roots, the modules' modes and
    attributes, the plain objects' attributes, the classes of both, the names read through functions and
    classes, the weak references' targets, the closure cells' contents and the tensors' shapes, dtypes, strides and parameter
    states are all as ``layout`` noted them (``missing``: the layout's marker of an absent
    attribute); False where any may differ. None past ``MAX_CHECKS`` values."""
    src = _Source()
    src.fail_if(f"len(R) != {len(layout.roots)}")
    for i, root in enumerate(layout.roots):
        src.fail_if(src.differs(f"R[{i}]", root))
    for module, size, training, own in layout.modules:
        m = src.name(module)
        src.fail_if(f"{m}.training is not {src.constant(training)}")
        src.lines.append(f"    d = {m}.__dict__")
        src.fail_if(f"len(d) - ('training' in d) != {size}")
        for attribute, value in own:
            src.fail_if(src.differs(f"d[{src.key(attribute)}]", value))
    for obj, has_dict, size, items in layout.objects:
        o = src.name(obj)
        if has_dict:
            src.lines.append(f"    d = {o}.__dict__")
            src.fail_if(f"len(d) != {size}")
            for attribute, value in items:
                src.fail_if(src.differs(f"d[{src.key(attribute)}]", value))
        else:
            for attribute, value in items:
                src.fail_if(src.differs(f"getattr({o}, {attribute!r}, {src.name(missing)})", value))
    for obj, kind in layout.classes:
        src.fail_if(f"type({src.name(obj)}) is not {src.name(kind)}")
    for namespace, key, value in layout.values:
        src.fail_if(src.differs(f"{src.name(namespace)}[{src.key(key)}]", value))
    for reference, target in layout.references:
        src.fail_if(f"{src.name(reference)}() is not {src.name(target)}")
    for cell, contents in layout.cells:
        # an empty cell's cell_contents raises ValueError: the caller's generic loops decide
        src.fail_if(src.differs(f"{src.name(cell)}.cell_contents", contents))
    for tensor, shape, dtype, strides, param, trainable in layout.tensors:
        t = src.name(tensor)
        src.lines.append(f"    a = {t}._data")
        src.fail_if(f"a.shape != {tuple(shape)!r} or a.strides != {strides!r} or a.dtype is not {src.name(dtype)}")
        src.fail_if(f"{t}._param is not {src.name(param)}")
        if param is not None:
            src.fail_if(f"{src.name(param)}.trainable is not {src.constant(trainable)}")
        if src.checks > MAX_CHECKS:
            return None
    if src.checks > MAX_CHECKS:
        return None
    src.lines.append("    return True")
    namespace: dict[str, Any] = {**src.names, "same_atom": same_atom}
    exec(compile("\n".join(src.lines), "<sg.compile layout check>", "exec"), namespace)  # noqa: S102 -- our own source
    check: Callable[[list[Any]], bool] = namespace["same"]
    return check
