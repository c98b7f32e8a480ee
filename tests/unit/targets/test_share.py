"""targets.share: a lab's copies of its archives, checked against the cache at every `up`,
and written again without following anything a machine put in the share."""

from __future__ import annotations

import os
from pathlib import Path

from kafkalab.targets import share


def archive(tmp_path: Path, name: str = "kafka.tgz", data: bytes = b"k" * 3_000_000) -> Path:
    cache = tmp_path / "cache"
    cache.mkdir(exist_ok=True)
    path = cache / name
    path.write_bytes(data)
    return path


def test_copies_are_made_once_and_kept_while_identical(tmp_path: Path) -> None:
    src = archive(tmp_path)
    dest = tmp_path / "share"
    assert share.fill(dest, {"kafka_archive": src}) == {"kafka_archive": "kafka.tgz"}
    copy = dest / "kafka.tgz"
    assert copy.read_bytes() == src.read_bytes()
    assert copy.stat().st_ino != src.stat().st_ino  # a copy, not a link to the cache
    assert oct(copy.stat().st_mode & 0o777) == "0o644"
    inode = copy.stat().st_ino
    share.fill(dest, {"kafka_archive": src})
    assert copy.stat().st_ino == inode  # identical: left as it was


def test_a_changed_copy_is_written_again_and_the_cache_never_touched(tmp_path: Path) -> None:
    """A machine that remounts its view writable changes its lab's copy: the next fill puts
    the cache's bytes back, the same size or not."""
    src = archive(tmp_path)
    dest = tmp_path / "share"
    share.fill(dest, {"kafka_archive": src})
    copy = dest / "kafka.tgz"
    tampered = bytearray(copy.read_bytes())
    tampered[2_500_000] ^= 1
    copy.write_bytes(bytes(tampered))
    share.fill(dest, {"kafka_archive": src})
    assert copy.read_bytes() == src.read_bytes()
    copy.write_bytes(b"short")
    share.fill(dest, {"kafka_archive": src})
    assert copy.read_bytes() == src.read_bytes() == b"k" * 3_000_000


def test_links_and_dirs_a_machine_plants_are_replaced_never_followed(tmp_path: Path) -> None:
    """A link at the archive's name to a host file, and a directory at the archive's name
    holding a link to a host directory: the host's files stay, the share gets regular files
    (the new copy is written under a random name and renamed over the planted one)."""
    src = archive(tmp_path)
    wheel = archive(tmp_path, "k.whl", b"wheel")
    dest = tmp_path / "share"
    dest.mkdir()
    victim = tmp_path / "host-file"
    victim.write_text("do not touch\n")
    (dest / "kafka.tgz").symlink_to(victim)
    (dest / "k.whl").mkdir()
    (dest / "k.whl" / "host-dir").symlink_to(tmp_path)
    share.fill(dest, {"kafka_archive": src, "kafka_python_wheel": wheel})
    assert victim.read_text() == "do not touch\n" and (tmp_path / "share").is_dir()
    for name, original in (("kafka.tgz", src), ("k.whl", wheel)):
        assert not (dest / name).is_symlink() and (dest / name).is_file()
        assert (dest / name).read_bytes() == original.read_bytes()
    assert sorted(os.listdir(dest)) == ["k.whl", "kafka.tgz"]
