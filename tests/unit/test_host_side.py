"""tests/host_side.py: what the fixtures run on the host."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from kafkalab.paths import repo_root
from tests import host_side


@pytest.mark.skipif(os.geteuid() != 0, reason="setns to the host's namespace needs root")
def test_a_ctrl_c_waits_for_what_runs_on_the_host_to_end():
    """The Ctrl-C lands in the main thread while the host-side thread still runs its command;
    on_host raises only after that command ended, so a teardown that follows does not meet
    it (the interrupted `up` held the lab's lock and the teardown's purge was refused)."""
    ended: list[float] = []

    def command() -> None:
        time.sleep(1.0)
        ended.append(time.monotonic())

    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        host_side.on_host(command)
    raised = time.monotonic()
    timer.join()
    assert ended and ended[0] <= raised


SCRIPT = """
import os, signal, sys, threading
sys.path.insert(0, {repo!r})
from kafkalab.paths import repo_root
from tests import host_side
# Ctrl-C at a terminal: SIGINT to the whole process group, while `down` runs
threading.Timer(0.5, os.killpg, (0, signal.SIGINT)).start()
try:
    host_side.kafkalab(dict(os.environ), "down", "--purge", check=False)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="setns to the host's namespace needs root")
def test_a_ctrl_c_does_not_stop_a_teardowns_purge_halfway(tmp_path):
    """A Ctrl-C that lands while a fixture's `down --purge` runs (the run is being stopped)
    interrupts the test run, not the purge: it ends, and only then does the run stop. Here
    `python -m kafkalab` finds a stand-in in the working dir that takes 2 s and says it ended;
    the script runs in a process group of its own, so the Ctrl-C stays inside it."""
    stand_in = tmp_path / "kafkalab"
    stand_in.mkdir()
    (stand_in / "__init__.py").write_text("")
    ended = tmp_path / "ended"
    (stand_in / "__main__.py").write_text(
        f"import time\ntime.sleep(2)\nopen({str(ended)!r}, 'w').close()\n"
    )
    script = SCRIPT.format(repo=str(repo_root()))
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        start_new_session=True,
        timeout=60,
    )
    assert "interrupted" in proc.stdout, proc.stdout + proc.stderr
    assert ended.exists(), "the purge was stopped by the Ctrl-C"
