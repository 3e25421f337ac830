"""How long pyright takes on nested function forms (issue #23: time must grow linearly in depth).

    python benchmarks/typing_speed.py            # depths 1..8 of each expression, and the layer norm
    python benchmarks/typing_speed.py add 1 4    # one form, depths 1..4

Each case is a file with one function whose body is one nested function-form expression, its
operands' dims generic (``T, B, D``) and then concrete (``T, Batch, L[64]``); the time is
pyright's on that file in strict mode, less the time of an empty file (pyright's start-up and
shapegrad's own modules).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYRIGHT = Path(sys.executable).parent / "pyright"


def header(batch: str, width: str) -> str:
    """A case file's start: ``f``'s operands are ``x`` and ``m`` of shape ``(batch, width)`` on
    one tape and an untraced vector ``w`` of ``width``."""
    imports = "Literal as L, TypeVar" if "L[" in batch + width else "TypeVar"  # strict: no unused import
    return f"""from typing import {imports}
import shapegrad as sg
from shapegrad import NoTape, Tensor

T = TypeVar("T")
B = TypeVar("B")
D = TypeVar("D")


class Batch(sg.Dim): ...


def f(x: Tensor[T, {batch}, {width}], w: Tensor[NoTape, {width}], m: Tensor[T, {batch}, {width}]) -> None:
"""


# Dims as a generic function's type variables, and as a model's are written (a named dim and a
# literal width): pyright solves the two differently, and a design fast on one was exponential
# on the other (``sg.sub(w, ...)`` 5 deep: 0.7 s generic, 148 s concrete, until the broadcast
# protocols returned one whole type).
HEADERS = {"generic": header("B", "D"), "concrete": header("Batch", "L[64]")}

# An open dim against a typed one (a shifted sequence, a masked selection's rows): ``x`` typed,
# ``o`` open at the sequence axis, ``u`` typed and untraced, in a function generic over the tape.
HEADERS["open"] = """from typing import Literal as L, TypeVar
import shapegrad as sg
from shapegrad import NoTape, Open, Tensor

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


def f(x: Tensor[T, Batch, Seq, L[8]], o: Tensor[T, Batch, Open, L[8]], u: Tensor[NoTape, Batch, Seq, L[8]]) -> None:
"""

# name -> the call that nests, on HEADERS["open"]'s operands (the result stays ``x``'s type).
# Before the open protocols came right after the common ones (``_typegen._open_protocol``),
# ``sg.add(sg.add(x, o), o)`` took about 10 s above start-up and one level more over 300 s.
OPEN_FORMS: dict[str, str] = {
    "open_right": "sg.add({}, o)",  # the nested typed operand on the left, the open one on the right
    "open_maximum": "sg.maximum({}, o)",
    "untraced_left": "sg.sub(u, sg.add({}, o))",  # an untraced typed operand, then the open one
    # Not linear yet: the nested operand on the right of an open one (2.5x per level: 1.7 s at
    # depth 4, 10 s at 6; before, over 60 s at 3). Not in the test's forms.
    "open_left": "sg.mul(o, {})",
}
LINEAR_OPEN_FORMS = ["open_right", "open_maximum", "untraced_left"]


def nested(template: str, depth: int) -> str:
    """``template`` (a call with ``{}`` for its first operand) applied ``depth`` times to ``x``."""
    expr = "x"
    for _ in range(depth):
        expr = template.format(expr)
    return expr


# name -> the call that nests (``{}`` is the inner expression)
FORMS: dict[str, str] = {
    "add": "sg.add({}, w)",  # a bias (vector) on the right: the expression
    "mul_same": "sg.mul({}, m)",  # same shape
    "sub_left": "sg.sub(w, {})",  # a vector on the left
    "float_left": "sg.sub(1.0, {})",  # a number on the left
    "keep_left": "sg.sub(sg.mean(x, axis=-1, keepdims=True), {})",  # a keepdims reduction on the left
    "maximum": "sg.maximum({}, 0.0)",
    "where": "sg.where(m > 0, {}, m)",
    "mean_keep": "sg.sub({}, sg.mean(x, axis=-1, keepdims=True))",
    "less": "sg.where(sg.less({}, m), x, m)",
}

LAYER_NORM = (
    "sg.add(sg.mul(sg.div(sg.sub(x, sg.mean(x, axis=-1, keepdims=True)),"
    " sg.sqrt(sg.add(sg.var(x, axis=-1, keepdims=True), 1e-5))), w), w)"
)
# GPT-2's tanh GELU as a PyTorch user writes it with function forms, constants on the left
# (over 300 s on concrete dims before the fix that ``HEADERS`` names).
GELU = "sg.mul(0.5, sg.mul(x, sg.add(1.0, sg.tanh(sg.mul(0.7978845608, sg.add(x, sg.mul(0.044715, sg.pow(x, 3.0))))))))"


def pyright_seconds(body: str, directory: Path, timeout: float = 900, dims: str = "generic") -> tuple[float, int]:
    """Seconds pyright takes on a file whose function ``f`` (its operands' dims from
    ``HEADERS[dims]``) holds ``body``; its error count (``subprocess.TimeoutExpired`` past
    ``timeout`` seconds)."""
    directory.mkdir(parents=True, exist_ok=True)
    config = {"typeCheckingMode": "strict", "pythonVersion": "3.11", "extraPaths": [str(ROOT)]}
    (directory / "pyrightconfig.json").write_text(json.dumps(config))
    (directory / "case.py").write_text(HEADERS[dims] + f"    print({body})\n")
    command = [
        str(PYRIGHT),
        "--pythonpath",
        sys.executable,
        "--outputjson",
        "-p",
        str(directory / "pyrightconfig.json"),
    ]
    start = time.perf_counter()
    # Its own process group: the pyright command is a Python wrapper around Node, and a
    # timeout must stop Node too (left running, an exponential check burns a core for hours).
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=directory, start_new_session=True
    )
    try:
        stdout, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise
    elapsed = time.perf_counter() - start
    report = json.loads(stdout)
    return elapsed, report["summary"]["errorCount"]


LIMIT = 60.0  # seconds above the baseline before a case is stopped (an exponential form runs for hours)


def measure(
    cases: dict[str, str], report: Callable[[str], None] = print, limit: float = LIMIT, dims: str = "generic"
) -> dict[str, float]:
    """Each case's time above an empty body's (the baseline: start-up and shapegrad itself),
    its operands' dims from ``HEADERS[dims]``; a case stopped at ``limit`` seconds is reported
    as ``inf``."""
    with tempfile.TemporaryDirectory() as tmp:
        base, _ = pyright_seconds("x", Path(tmp) / "base", dims=dims)
        report(f"baseline (pyright start-up, shapegrad's modules): {base:.2f} s")
        times: dict[str, float] = {}
        for name, body in cases.items():
            try:
                seconds, errors = pyright_seconds(body, Path(tmp) / name, timeout=base + limit, dims=dims)
            except subprocess.TimeoutExpired:
                times[name] = float("inf")
                report(f"{name:>16}: stopped after {limit:.0f} s above the baseline")
                continue
            times[name] = seconds - base
            report(f"{name:>16}: {seconds - base:7.2f} s above the baseline, {errors} errors")
        return times


def main(argv: list[str]) -> None:
    forms = [argv[0]] if argv else [*FORMS, *OPEN_FORMS]
    low, high = (int(argv[1]), int(argv[2])) if len(argv) >= 3 else (1, 8)
    for dims in HEADERS:
        table = OPEN_FORMS if dims == "open" else FORMS
        cases = {
            f"{form} d={d}": nested(table[form], d) for form in forms if form in table for d in range(low, high + 1)
        }
        if not argv and dims != "open":
            cases["layer norm"] = LAYER_NORM
            cases["gelu"] = GELU
        if cases:
            print(f"-- {dims} dims")
            measure(cases, dims=dims)


if __name__ == "__main__":
    main(sys.argv[1:])
