"""rootfs: writes from the host into a machine's root never follow a link the machine made."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkalab.errors import KafkalabError
from kafkalab.targets import rootfs


@pytest.fixture
def machine(tmp_path: Path) -> tuple[Path, Path]:
    """A machine root and, beside it, a 'host' file the machine must never reach."""
    root = tmp_path / "root"
    (root / "home/vagrant/.ssh").mkdir(parents=True)
    host_file = tmp_path / "host-shadow"
    host_file.write_text("root:secret\n")
    host_file.chmod(0o640)
    return root, host_file


def test_writes_a_new_file_with_mode_and_owner(machine: tuple[Path, Path]) -> None:
    root, _ = machine
    assert rootfs.write_text(root, "etc/hostname", "kafka1\n", owner=(1000, 1000))
    path = root / "etc/hostname"
    assert path.read_text() == "kafka1\n"
    st = path.stat()
    assert (st.st_mode & 0o7777, st.st_uid, st.st_gid) == (0o644, 1000, 1000)
    # The same content again changes nothing.
    assert not rootfs.write_text(root, "etc/hostname", "kafka1\n", owner=(1000, 1000))


def test_a_file_link_is_replaced_not_followed(machine: tuple[Path, Path]) -> None:
    root, host_file = machine
    keys = root / "home/vagrant/.ssh/authorized_keys"
    keys.symlink_to(host_file)  # what `ln -sf /etc/shadow ~vagrant/.ssh/authorized_keys` does
    rootfs.write_text(
        root,
        "home/vagrant/.ssh/authorized_keys",
        "ssh-ed25519 AAAA kafkalab\n",
        mode=0o600,
        owner=(1000, 1000),
        dir_owner=(1000, 1000),
    )
    assert host_file.read_text() == "root:secret\n"
    st = host_file.stat()
    assert (st.st_mode & 0o7777, st.st_uid) == (0o640, os.getuid())
    assert not keys.is_symlink() and keys.read_text() == "ssh-ed25519 AAAA kafkalab\n"
    assert keys.stat().st_uid == 1000 and (root / "home/vagrant/.ssh").stat().st_uid == 1000


def test_a_new_directory_gets_the_mode_asked_for(machine: tuple[Path, Path]) -> None:
    root, _ = machine
    assert rootfs.write_text(root, "root/.ssh/authorized_keys", "k\n", mode=0o600, dir_mode=0o700)
    assert (root / "root/.ssh").stat().st_mode & 0o7777 == 0o700
    (root / "root/.ssh").chmod(0o777)  # the machine opened it up: put back, the file kept
    assert not rootfs.write_text(
        root, "root/.ssh/authorized_keys", "k\n", mode=0o600, dir_mode=0o700
    )
    assert (root / "root/.ssh").stat().st_mode & 0o7777 == 0o700


def test_a_directory_link_is_refused(machine: tuple[Path, Path], tmp_path: Path) -> None:
    root, _ = machine
    outside = tmp_path / "host-etc"
    outside.mkdir()
    (root / "etc").symlink_to(outside)
    with pytest.raises(KafkalabError, match=r"/etc in the machine .* is a link"):
        rootfs.write_text(root, "etc/hostname", "kafka1\n")
    assert list(outside.iterdir()) == []


def test_reading_a_link_reads_nothing(machine: tuple[Path, Path]) -> None:
    root, host_file = machine
    (root / "etc").mkdir()
    (root / "etc/hosts").symlink_to(host_file)
    assert rootfs.read_text(root, "etc/hosts") is None
    (root / "etc/hosts").unlink()
    (root / "etc/hosts").write_text("127.0.0.1 localhost\n")
    assert rootfs.read_text(root, "etc/hosts") == "127.0.0.1 localhost\n"
    assert rootfs.read_text(root, "etc/missing") is None


@pytest.mark.parametrize("bad", ["../escape", "etc/../../x", "", "/"])
def test_only_plain_relative_paths(machine: tuple[Path, Path], bad: str) -> None:
    root, _ = machine
    with pytest.raises(ValueError):
        rootfs.write_text(root, bad, "x")


def test_a_fifo_neither_hangs_nor_is_read(machine: tuple[Path, Path]) -> None:
    """`mkfifo ~/.ssh/authorized_keys` in the machine must not hang the host's `up`."""
    root, _ = machine
    keys = root / "home/vagrant/.ssh/authorized_keys"
    os.mkfifo(keys)
    (root / "etc").mkdir()
    os.mkfifo(root / "etc/hosts")
    assert rootfs.read_text(root, "etc/hosts") is None
    assert rootfs.write_text(root, "home/vagrant/.ssh/authorized_keys", "ssh-ed25519 A\n")
    assert keys.is_file() and keys.read_text() == "ssh-ed25519 A\n"


def test_a_directory_made_at_the_name_is_removed_without_following_its_links(
    machine: tuple[Path, Path],
) -> None:
    root, host_file = machine
    planted = root / "etc/hosts"
    planted.mkdir(parents=True)
    (planted / "to-host").symlink_to(host_file.parent)
    assert rootfs.write_text(root, "etc/hosts", "127.0.0.1 localhost\n")
    assert planted.is_file() and planted.read_text() == "127.0.0.1 localhost\n"
    assert host_file.read_text() == "root:secret\n"
    assert sorted(os.listdir(root / "etc")) == ["hosts"]  # no temp file left


def test_copy_file_copies_in_blocks_and_only_when_the_bytes_differ(
    machine: tuple[Path, Path], tmp_path: Path
) -> None:
    root, host_file = machine
    source = tmp_path / "kafka.tgz"
    source.write_bytes(os.urandom(rootfs.CHUNK * 2 + 5))
    (root / "share").mkdir()
    (root / "share/kafka.tgz").symlink_to(host_file)
    assert rootfs.copy_file(root, "share/kafka.tgz", source)
    assert (root / "share/kafka.tgz").read_bytes() == source.read_bytes()
    assert host_file.read_text() == "root:secret\n"
    assert not rootfs.copy_file(root, "share/kafka.tgz", source)
    with (root / "share/kafka.tgz").open("r+b") as f:  # one byte changed past the first block
        f.seek(rootfs.CHUNK + 1)
        f.write(b"\0" if source.read_bytes()[rootfs.CHUNK + 1] else b"\1")
    assert rootfs.copy_file(root, "share/kafka.tgz", source)
    assert (root / "share/kafka.tgz").read_bytes() == source.read_bytes()
