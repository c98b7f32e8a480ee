"""What this machine has and lacks for kafkalab, with the fix for each."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from kafkalab.artifacts import cache as artifact_cache
from kafkalab.artifacts import kafka as kafka_artifact
from kafkalab.artifacts import ksqldb as ksqldb_artifact
from kafkalab.artifacts import spark as spark_artifact
from kafkalab.errors import KafkalabError
from kafkalab.paths import cache_root
from kafkalab.targets import image, resolve, vagrant
from kafkalab.targets.cluster import InventoryCluster


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def _which(tool: str, fix: str) -> Check:
    path = shutil.which(tool)
    return Check(tool, path is not None, path or "not found", "" if path else fix)


def run(inventory: Path | None = None) -> list[Check]:
    apt = "make setup (installs it with apt-get)"
    checks = [
        Check(
            "linux", sys.platform == "linux", sys.platform, "kafkalab's embedded target needs Linux"
        ),
        Check("root", os.geteuid() == 0, f"uid {os.geteuid()}", "run kafkalab with sudo"),
        Check(
            "network namespaces",
            Path("/proc/self/ns/net").exists() and shutil.which("ip") is not None,
            "ip netns available" if shutil.which("ip") else "iproute2 missing",
            apt,
        ),
        _which("systemd-nspawn", apt),
        _which("mmdebstrap", apt),
        _which("java", apt),
        _which("mvn", apt),
        Check(
            "ansible-playbook",
            (Path(sys.executable).parent / "ansible-playbook").exists(),
            str(Path(sys.executable).parent / "ansible-playbook"),
            "make setup (pip installs ansible-core into .venv)",
        ),
    ]
    java = shutil.which("java")
    if java:
        out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
        first = out.splitlines()[0] if out else "unknown"
        checks.append(Check("java version", '"17' in first or '"21' in first, first, apt))
    cache = cache_root()
    checks.append(Check("cache", True, str(cache), ""))
    built = image.is_built()
    checks.append(
        Check(
            "base image",
            built,
            str(image.rootfs()) if built else "not built yet",
            ""
            if built
            else "built by the first `kafkalab up` (about a minute, needs Debian's mirror)",
        )
    )
    cached = kafka_artifact.cached_kafka()
    checks.append(
        Check(
            "kafka artifact",
            bool(cached),
            ", ".join(p.name for p in cached) or "none cached",
            ""
            if cached
            else "made by the first `kafkalab up` from Maven Central, or put "
            f"kafka_2.13-<version>.tgz and its .sha512 into {artifact_cache.cache_dir()}",
        )
    )
    checks += optional()
    try:
        checks += machines(resolve.cluster(inventory))
    except KafkalabError as exc:
        checks.append(Check("lab", False, str(exc), "see the message"))
    return checks


def machines(cluster: InventoryCluster) -> list[Check]:
    """How each running machine of the cluster booted (its systemd's own answer) where the
    target controls its machines; else whether each host answers ssh."""
    running = [m.name for m in cluster.machines() if m.running()]
    with ThreadPoolExecutor(max_workers=max(len(running), 1)) as pool:
        return list(pool.map(lambda name: _machine(cluster, name), running))


def _machine(cluster: InventoryCluster, name: str) -> Check:
    state = cluster.boot_state(name)
    if state is not None:
        return Check(
            f"machine {name}",
            state.ok,
            state.describe().replace("\n", " "),
            "" if state.ok else "`kafkalab up` reboots a machine that did not boot cleanly",
        )
    try:
        proc = cluster.sh(name, "true", timeout=30)
        why = (proc.stderr.strip().splitlines() or [f"ssh exit {proc.returncode}"])[-1]
    except subprocess.TimeoutExpired:
        proc, why = None, "no answer over ssh within 30s"
    ok = proc is not None and proc.returncode == 0
    fix = "" if ok else f"check the host and its ssh settings in {cluster.inventory_path}"
    return Check(f"host {name}", ok, "reachable over ssh" if ok else why, fix)


def optional() -> list[Check]:
    """What only some labs need (Spark, ksqlDB, VMs): reported, never a failure."""
    spark = artifact_cache.cache_dir() / spark_artifact.archive_name()
    ksqldb = ksqldb_artifact.cached()
    lacking = vagrant.missing()
    return [
        Check(
            "spark artifact (optional)",
            True,
            str(spark) if spark.exists() else "not cached",
            "" if spark.exists() else "`kafkalab fetch --with spark` (labs 07, --with spark)",
        ),
        Check(
            "ksqldb archive (optional)",
            True,
            str(ksqldb) if ksqldb else "not cached",
            "" if ksqldb else ksqldb_artifact.missing_message(),
        ),
        Check(
            "vm tools (optional)",
            True,
            "ready" if not lacking else "missing " + " ".join(lacking),
            "" if not lacking else "scripts/setup-vm.sh (only for `vagrant up` labs, docs/VMS.md)",
        ),
    ]
