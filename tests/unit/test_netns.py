"""netns.inside: the calling thread goes into a namespace and comes back, even on errors."""

from __future__ import annotations

import os
import subprocess

import pytest

from kafkalab import netns


@pytest.fixture
def scratch_ns():
    if os.geteuid() != 0:
        pytest.skip("creating a network namespace needs root")
    name = f"kltest-unit-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "delete", name], check=False)


def test_inside_returns_to_the_original_namespace(scratch_ns):
    before = os.stat("/proc/thread-self/ns/net").st_ino
    with netns.inside(scratch_ns):
        assert netns.current() == scratch_ns
    assert os.stat("/proc/thread-self/ns/net").st_ino == before
    with pytest.raises(RuntimeError), netns.inside(scratch_ns):
        raise RuntimeError("boom")
    assert os.stat("/proc/thread-self/ns/net").st_ino == before
