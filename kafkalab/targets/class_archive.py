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

The copy is read from the machine's root without following a link the machine made
(kafkalab.targets.rootfs), only if it is a dynamic archive by its first bytes and not
larger than LIMIT, into a path kafkalab chose.
"""

from __future__ import annotations

import re
from pathlib import Path

from kafkalab.artifacts import kafka as kafka_artifact
from kafkalab.targets import rootfs

# HotSpot's CDS_DYNAMIC_ARCHIVE_MAGIC, as a little-endian machine writes it first.
MAGIC = (0xF00BABA8).to_bytes(4, "little")
LIMIT = 256 << 20  # a 4.x tools' archive is ~14 MB
NAME = "kafkalab-tools.jsa"  # the role's name for it, in the release dir


def cached(image_dir: Path, kafka_archive: Path) -> Path | None:
    """Where the cache keeps the archive made on machines of this image with this Kafka
    release archive, named by the release archive's recorded hash (None when it has none:
    then nothing is kept)."""
    try:
        digest = kafka_archive.with_name(kafka_archive.name + ".sha512").read_text().split()[0]
    except (OSError, IndexError):
        return None
    if not re.fullmatch(r"[0-9a-f]{128}", digest):
        return None
    return image_dir / "class-archives" / f"{kafka_archive.name}-{digest[:16]}.jsa"


def on_machine(kafka_version: str) -> str:
    """The archive below a machine's root: in the release dir (the kafka role's default
    kafka_install_prefix, which embedded machines keep), not through the /opt/kafka link."""
    return f"opt/kafka_{kafka_artifact.DEFAULT_SCALA}-{kafka_version}/{NAME}"


def offer(cache_path: Path | None) -> dict[str, Path]:
    """The share's entry for the cached archive (kafka_tools_cds_archive), when there is one."""
    return {"kafka_tools_cds_archive": cache_path} if cache_path and cache_path.exists() else {}


def keep(cache_path: Path | None, machine_roots: list[Path], kafka_version: str) -> bool:
    """Copy the archive of the first machine that has one into the cache at `cache_path`,
    unless it holds one already (True when copied)."""
    if cache_path is None or cache_path.exists():
        return False
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    rel = on_machine(kafka_version)
    return any(rootfs.copy_out(root, rel, cache_path, LIMIT, MAGIC) for root in machine_roots)
