"""The unit tier runs where a user runs kafkalab: in the host's network namespace.

In a whole `make test` session the cluster fixtures have moved the main thread into a test
lab's namespace before this tier runs; a `kafkalab up` started from there is refused (it is
the host's to run), and nothing here is about a lab's network."""

from __future__ import annotations

import ctypes
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.targets import netns
from tests import host_side


def _inode(fd_or_path: int | str) -> int:
    return os.stat(fd_or_path).st_ino


@pytest.fixture(autouse=True)
def _in_the_hosts_namespace() -> Iterator[None]:
    if _inode("/proc/thread-self/ns/net") == _inode(host_side.HOST_NETNS):
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    here = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        if libc.setns(host_side.HOST_NETNS, netns.CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns to the host's namespace")
        yield
    finally:
        libc.setns(here, netns.CLONE_NEWNET)
        os.close(here)


@pytest.fixture
def private_tempdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short private temp dir in place of /tmp for one test (tempfile's and TMPDIR),
    removed after it: the ssh socket dirs kafkalab makes under <tmp>/kafkalab-<uid> go there.
    `make test` runs this tier beside labs whose sockets live in /tmp/kafkalab-<uid>."""
    path = Path(tempfile.mkdtemp(prefix="klu-"))
    monkeypatch.setattr(tempfile, "tempdir", str(path))
    monkeypatch.setenv("TMPDIR", str(path))
    yield path
    shutil.rmtree(path, ignore_errors=True)
