"""A lab step that is stopped (timeout, Ctrl-C) is stopped whole: whatever its script started
goes with it (lab 10's step starts a JVM that would otherwise keep its consumer group). A wait
that times out shows what the brokers logged last."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from kafkalab.errors import KafkalabError
from kafkalab.labs import checks
from kafkalab.labs.checks.base import Verdict
from kafkalab.labs.context import collapse
from kafkalab.labs.definition import LabStep
from kafkalab.labs.solver import Solver
from kafkalab.processes import stop_group

# A step that starts a child which ignores nothing, and one that ignores SIGTERM. The pid is
# printed after the trap: a SIGTERM sent before it killed bash, which then did not wait for
# its child (seen on a loaded machine: the child still dying when the test looked).
SCRIPT = "sleep 60 & trap '' TERM; echo $!; {inner}; wait"


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


def test_a_wait_that_times_out_shows_what_the_brokers_logged(monkeypatch, capsys):
    """An `until` step past its timeout prints each broker's last warnings, then fails."""
    warned = {"kafka1": ["[2026-11-27 06:34:55,000] WARN the leader is gone (3 times)"]}
    ctx = SimpleNamespace(forget_records=lambda: None, broker_warnings=lambda: warned)
    monkeypatch.setattr(checks, "run", lambda _ctx, _spec: ("ISR full", Verdict(["kafka1 out"])))
    step = LabStep.model_validate(
        {"title": "wait", "until": {"kind": "isr_full", "topic": "t"}, "timeout": 0.01}
    )
    time.sleep(0.02)
    with pytest.raises(KafkalabError, match="still not true after 0s: ISR full: kafka1 out"):
        Solver(ctx)._until(step)  # type: ignore[arg-type]
    out = capsys.readouterr().out
    assert "kafka1: the last warnings and errors of its Kafka logs" in out
    assert "WARN the leader is gone (3 times)" in out


def test_repeated_log_messages_are_shown_once_with_their_count_and_last_time():
    lines = [
        "[2026-11-27 06:34:54,158] WARN node 3001 unreachable",
        "[2026-11-27 06:34:55,000] ERROR the leader is gone",
        "[2026-11-27 06:34:56,000] WARN node 3001 unreachable",
        "",
        "a continued line without a time",
    ]
    assert collapse(lines) == [
        "[2026-11-27 06:34:55,000] ERROR the leader is gone",
        "[2026-11-27 06:34:56,000] WARN node 3001 unreachable (2 times)",
        "a continued line without a time",
    ]
