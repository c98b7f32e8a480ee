"""The Kafka tools' class archive (AppCDS) of embedded machines, kept once per base image
and Kafka release.

The kafka_common role dumps that archive on each machine the first time it installs a
release: a tool's start with a dump at its exit, about 3 CPU-s a machine, 9 of a new lab's
~55 on two cores. An archive fits every JVM of the same build that loads the same jars from
the same paths: every embedded machine of one base image (its JDK) with one release archive
(its jars, their sizes and times). So the first lab that makes one gives a copy to the
cache, beside that image, and later labs' machines find it in their share and copy it
(kafka_tools_cds_archive_on_host) instead of dumping it again. A JVM that an archive does
not fit ignores it and says nothing (-Xlog:cds=off): its tools run as without one.

What is trusted: the machines of the labs on one host are that host's user's, so the
cache holds one file a machine made and later labs' JVMs map it. It is kept only when the
`up` that provisioned the machine made it (newer than that `up`'s start), read from the
machine's root without following a link the machine made (kafkalab.targets.rootfs), a
regular file with a dynamic archive's first bytes and at most LIMIT bytes, into a path
kafkalab chose; nothing of it decides a host path. The role maps an offered archive only
after a tool started with it and -Xshare:on, which fails when it does not fit (another
JDK, other jars): it then dumps one of its own, and kafkalab keeps that one instead.
"""

from __future__ import annotations

from pathlib import Path

from kafkalab.artifacts import archive as archive_mod
from kafkalab.artifacts import kafka as kafka_artifact
from kafkalab.errors import KafkalabError
from kafkalab.targets import rootfs

# HotSpot's CDS_DYNAMIC_ARCHIVE_MAGIC, as a little-endian machine writes it first.
MAGIC = (0xF00BABA8).to_bytes(4, "little")
LIMIT = 256 << 20  # a 4.x tools' archive is ~14 MB
NAME = "kafkalab-tools.jsa"  # the kafka_common role's name for it, in the release dir


def cached(image_dir: Path, kafka_archive: Path) -> Path | None:
    """Where the cache keeps the archive made on machines of this image with this Kafka
    release archive, named by the release archive's recorded hash (None when it has none:
    then nothing is kept)."""
    try:
        recorded = kafka_archive.with_name(kafka_archive.name + ".sha512").read_text()
        digest = archive_mod.parse_sha512(recorded)
    except (OSError, UnicodeDecodeError, KafkalabError):
        return None
    return image_dir / "class-archives" / f"{kafka_archive.name}-{digest[:16]}.jsa"


def on_machine(kafka_version: str) -> str:
    """The archive below a machine's root: in the release dir (the kafka role's default
    kafka_install_prefix, which embedded machines keep), not through the /opt/kafka link."""
    return f"opt/{kafka_artifact.release_dir(kafka_version)}/{NAME}"


def offer(cache_path: Path | None) -> dict[str, Path]:
    """The share's entry for the cached archive (kafka_tools_cds_archive), when there is one."""
    return {"kafka_tools_cds_archive": cache_path} if cache_path and cache_path.exists() else {}


def keep(
    cache_path: Path | None, machine_roots: list[Path], kafka_version: str, since: float
) -> bool:
    """Copy into the cache at `cache_path` the archive of the first machine that has one
    made after `since` (by this `up`), unless it is the one kept there already (the machines
    copied that one). True when copied; a cache that cannot be written only loses the copy."""
    if cache_path is None:
        return False
    rel = on_machine(kafka_version)
    try:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        for root in machine_roots:
            copied = rootfs.copy_out(root, rel, cache_path, LIMIT, MAGIC, newer_than=since)
            if copied is not None:
                return copied
    except OSError:
        pass
    return False
