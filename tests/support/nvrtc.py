"""NVRTC, NVIDIA's run-time CUDA C++ compiler, through ctypes: it runs on the host, so a
machine without a GPU can still compile the CuPy backend's kernels to PTX.

The library comes from the ``nvidia-cuda-nvrtc-cu12`` wheel (a ``dev`` extra on Linux x86-64).
"""

from __future__ import annotations

import ctypes
import importlib.util
from pathlib import Path
from typing import Any


def load() -> ctypes.CDLL | None:
    """The NVRTC library, or ``None`` where the wheel is not installed."""
    spec = importlib.util.find_spec("nvidia.cuda_nvrtc")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        for lib in sorted(Path(folder, "lib").glob("libnvrtc.so*")):
            if "builtins" not in lib.name and "alt" not in lib.name:
                return ctypes.CDLL(str(lib))
    return None


def _read(program: ctypes.c_void_p, get_size: Any, get: Any) -> str:
    """One of NVRTC's size-then-copy outputs (the PTX, the log) as text."""
    size = ctypes.c_size_t()
    get_size(program, ctypes.byref(size))
    text = ctypes.create_string_buffer(size.value)
    get(program, text)
    return text.value.decode(errors="replace")


def compile_to_ptx(
    lib: ctypes.CDLL, source: str, arch: str = "compute_90", include: tuple[str, ...] = ()
) -> tuple[bool, str]:
    """Compile ``source`` (headers searched in ``include``); ``(True, ptx)`` or
    ``(False, compiler log)``."""
    program = ctypes.c_void_p()
    status = lib.nvrtcCreateProgram(ctypes.byref(program), source.encode(), b"kernel.cu", 0, None, None)
    if status != 0:
        raise RuntimeError(f"nvrtcCreateProgram failed with status {status}")
    try:
        flags = [f"--gpu-architecture={arch}", "--std=c++17", *(f"-I{folder}" for folder in include)]
        options = (ctypes.c_char_p * len(flags))(*(flag.encode() for flag in flags))
        compiled = lib.nvrtcCompileProgram(program, len(flags), options) == 0
        if compiled:
            return True, _read(program, lib.nvrtcGetPTXSize, lib.nvrtcGetPTX)
        return False, _read(program, lib.nvrtcGetProgramLogSize, lib.nvrtcGetProgramLog)
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(program))
