"""`kafkalab up` from inside a lab's network (a `kafkalab shell`) is refused in one line
before anything is made: its forwarder would listen on that network's loopback."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def lab_ns() -> Iterator[str]:
    assert os.geteuid() == 0, "the unit tier runs as root (it makes network namespaces)"
    name = f"klt-upin-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    yield name
    subprocess.run(["ip", "netns", "delete", name], capture_output=True, check=False)


def test_up_inside_a_lab_network_is_refused_before_anything_is_made(lab_ns, tmp_path: Path):
    state = tmp_path / "state"
    env = dict(os.environ, KAFKALAB_STATE=str(state), KAFKALAB_NETNS="klt-upin-new")
    proc = subprocess.run(
        ["ip", "netns", "exec", lab_ns, sys.executable, "-m", "kafkalab", "up"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == [
        f"error: kafkalab up runs on the host: this shell is inside lab network {lab_ns} "
        "(kafkalab shell): leave it with `exit` and run kafkalab up again"
    ], proc.stderr
    assert not state.exists()
    assert not Path("/run/netns/klt-upin-new").exists()


def test_booting_machines_only_is_not_refused_there(lab_ns, tmp_path: Path):
    """`up --no-provision` starts no forwarder: a molecule scenario boots its machine from
    its own namespace. It gets past the check (here it stops at the bad topology file)."""
    env = dict(os.environ, KAFKALAB_STATE=str(tmp_path / "state"), KAFKALAB_NETNS="klt-upin-new")
    proc = subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            lab_ns,
            sys.executable,
            "-m",
            "kafkalab",
            "up",
            "--no-provision",
            "-t",
            str(tmp_path / "missing.yml"),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "runs on the host" not in proc.stderr and "missing.yml" in proc.stderr, proc.stderr
