"""Embedded target details that need no machine."""

from __future__ import annotations

from pathlib import Path

from kafkalab.targets import EmbeddedLab

SUN_PATH_MAX = 107  # sockaddr_un.sun_path is 108 bytes with its NUL
SSH_SUFFIX = 40 + 17  # %C is a 40-character hash; ssh adds ".XXXXXXXXXXXXXXXX" while binding


def test_ssh_control_path_fits_a_unix_socket_from_a_deep_checkout(tmp_path: Path) -> None:
    deep = tmp_path / ("a-rather-long-directory-name-" * 4) / "main" / ".kafkalab-test" / "kltest"
    lab = EmbeddedLab(deep)
    assert len(str(lab.control_dir)) + 1 + SSH_SUFFIX <= SUN_PATH_MAX
    assert not str(lab.control_dir).startswith(str(deep))


def test_each_lab_has_its_own_control_dir(tmp_path: Path) -> None:
    one, two = EmbeddedLab(tmp_path / "one"), EmbeddedLab(tmp_path / "two")
    assert one.control_dir != two.control_dir
    assert one.control_dir == EmbeddedLab(tmp_path / "one").control_dir
    assert one.control_dir.stat().st_mode & 0o077 == 0
