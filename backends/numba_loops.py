"""``sg.compile``'s generated element-wise loops, compiled with numba and kept on disk.

A compiled step's fused chains are Python source made while the step records (one function
per distinct chain), and numba takes about half a second to compile each: most of a first
call's time for a recurrent cell with nine distinct loops. numba caches machine code only for
functions defined in a file, so each loop's source is written once to a file named by the hash
of what it compiles to (the source, numba's flags and version), in ``SHAPEGRAD_CACHE_DIR`` or the
user's cache directory, and compiled from there with numba's on-disk cache: a later process
recording the same step loads the loops instead of compiling them. A file is never rewritten
(numba's cache is keyed by the file's time stamp), a file whose text is not the loop's is not
loaded, numba reads and writes each loop's cache under a lock (processes compiling at once,
MPI ranks say), and where no directory is writable the loops are compiled in memory as
before. Loading runs the files and numba's cached code from that directory: it must be as
trusted as the installed packages (a directory only its user writes, as the default is).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

_fcntl: Any = None
try:  # POSIX: the loops' on-disk cache is locked while numba reads or writes it
    import fcntl as _fcntl
except ImportError:  # elsewhere loops are compiled in memory per process
    pass

__all__ = ["CACHE_ENV_VAR", "cache_directory", "loop"]

CACHE_ENV_VAR = "SHAPEGRAD_CACHE_DIR"

# No fastmath, so that a loop rounds as NumPy's passes do, operation by operation; NumPy's
# error model, so that a division by zero gives inf or NaN as NumPy's does instead of raising.
_FLAGS: dict[str, Any] = {"fastmath": False, "error_model": "numpy"}

# Loops by their source: a recording's chains that repeat (a recurrent cell's, each time
# step's) and later recordings of the same step share one compiled function.
_loops: dict[str, Callable[..., Any]] = {}
_directory: list[Path | None] = []  # the cache directory once found (None: none writable)


def cache_directory() -> Path | None:
    """Where loop sources are kept: ``$SHAPEGRAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/shapegrad``
    or ``~/.cache/shapegrad``, with ``loops/`` under it; None where it cannot be made."""
    if not _directory:
        base = os.environ.get(CACHE_ENV_VAR)
        if not base:
            xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
            base = os.path.join(xdg, "shapegrad")
        path: Path | None = Path(base) / "loops"
        try:
            assert path is not None
            path.mkdir(parents=True, exist_ok=True)
            if not os.access(path, os.W_OK):
                path = None
        except OSError:
            path = None
        _directory.append(path)
    return _directory[0]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _source_file(numba: Any, source: str, name: str) -> Path | None:
    """The file holding ``source`` (written once, atomically), or None where it cannot be."""
    directory = cache_directory()
    if directory is None:
        return None
    key = hashlib.sha256(f"{numba.__version__}\n{sorted(_FLAGS.items())}\n{name}\n{source}".encode()).hexdigest()
    path = directory / f"sg_loop_{key[:32]}.py"
    text = "import numpy as np\n\n" + source
    try:
        if not path.exists():
            handle, temporary = tempfile.mkstemp(dir=directory, suffix=".tmp")
            try:
                with os.fdopen(handle, "w") as file:
                    file.write(text)
                os.chmod(temporary, 0o644 & ~_umask())  # as a file written with open(): others may read it
                if not path.exists():  # another process may have written it meanwhile: keep its time stamp
                    os.replace(temporary, path)
            finally:
                if os.path.exists(temporary):
                    os.unlink(temporary)
        # what is loaded is what this process made (not a truncated or altered file)
        return path if path.read_text() == text else None
    except OSError:
        return None


def _from_file(path: Path, name: str) -> Callable[..., Any] | None:
    """The function ``name`` of the module at ``path``, or None where it cannot be loaded."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (OSError, SyntaxError):
        return None
    # numba's cached code names the module its function came from and imports it by that name
    sys.modules[spec.name] = module
    function: Callable[..., Any] | None = getattr(module, name, None)
    return function


def _locked(dispatcher: Any, path: Path) -> Any:
    """``dispatcher`` with its on-disk cache read and written under an exclusive lock on
    ``path``'s ``.lock`` file, or None where that cannot be arranged. numba picks the name of
    a new signature's machine-code file from the index it read: two processes compiling two
    signatures of one loop at once could each take the same name, and the index would then
    give one signature the other's code. Locked, each load or save sees the last one's index.
    Only compiling (a new signature) takes the lock, not a call."""
    cache: Any = getattr(dispatcher, "_cache", None)
    if _fcntl is None or not (hasattr(cache, "load_overload") and hasattr(cache, "save_overload")):
        return None
    lock = path.with_suffix(".lock")
    load, save = cache.load_overload, cache.save_overload

    def locked(operation: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            try:
                handle = open(lock, "a")  # noqa: SIM115 -- held until the operation is done
            except OSError:
                return None  # no lock, no cache: a load misses (numba compiles), a save is skipped
            with handle:
                _fcntl.flock(handle, _fcntl.LOCK_EX)  # released when the file closes
                return operation(*args)

        return run

    cache.load_overload, cache.save_overload = locked(load), locked(save)
    return dispatcher


def loop(numba: Any, source: str, name: str) -> Callable[..., Any]:
    """The function ``name`` defined by ``source`` (generated Python over arrays, which may
    name ``np``), compiled with ``numba`` on its first call for each argument type, from its
    on-disk cache where a process compiled it before."""
    compiled = _loops.get(source)
    if compiled is not None:
        return compiled
    path = _source_file(numba, source, name)
    function = _from_file(path, name) if path is not None else None
    if function is not None and path is not None:
        try:
            compiled = _locked(numba.njit(cache=True, **_FLAGS)(function), path)
        except RuntimeError:  # numba: "cannot cache function ...": compiled in memory below
            compiled = None
    if compiled is None:
        namespace: dict[str, Any] = {"np": np}
        exec(compile(source, f"<fused loop {name}>", "exec"), namespace)  # noqa: S102 -- sg.compile's generated code
        compiled = numba.njit(cache=False, **_FLAGS)(namespace[name])
    _loops[source] = compiled
    return compiled
