"""Embedded target details that need no machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.targets.embedded import EmbeddedCluster
from kafkalab.targets.share import ARTIFACTS_ON_MACHINE, on_host

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


class Sharing:
    def __init__(self, shared: Path | None) -> None:
        self.shared = shared

    def shared_artifacts(self) -> Path | None:
        return self.shared


def test_archives_in_the_share_are_named_on_the_host_only_when_every_machine_sees_it(
    tmp_path: Path,
) -> None:
    """Each archive of the lab's share gets a `<var>_on_host`; machines that see no share,
    or another dir (one started before the share existed), give none at all."""
    share = tmp_path / "share"
    names = {"kafka_archive": "kafka_2.13-4.3.1-maven.tgz", "kafka_python_wheel": "k.whl"}
    both = [Sharing(share), Sharing(share)]
    assert on_host(names, share, both) == {  # type: ignore[arg-type]
        "kafka_archive_on_host": Path(ARTIFACTS_ON_MACHINE) / "kafka_2.13-4.3.1-maven.tgz",
        "kafka_python_wheel_on_host": Path(ARTIFACTS_ON_MACHINE) / "k.whl",
    }
    assert on_host(names, share, [Sharing(share), Sharing(None)]) == {}  # type: ignore[arg-type]
    assert on_host(names, share, [Sharing(share), Sharing(tmp_path)]) == {}  # type: ignore[arg-type]
    assert on_host(names, share, []) == {}
