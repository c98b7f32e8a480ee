"""The Confluent archive step (kafkalab.artifacts.ksqldb): from the cache, checked against its
.sha256, or from a mirror; the message when it is missing."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from kafkalab.artifacts import ksqldb as ksqldb_artifact
from kafkalab.errors import KafkalabError


def _archive(cache: Path, body: bytes = b"not really a tarball") -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / ksqldb_artifact.archive_name()
    path.write_bytes(body)
    return path


def test_missing_archive_names_the_file_and_where_to_put_it(tmp_path, monkeypatch):
    monkeypatch.delenv(ksqldb_artifact.MIRROR_ENV, raising=False)
    with pytest.raises(KafkalabError) as exc:
        ksqldb_artifact.resolve_ksqldb(cache=tmp_path)
    message = str(exc.value)
    assert "confluent-community-7.9.0.tar.gz" in message
    assert str(tmp_path) in message
    assert "packages.confluent.io/archive/7.9/" in message


def test_archive_is_checked_against_its_sha256(tmp_path):
    path = _archive(tmp_path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    (tmp_path / (path.name + ".sha256")).write_text(f"{digest}  {path.name}\n")
    assert ksqldb_artifact.resolve_ksqldb(cache=tmp_path) == path
    (tmp_path / (path.name + ".sha256")).write_text("0" * 64 + "\n")
    with pytest.raises(KafkalabError, match="does not match"):
        ksqldb_artifact.resolve_ksqldb(cache=tmp_path)


def test_archive_without_checksum_is_refused(tmp_path):
    _archive(tmp_path)
    with pytest.raises(KafkalabError, match="no checksum file"):
        ksqldb_artifact.resolve_ksqldb(cache=tmp_path)


def test_mirror_download_is_verified_and_kept(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror" / "7.9"
    src = _archive(mirror, b"archive bytes")
    digest = hashlib.sha256(b"archive bytes").hexdigest()
    (mirror / (src.name + ".sha256")).write_text(digest + "\n")
    monkeypatch.setenv(ksqldb_artifact.MIRROR_ENV, (tmp_path / "mirror").as_uri())
    cache = tmp_path / "cache"
    got = ksqldb_artifact.resolve_ksqldb(cache=cache)
    assert got == cache / src.name and got.read_bytes() == b"archive bytes"
    assert (cache / (src.name + ".sha256")).exists()
