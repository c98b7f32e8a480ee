"""A lab's share of its archives: copies in `<state>/share`, which every embedded machine
sees read-only at ARTIFACTS_ON_MACHINE, so the roles unpack the Kafka, Spark and ksqlDB
archives there (remote_src) instead of Ansible copying each one into each machine (Mitogen
moves ~25 MB/s in all: 52 MB of Kafka to three machines took 5-6 s of a new lab's `up`,
Spark's 443 MB much longer).

Copies, not the cache itself: a machine's root keeps nspawn's CAP_SYS_ADMIN and can remount
its view writable; what it changes then is its own lab's copy, never the cache other labs
read. Each `up` checks every copy against the cache before the roles use it and writes a new
one where they differ, without following anything a machine put in the share (as kafkalab
writes into a machine's root: kafkalab.targets.rootfs).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from kafkalab.artifacts import kafka_python as kafka_python_artifact
from kafkalab.artifacts import ksqldb as ksqldb_artifact
from kafkalab.artifacts import spark as spark_artifact
from kafkalab.targets import rootfs

ARTIFACTS_ON_MACHINE = "/var/cache/kafkalab/artifacts"


class Sharing(Protocol):
    def shared_artifacts(self) -> Path | None: ...


def extra_archives(extra_hosts: Sequence[str], progress: Callable[[str], None]) -> dict[str, Path]:
    """The kafka-python wheel, and the Spark and ksqlDB archives the extra hosts need, found
    (or built) before any machine boots: a missing one says where to put it."""
    found = {"kafka_python_wheel": kafka_python_artifact.resolve_kafka_python(progress=progress)}
    if "spark" in extra_hosts:
        found["spark_archive"] = spark_artifact.resolve_spark(progress=progress)
    if "ksqldb" in extra_hosts:
        found["ksqldb_archive"] = ksqldb_artifact.resolve_ksqldb()
    return found


def fill(share: Path, archives: dict[str, Path]) -> dict[str, str]:
    """Make `share` hold a copy of each archive under its own name; returns, for each
    variable, the file's name in the share. A copy that differs from the cache in any byte
    (or is not a regular file) is written again."""
    share.mkdir(mode=0o755, exist_ok=True)
    for archive in archives.values():
        rootfs.copy_file(share, archive.name, archive)
    return {var: archive.name for var, archive in archives.items()}


def on_host(names: dict[str, str], share_dir: Path, machines: Sequence[Sharing]) -> dict[str, Path]:
    """`<var>_on_host` for each archive in the lab's share (`names`: its file name there),
    when every machine sees that share (the roles then unpack it there instead of copying it
    in); none when a machine does not (it runs since before the share existed)."""
    if not machines or any(m.shared_artifacts() != share_dir for m in machines):
        return {}
    return {f"{var}_on_host": Path(ARTIFACTS_ON_MACHINE) / name for var, name in names.items()}


def bind_ro(shared: Path | None, note: Path) -> str:
    """nspawn's argument that shares `shared` read-only at ARTIFACTS_ON_MACHINE, quoted for
    the launcher, noted in `note` with its inode ("" and no note: none, or a path with a
    ':', which --bind-ro cannot take)."""
    note.unlink(missing_ok=True)
    if shared is None or ":" in str(shared) or not shared.is_dir():
        return ""
    st = shared.stat()
    note.write_text(f"{st.st_dev}:{st.st_ino} {shared}\n")
    return shlex.quote(f"--bind-ro={shared}:{ARTIFACTS_ON_MACHINE}")


def noted(note: Path) -> Path | None:
    """The dir a running machine shares: the one noted at its start, if that path is still
    the same directory (one removed and made again since is another inode, which the
    machine's mount does not show)."""
    try:
        ident, path = note.read_text().rstrip("\n").split(" ", 1)
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return Path(path) if ident == f"{st.st_dev}:{st.st_ino}" else None
