"""The tools' class archive kept once per base image and Kafka release: named by the release
archive's recorded hash, offered to the next lab's share, and copied from a machine's root
only as a regular file that is a dynamic archive (no link followed, a size limit)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.targets import class_archive

VERSION = "4.3.1"
ARCHIVE_BYTES = class_archive.MAGIC + b"\0" * 4096


@pytest.fixture
def release(tmp_path: Path) -> Path:
    """A Kafka release archive in a cache, with its recorded hash."""
    tgz = tmp_path / "artifacts" / f"kafka_2.13-{VERSION}-maven.tgz"
    tgz.parent.mkdir()
    tgz.write_bytes(b"tgz")
    tgz.with_name(tgz.name + ".sha512").write_text("ab" * 64 + f"  {tgz.name}\n")
    return tgz


def machine(tmp_path: Path, name: str, content: bytes | None = ARCHIVE_BYTES) -> Path:
    root = tmp_path / name
    release = root / f"opt/kafka_2.13-{VERSION}"
    release.mkdir(parents=True)
    if content is not None:
        (release / class_archive.NAME).write_bytes(content)
    return root


def test_named_by_the_image_and_the_release_archives_hash(tmp_path: Path, release: Path) -> None:
    kept = class_archive.cached(tmp_path / "image", release)
    assert kept == tmp_path / "image/class-archives" / f"{release.name}-{'ab' * 8}.jsa"
    assert class_archive.offer(kept) == {}  # none kept yet: nothing offered
    kept.parent.mkdir(parents=True)
    kept.write_bytes(ARCHIVE_BYTES)
    assert class_archive.offer(kept) == {"kafka_tools_cds_archive": kept}


@pytest.mark.parametrize("recorded", [None, "", "not-a-hash  x.tgz\n"])
def test_a_release_without_a_recorded_hash_keeps_none(
    tmp_path: Path, release: Path, recorded: str | None
) -> None:
    sha = release.with_name(release.name + ".sha512")
    sha.unlink()
    if recorded is not None:
        sha.write_text(recorded)
    assert class_archive.cached(tmp_path / "image", release) is None
    assert (
        class_archive.keep(
            class_archive.cached(tmp_path / "image", release),
            [machine(tmp_path, "kafka1")],
            VERSION,
            0,
        )
        is False
    )


def test_kept_from_the_first_machine_that_has_one(tmp_path: Path, release: Path) -> None:
    kept = class_archive.cached(tmp_path / "image", release)
    assert kept is not None
    roots = [machine(tmp_path, "kafka1", None), machine(tmp_path, "kafka2")]
    assert class_archive.keep(kept, roots, VERSION, 0) is True
    assert kept.read_bytes() == ARCHIVE_BYTES
    assert [p.name for p in kept.parent.iterdir()] == [kept.name]  # no temporary file left
    # a later lab whose machines copied it: nothing to do
    assert class_archive.keep(kept, roots, VERSION, 0) is False
    assert [p.name for p in kept.parent.iterdir()] == [kept.name]
    # one that machines made this `up` in its place (they found the kept one did not fit)
    (roots[1] / class_archive.on_machine(VERSION)).write_bytes(class_archive.MAGIC + b"new")
    assert class_archive.keep(kept, roots, VERSION, 0) is True
    assert kept.read_bytes() == class_archive.MAGIC + b"new"


def test_only_an_archive_this_up_made_is_kept(tmp_path: Path, release: Path) -> None:
    """One made before this `up` began (a machine running since, a learner's) is not."""
    kept = class_archive.cached(tmp_path / "image", release)
    assert kept is not None
    root = machine(tmp_path, "kafka1")
    made = (root / class_archive.on_machine(VERSION)).stat().st_mtime
    assert class_archive.keep(kept, [root], VERSION, since=made + 1) is False
    assert not kept.exists()
    assert class_archive.keep(kept, [root], VERSION, since=made) is True


def test_apaches_checksum_style_names_it_too(tmp_path: Path, release: Path) -> None:
    digest = "AB" * 64
    gpg = " ".join(digest[i : i + 8] for i in range(0, 128, 8))
    release.with_name(release.name + ".sha512").write_text(f"{release.name}: {gpg}\n")
    kept = class_archive.cached(tmp_path / "image", release)
    assert kept is not None and kept.name.endswith(f"-{'ab' * 8}.jsa")


def test_a_cache_that_cannot_be_written_loses_only_the_copy(tmp_path: Path, release: Path) -> None:
    kept = tmp_path / "not-a-dir" / "class-archives" / "x.jsa"
    (tmp_path / "not-a-dir").write_text("a file where the cache's dir would be")
    assert class_archive.keep(kept, [machine(tmp_path, "kafka1")], VERSION, 0) is False


def test_a_link_made_in_the_machine_is_not_followed(tmp_path: Path, release: Path) -> None:
    """A machine cannot make kafkalab copy a host file (one that even looks like an archive)
    into the cache by linking the archive's name to it."""
    kept = class_archive.cached(tmp_path / "image", release)
    assert kept is not None
    host_file = tmp_path / "host-secret"
    host_file.write_bytes(class_archive.MAGIC + b"host secret")
    root = machine(tmp_path, "kafka1", None)
    (root / class_archive.on_machine(VERSION)).symlink_to(host_file)
    assert class_archive.keep(kept, [root], VERSION, 0) is False
    # nor a link on the way (the release dir)
    (root / "opt" / f"kafka_2.13-{VERSION}").rename(root / "opt/elsewhere")
    (root / "opt" / f"kafka_2.13-{VERSION}").symlink_to(tmp_path)
    (tmp_path / class_archive.NAME).write_bytes(ARCHIVE_BYTES)
    assert class_archive.keep(kept, [root], VERSION, 0) is False
    assert not kept.exists()


@pytest.mark.parametrize("content", [b"not an archive at all", class_archive.MAGIC[:2]])
def test_only_a_dynamic_archive_is_kept(tmp_path: Path, release: Path, content: bytes) -> None:
    kept = class_archive.cached(tmp_path / "image", release)
    assert kept is not None
    assert class_archive.keep(kept, [machine(tmp_path, "kafka1", content)], VERSION, 0) is False
    assert list(kept.parent.iterdir()) == []


def test_one_larger_than_the_limit_is_not_kept(
    tmp_path: Path, release: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = class_archive.cached(tmp_path / "image", release)
    assert kept is not None
    monkeypatch.setattr(class_archive, "LIMIT", len(ARCHIVE_BYTES) - 1)
    assert class_archive.keep(kept, [machine(tmp_path, "kafka1")], VERSION, 0) is False
    assert list(kept.parent.iterdir()) == []
