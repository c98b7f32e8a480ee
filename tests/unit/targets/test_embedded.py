"""Embedded target details that need no machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.targets.embedded import EmbeddedCluster

SUN_PATH_MAX = 107  # sockaddr_un.sun_path is 108 bytes with its NUL
SSH_SUFFIX = 40 + 17  # %C is a 40-character hash; ssh adds ".XXXXXXXXXXXXXXXX" while binding


@pytest.fixture(autouse=True)
def _no_litter(private_tempdir: Path) -> None:
    """The control dirs these tests make go to a private temp dir, removed after each."""


def test_ssh_control_path_fits_a_unix_socket_from_a_deep_checkout(tmp_path: Path) -> None:
    deep = tmp_path / ("a-rather-long-directory-name-" * 4) / "main" / ".kafkalab-test" / "kltest"
    lab = EmbeddedCluster(deep)
    assert len(str(lab.control_dir)) + 1 + SSH_SUFFIX <= SUN_PATH_MAX
    assert not str(lab.control_dir).startswith(str(deep))


def test_each_lab_has_its_own_control_dir(tmp_path: Path) -> None:
    one, two = EmbeddedCluster(tmp_path / "one"), EmbeddedCluster(tmp_path / "two")
    assert one.control_dir != two.control_dir
    assert one.control_dir == EmbeddedCluster(tmp_path / "one").control_dir
    assert one.control_dir.stat().st_mode & 0o077 == 0


def test_stale_ssh_masters_are_forgotten(tmp_path: Path) -> None:
    import socket

    lab = EmbeddedCluster(tmp_path / "lab")
    (lab.control_dir / "ansible").mkdir(exist_ok=True)
    paths = [lab.control_dir / ("a" * 8), lab.control_dir / "ansible" / ("b" * 8)]
    socks = []
    for path in paths:
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        socks.append(s)
    keep = lab.control_dir / "not-a-socket"
    keep.write_text("")
    lab._forget_ssh_connections()
    assert not any(p.exists() for p in paths)
    assert keep.exists()
    for s in socks:
        s.close()
