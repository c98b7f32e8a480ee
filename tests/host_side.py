"""The learner's desk in the tests: the network namespace pytest started in (the host's, where
kafkalab's forwarder listens on 127.0.0.1) and host ports of a test lab's own.

The cluster fixtures join their lab's namespace with the main thread; a client that must run
on the host (a notebook against localhost:9092) runs in a thread moved back here. The
namespace is captured when this module is imported: tests/conftest.py imports it, before
any fixture joins a lab. A test lab's host ports are free ports picked at random, never
the defaults, so a learner's lab on 9092 and a test run never meet.
"""

from __future__ import annotations

import ctypes
import os
import random
import subprocess
import sys
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import yaml

from kafkalab.errors import KafkalabError
from kafkalab.targets import forward, netns
from kafkalab.topology import Topology

T = TypeVar("T")
HOST_NETNS = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
# Below Linux's ephemeral range (32768-60999), above the well-known services.
PORTS = (20000, 32000)


def on_host(fn: Callable[[], T]) -> T:
    """Run `fn` in a thread in the host's namespace (the one pytest started in)."""
    result: list[T] = []
    error: list[BaseException] = []
    ended = threading.Event()

    def target() -> None:
        try:
            if ctypes.CDLL(None, use_errno=True).setns(HOST_NETNS, netns.CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns to the host's namespace")
            result.append(fn())
        except BaseException as exc:
            error.append(exc)
        finally:
            ended.set()

    thread = threading.Thread(target=target, name="host-side")
    thread.start()
    try:
        ended.wait()
    except BaseException:
        # A Ctrl-C lands in this (the main) thread, not in `fn`'s: a command `fn` runs got it
        # too (one process group) and is still ending its own way. Raising now sent a
        # fixture's teardown (`down --purge`) to a lab the interrupted `up` still held locked:
        # the purge was refused and the lab kept running. Wait for `fn`; a second Ctrl-C
        # stops waiting. (An Event: Python 3.11's Thread.join, interrupted, marks the thread
        # ended while it still runs, and a second join returns at once.)
        ended.wait()
        raise
    thread.join()
    if error:
        raise error[0]
    return result[0]


def topology_file(path: Path, **settings: object) -> Path:
    """A topology file with `settings` and host ports free on this host right now."""
    for _ in range(50):
        base = random.randrange(PORTS[0], PORTS[1] - 20)
        ports = {
            "host_kafka_port": base,
            "host_spark_ui_port": base + 10,
            "host_spark_job_ui_port": base + 11,
            "host_ksqldb_port": base + 12,
        }
        # every port checked, whichever extra hosts the lab gets
        topo = Topology.model_validate({**settings, **ports, "extra_hosts": ["spark", "ksqldb"]})
        try:
            on_host(partial(forward.check_free, forward.plan(topo)))
        except KafkalabError:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump({**settings, **ports}, sort_keys=False))
        return path
    raise AssertionError(f"no free block of host ports in {PORTS}")


def kafkalab(
    env: dict[str, str], *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """`python -m kafkalab args` with `env`. `up`, `down` and `lab` run where a learner runs
    them, on the host: the lab's forwarded ports are bound there, whichever lab's namespace the
    calling thread has joined (the fixtures' main thread has)."""

    def run() -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "kafkalab", *args]
        # `down` in a session of its own: the Ctrl-C that stops a test run does not stop a
        # fixture's teardown purge halfway (it left the lab's machines running) and on_host
        # waits for the purge to end.
        alone = args[:1] == ("down",)
        return subprocess.run(cmd, capture_output=True, text=True, env=env, start_new_session=alone)

    # `lab` too: a lab's solve may run `kafkalab up` on the host as the learner would (lab 14)
    proc = on_host(run) if args[:1] in (("up",), ("down",), ("lab",)) else run()
    if check and proc.returncode != 0:
        raise AssertionError(
            f"kafkalab {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
        )
    return proc
