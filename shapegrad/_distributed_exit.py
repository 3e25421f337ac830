"""One rank's end ends the whole MPI job (``shapegrad.distributed.init``).

A rank that stops while the others go on leaves them waiting in their next collective
forever: MPI cannot tell a rank that is slow from one that is gone. So:

- an uncaught exception on a rank aborts the job at once (``MPI_Abort``) with its message;
- a rank that exits through ``sys.exit`` with a non-zero status (argparse's ``error``, a
  failed configuration check) aborts the job, unless every rank reaches its end within
  ``EXIT_GRACE_S`` (all of them failing the same check: the job ends with that status);
- a rank that ends with status 0 waits for every rank to end (a non-blocking barrier on a
  communicator of its own, so it cannot match a collective of the program's) and aborts
  the job when they have not within ``exit_timeout`` seconds: ending one rank early is a
  bug that would otherwise hang, not a way to stop.
"""

from __future__ import annotations

import atexit
import sys
import time
import traceback
from typing import Any

EXIT_GRACE_S = 1.0  # how long a failing rank waits for the others to end too


def _announce(world: Any, text: str) -> None:
    sys.stderr.write(f"shapegrad.distributed: rank {world.Get_rank()} of {world.Get_size()} {text}")
    sys.stderr.flush()
    # The launcher relays output asynchronously and kills every rank at the abort: give it a
    # moment to pass the message on first.
    time.sleep(0.5)


def abort_on_uncaught_exception(world: Any) -> None:
    """An uncaught exception on this rank aborts the job with its message and rank."""
    previous = sys.excepthook
    if getattr(previous, "_shapegrad_abort", False):
        return

    def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        message = "".join(traceback.format_exception(kind, value, tb))
        _announce(world, f"failed, aborting the job:\n{message}")
        world.Abort(1)

    setattr(hook, "_shapegrad_abort", True)  # a marker on our own hook: install it once
    sys.excepthook = hook


def _status(code: Any) -> int:
    """The process status ``sys.exit(code)`` gives (a message or another object: 1)."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


class _ExitWatch:
    """What this rank does at its end; installed once per process."""

    installed: _ExitWatch | None = None

    def __init__(self, mpi: Any, world: Any, exit_timeout: float | None) -> None:
        self.mpi, self.world, self.exit_timeout = mpi, world, exit_timeout
        self.ends = world.Dup()  # collective, here while every rank is starting
        self.status = 0
        exit_now = sys.exit

        def exit_recording(code: Any = None) -> None:
            # SystemExit reaches no hook: its status is only seen here, on its way out.
            self.status = _status(code)
            exit_now(code)

        sys.exit = exit_recording
        atexit.register(self.at_exit)  # runs before mpi4py's MPI_Finalize (a C-level exit hook)

    def at_exit(self) -> None:
        if self.mpi.Is_finalized():
            return
        failing = self.status != 0
        limit = EXIT_GRACE_S if failing else self.exit_timeout
        request = self.ends.Ibarrier()
        started = time.monotonic()
        while not request.Test():
            if limit is not None and time.monotonic() - started > limit:
                break
            time.sleep(0.002)
        else:
            return  # every rank has ended: MPI finalizes as usual
        if failing:
            text = f"exited with status {self.status}, aborting the job (the other ranks would wait for it)\n"
        else:
            text = (
                f"ended (status 0), but the other ranks had not ended {limit:g} s later (exit_timeout): a rank that "
                "ends while the others go on leaves them waiting for it, so the job is aborted. End every rank "
                "together (comm.barrier() before the end), or pass dist.init(exit_timeout=...) a longer time or None\n"
            )
        _announce(self.world, text)
        self.world.Abort(self.status or 1)


def abort_on_early_exit(mpi: Any, world: Any, exit_timeout: float | None) -> None:
    """A rank exiting before the others ends the job (module docstring) instead of hanging it."""
    if _ExitWatch.installed is None and world.Get_size() > 1:
        _ExitWatch.installed = _ExitWatch(mpi, world, exit_timeout)
