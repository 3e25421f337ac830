"""Anomaly detection is a per-thread switch: a block turns it on in its own thread only."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable

import numpy as np
import pytest

import shapegrad as sg


def _fires() -> bool:
    """Whether an op producing Inf raises here, in the calling thread."""
    with np.errstate(divide="ignore"):
        try:
            sg.log(sg.tensor([0.0]))
        except sg.NumericalAnomalyError:
            return True
    return False


def _in_thread(target: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=target)
    thread.start()
    return thread


def test_a_block_does_not_reach_a_thread_that_never_asked() -> None:
    """issue #24 item 11: detection on in one thread fired in every other thread."""
    seen: list[bool] = []
    with sg.detect_anomaly():
        _in_thread(lambda: seen.append(_fires())).join()
        assert _fires()
    assert seen == [False]


def test_overlapping_blocks_in_two_threads_each_keep_their_own_setting() -> None:
    """issue #24 item 11: A enters, B enters, A leaves (B's block turned off), B leaves
    (detection left on for good, restored to A's detector)."""
    b_entered, a_left, b_checked = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def b() -> None:
        with sg.detect_anomaly():
            b_entered.set()
            a_left.wait(10)
            seen["B inside its block after A left"] = _fires()
        seen["B after its block"] = _fires()
        b_checked.set()

    with sg.detect_anomaly():
        thread = _in_thread(b)
        b_entered.wait(10)
    a_left.set()
    b_checked.wait(10)
    thread.join()
    seen["A after its block"] = _fires()
    assert seen == {"B inside its block after A left": True, "B after its block": False, "A after its block": False}


def test_turning_detection_off_in_one_thread_leaves_the_others_on() -> None:
    """issue #24 item 11: ``detect_anomaly(False)`` in a thread turned it off in every thread."""
    entered, checked = threading.Event(), threading.Event()
    seen: list[bool] = []

    def other() -> None:
        with sg.detect_anomaly(False):
            entered.set()
            checked.wait(10)
            seen.append(_fires())

    with sg.detect_anomaly():
        thread = _in_thread(other)
        entered.wait(10)
        seen.append(_fires())
        checked.set()
        thread.join()
    assert seen == [True, False]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_backward_pass_checks_only_in_the_thread_with_detection_on() -> None:
    """issue #24 item 11: the backward check follows the thread that runs ``backward``."""

    def sqrt_backward_at_zero() -> bool:
        grads = sg.Gradients()
        x = sg.tensor([0.0, 4.0]).trace(grads)
        try:
            x.sqrt().sum().backward()  # finite forward, infinite gradient at 0
        except sg.NumericalAnomalyError:
            return True
        return False

    seen: list[bool] = []
    with sg.detect_anomaly():
        _in_thread(lambda: seen.append(sqrt_backward_at_zero())).join()
        seen.append(sqrt_backward_at_zero())
    assert seen == [False, True]


def test_the_environment_variable_turns_detection_on_in_every_thread() -> None:
    """issue #24 item 11 (kept while making the switch per thread): ``SHAPEGRAD_DETECT_ANOMALY=1``
    is the process's setting, so new threads start with detection on too."""
    code = (
        "import threading, numpy as np, shapegrad as sg\n"
        "np.seterr(all='ignore')\n"
        "def f():\n"
        "    try:\n"
        "        sg.tensor([1.0]) / 0.0\n"
        "    except sg.NumericalAnomalyError:\n"
        "        print('thread caught')\n"
        "t = threading.Thread(target=f); t.start(); t.join()\n"
        "with sg.detect_anomaly(False):\n"
        "    sg.tensor([1.0]) / 0.0\n"
        "print('off in a block')\n"
    )
    env = {**os.environ, "SHAPEGRAD_DETECT_ANOMALY": "1"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert result.stdout.split("\n")[:2] == ["thread caught", "off in a block"], result.stderr
