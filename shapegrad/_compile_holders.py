"""What objects built in C hold, for a compiled step's layout (``sg.compile``; see
``_compile_layout.Layout``): the state a step can read through them, which the layout's walk
of attributes, lists and dicts does not find.

- a ``functools.lru_cache`` function's cached results (``get_config().temperature``, a
  settings object made once and changed in place between calls);
- the bytes of a buffer (``bytearray``, ``array.array``, a ``memoryview``, a ``ctypes`` value,
  hence ``multiprocessing.Value``, an ``mmap``) and of a PyTorch tensor (a scale a ported
  model reads with ``.item()``);
- the attribute names an ``operator.attrgetter`` or ``methodcaller`` made outside the step
  reads by, which no bytecode of the step names.
"""

from __future__ import annotations

import array
import ctypes
import functools
import gc
import mmap
import operator
import sys
import zlib
from typing import Any, cast

__all__ = ["NOT_SEEN", "buffer_state", "cached_results", "getter_names", "is_buffer", "is_lru_cache", "torch_state"]

NOT_SEEN = object()
"""What :func:`cached_results` gives where it cannot read a cache's results."""

# Buffers up to this many bytes are compared byte for byte; larger ones by a CRC-32.
_COMPARED_BYTES = 32768

_CTYPES = (ctypes.Array, ctypes.Structure, ctypes.Union, type(ctypes.c_int()).__mro__[1])  # the last: _SimpleCData


def is_lru_cache(value: Any) -> bool:
    """Whether ``value`` is a function wrapped by ``functools.lru_cache`` or ``functools.cache``."""
    return type(value) is _LRU_WRAPPER


def cached_results(wrapper: Any) -> list[Any] | object:
    """The results ``wrapper`` (an ``lru_cache`` function) holds, or :data:`NOT_SEEN`.

    An unbounded cache (``functools.cache``) keeps them as its dict's values; a bounded one
    (``@lru_cache()``, ``maxsize=128``) in links of a list no Python API reads, whose
    ``result`` field is read at the offset a probe of a cache made here found (``NOT_SEEN``
    where none was: another interpreter)."""
    results: list[Any] = []
    for cache in _caches(wrapper):
        for held in list(cache.values()):
            if type(held) is _LINK:
                result = _link_result(held)
                if result is NOT_SEEN:
                    return NOT_SEEN
                results.append(result)
            else:
                results.append(held)
    return results


def _caches(wrapper: Any) -> list[dict[Any, Any]]:
    """The dict an ``lru_cache`` function keeps its results in (found among what it holds,
    apart from its ``__dict__``)."""
    own = getattr(wrapper, "__dict__", None)
    return [cast("dict[Any, Any]", d) for d in gc.get_referents(wrapper) if type(d) is dict and d is not own]


def _link_result(link: Any) -> Any:
    offset = _result_offset()
    if offset is None:
        return NOT_SEEN
    address = ctypes.c_void_p.from_address(id(link) + offset).value
    return NOT_SEEN if address is None else ctypes.cast(address, ctypes.py_object).value


def _type_of(value: Any) -> type:
    kind: type = value.__class__
    return kind


# A bounded cache holding one known object: what a cache function and its links are, and where
# a link holds its result
_SENTINEL = object()
_PROBE = functools.lru_cache(maxsize=1)(lambda: _SENTINEL)
_PROBE()
_LRU_WRAPPER = type(_PROBE)
_PROBE_LINKS: list[Any] = [v for cache in _caches(_PROBE) for v in cache.values()]
# (CPython's C cache; in another, the values are no links this module can read)
_LINK = (
    _type_of(_PROBE_LINKS[0])
    if len(_PROBE_LINKS) == 1 and _type_of(_PROBE_LINKS[0]).__name__ == "_lru_list_elem"
    else None
)


@functools.cache
def _result_offset() -> int | None:
    """Where a bounded cache's link holds its result: CPython's ``lru_list_elem`` is the
    object header, two links, a hash, the key, the result; checked on the probe's link, which
    holds a known object, before any other is read."""
    if _LINK is None:
        return None
    link = _PROBE_LINKS[0]
    offset = object.__basicsize__ + 4 * ctypes.sizeof(ctypes.c_void_p)
    if sys.getsizeof(link) < offset + ctypes.sizeof(ctypes.c_void_p):
        return None
    return offset if ctypes.c_void_p.from_address(id(link) + offset).value == id(_SENTINEL) else None


def is_buffer(value: Any) -> bool:
    """Whether ``value`` is a mutable buffer compared by its bytes (not a NumPy array, which
    the layout compares itself, nor ``bytes``, which cannot change)."""
    return isinstance(value, (bytearray, array.array, memoryview, mmap.mmap, *_CTYPES))


def buffer_state(value: Any) -> Any:
    """What ``value``'s bytes are now: themselves where few, else their CRC-32 and length;
    None where they cannot be read (a released ``memoryview``, a closed ``mmap``)."""
    try:
        view = memoryview(value)
    except (TypeError, ValueError):
        return None
    with view:
        if view.nbytes <= _COMPARED_BYTES or not view.contiguous:
            data = view.tobytes()
            return data if len(data) <= _COMPARED_BYTES else (zlib.crc32(data), len(data))
        return zlib.crc32(view.cast("B")), view.nbytes


def torch_state(value: Any) -> Any:
    """What a PyTorch tensor holds now: its dtype, shape and bytes (as :func:`buffer_state`),
    or None where they cannot be read (a meta or sparse tensor)."""
    try:
        flat = value.detach().reshape(-1).contiguous().cpu()
        raw = flat.view(sys.modules["torch"].uint8).numpy()  # a torch tensor: torch is imported
    except Exception:  # noqa: BLE001 -- a tensor without plain memory: held by identity only
        return None
    return str(value.dtype), tuple(value.shape), buffer_state(raw)


def getter_names(value: Any) -> set[str] | None:
    """The attribute names an ``operator.attrgetter`` (``"a.b"``: ``a`` and ``b``) or
    ``methodcaller`` reads by; None for anything else."""
    if isinstance(value, operator.attrgetter):
        return {part for dotted in value.__reduce__()[1] for part in str(dotted).split(".")}
    if isinstance(value, operator.methodcaller):
        maker, args = value.__reduce__()
        if isinstance(maker, functools.partial):  # methodcaller("m", key=1): the name is the partial's
            args = cast("functools.partial[Any]", maker).args
        return {str(args[0])}
    return None
