"""Stopping what kafkalab started: a lab step, a Spark job, their children."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess


def stop_group(proc: subprocess.Popen[bytes], grace: float = 15) -> None:
    """Stop a process started with start_new_session=True and everything it started (its
    session's process group), as Ctrl-C would: SIGTERM first, so a JVM runs its shutdown
    hooks (a Kafka Streams app leaves its group, spark-submit stops its driver), then
    SIGKILL if anything is left after `grace` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.communicate(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
