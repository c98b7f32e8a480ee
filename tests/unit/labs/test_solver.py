"""A lab step that is stopped (timeout, Ctrl-C) is stopped whole: whatever its script started
goes with it (lab 10's step starts a JVM that would otherwise keep its consumer group)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from kafkalab.processes import stop_group

# A step that starts a child which ignores nothing, and one that ignores SIGTERM.
SCRIPT = "sleep 60 & echo $!; trap '' TERM; {inner}; wait"


def _step(inner: str) -> tuple[subprocess.Popen[bytes], int]:
    proc = subprocess.Popen(
        ["bash", "-c", SCRIPT.format(inner=inner)],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    return proc, child


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_a_stopped_step_takes_its_children_with_it():
    proc, child = _step("true")
    stop_group(proc, grace=5)
    assert proc.returncode is not None
    assert _gone(child)


def test_a_step_that_ignores_sigterm_is_killed_after_the_grace():
    proc, child = _step("sleep 60 & wait")
    started = time.monotonic()
    stop_group(proc, grace=0.5)
    assert proc.returncode is not None and _gone(child)
    assert time.monotonic() - started < 5
