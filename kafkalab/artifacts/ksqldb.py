"""The Confluent Platform community archive the `ksqldb` role installs.

ksqlDB is not on Maven Central or PyPI; it ships in Confluent's community archive
(`confluent-community-<version>.tar.gz`, top dir `confluent-<version>/` with
`bin/ksql-server-start` and `etc/ksqldb/`). `resolve_ksqldb` returns it from the artifact
cache, checked against the `.sha256` next to it; with `KAFKALAB_CONFLUENT_MIRROR` set (https
or a local directory) it downloads both from `<mirror>/<major.minor>/` first (checked, kept
in the cache). The lab machines never download anything: the role copies the archive from
the controller.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from kafkalab.artifacts.archive import download_file, mirror_url, verify_digest
from kafkalab.artifacts.cache import cache_dir, cache_lock
from kafkalab.errors import KafkalabError

CONFLUENT_VERSION = "7.9.0"  # ksqlDB of Confluent Platform 7.9 runs against Kafka 3.9
MIRROR_ENV = "KAFKALAB_CONFLUENT_MIRROR"
ARCHIVE_SITE = "https://packages.confluent.io/archive"
_SHA256 = re.compile(r"\b([0-9a-fA-F]{64})\b")


def archive_name(version: str = CONFLUENT_VERSION) -> str:
    return f"confluent-community-{version}.tar.gz"


def archive_path(version: str = CONFLUENT_VERSION, cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / archive_name(version)


def where_from(version: str = CONFLUENT_VERSION) -> str:
    minor = ".".join(version.split(".")[:2])
    return f"{ARCHIVE_SITE}/{minor}/{archive_name(version)}"


def missing_message(version: str = CONFLUENT_VERSION, cache: Path | None = None) -> str:
    """What to do when the archive is not in the cache (skip messages, preflight, CLI)."""
    target = archive_path(version, cache)
    return (
        f"ksqlDB needs {target.name} and {target.name}.sha256 (Confluent Platform community"
        f" {version}, {where_from(version)}) in {target.parent}/; the lab machines cannot"
        " download it"
    )


def parse_sha256(text: str) -> str:
    """The hex digest in a `.sha256` file (`<hex>  file` or just `<hex>`)."""
    match = _SHA256.search(text)
    if match is None:
        raise KafkalabError("not a SHA-256 checksum file: expected 64 hex digits")
    return match.group(1).lower()


def verify_sha256(archive: Path, checksum: Path | None = None) -> None:
    checksum = checksum or archive.with_name(archive.name + ".sha256")
    where = f"from the same place, {where_from()}.sha256"
    verify_digest(archive, checksum, "sha256", parse_sha256, where)


def cached(version: str = CONFLUENT_VERSION, cache: Path | None = None) -> Path | None:
    """The verified archive when it is in the cache, else None."""
    target = archive_path(version, cache)
    if not target.exists():
        return None
    verify_sha256(target)
    return target


def resolve_ksqldb(version: str = CONFLUENT_VERSION, cache: Path | None = None) -> Path:
    """The verified Confluent community archive: from the cache, else from the mirror."""
    found = cached(version, cache)
    if found is not None:
        return found
    mirror = mirror_url(MIRROR_ENV)
    if not mirror:
        raise KafkalabError(missing_message(version, cache) + f" (or set {MIRROR_ENV})")
    target = archive_path(version, cache)
    with cache_lock(target, f"Confluent {version}"):
        return cached(version, cache) or download(mirror, version, target.parent)


def download(mirror: str, version: str, cache: Path) -> Path:
    minor = ".".join(version.split(".")[:2])
    name = archive_name(version)
    url = f"{mirror.rstrip('/')}/{minor}/{name}"
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".download-", dir=cache) as tmp:
        archive, checksum = Path(tmp) / name, Path(tmp) / f"{name}.sha256"
        download_file(url + ".sha256", checksum, f"Check {MIRROR_ENV}.")
        download_file(url, archive, f"Check {MIRROR_ENV}.")
        verify_sha256(archive, checksum)
        checksum.replace(cache / checksum.name)
        archive.replace(cache / name)
    return cache / name


def status(version: str = CONFLUENT_VERSION, cache: Path | None = None) -> str:
    """One line for `kafkalab spark fetch` and skip messages."""
    try:
        found = cached(version, cache)
    except KafkalabError as exc:
        return str(exc)
    return f"{found} (checked)" if found else missing_message(version, cache)
