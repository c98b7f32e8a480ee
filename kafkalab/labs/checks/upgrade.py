"""Check kinds about the Kafka release a cluster runs: what the upgrade labs look at. The
release is the one each node's running process loaded (the kafka_2.13-X.jar it holds
open), not the one installed on disk: a node upgraded but not restarted still runs the old.
"""

from __future__ import annotations

import re
import shlex
from concurrent.futures import ThreadPoolExecutor

from pydantic import Field

from kafkalab.labs.checks.base import Params, Verdict, kind
from kafkalab.labs.context import LabContext
from kafkalab.topology import release

# The jar that holds the broker's own classes: kafka_<Scala>-<release>.jar.
SERVER_JAR = re.compile(r"kafka_2\.1[0-9]-([0-9]+\.[0-9]+\.[0-9]+)\.jar")
# One line of kafka-features.sh describe: its name, the highest level this release supports,
# the level the cluster runs at.
FEATURE = re.compile(
    r"Feature: (\S+)\s+SupportedMinVersion: \S+\s+SupportedMaxVersion: (\S+)\s+"
    r"FinalizedVersionLevel: (\S+)"
)
RUNNING_JAR = (
    'pid=$(systemctl show -p MainPID --value kafka); [ "${pid:-0}" != 0 ] && '
    'sudo find "/proc/$pid/fd" -lname "*/libs/kafka_2.1*.jar" -printf "%l\\n" | head -1'
)


class ReleaseParams(Params):
    kafka_min: str = Field(pattern=r"^[0-9]+(\.[0-9]+){0,2}$")  # e.g. "4.0"


def running_release(ctx: LabContext, host: str) -> str | None:
    """The release of the Kafka process running on `host` (None: none runs)."""
    proc = ctx.sh(host, RUNNING_JAR, timeout=30)
    found = SERVER_JAR.search(proc.stdout)
    return found.group(1) if found else None


@kind(
    "kafka_release",
    ReleaseParams,
    lambda p, _m: f"every Kafka node runs one release, Kafka {p.kafka_min} or newer",
)
def kafka_release(ctx: LabContext, p: ReleaseParams) -> Verdict:
    hosts = sorted(set(ctx.node_hosts.values()))
    with ThreadPoolExecutor(max_workers=len(hosts)) as pool:
        runs = dict(zip(hosts, pool.map(lambda h: running_release(ctx, h), hosts), strict=True))
    v = Verdict()
    v.facts.append(", ".join(f"{h}: {r or 'not running'}" for h, r in runs.items()))
    want = release(p.kafka_min)
    for host, rel in runs.items():
        if rel is None:
            v.problems.append(f"no Kafka runs on {host}: sudo systemctl start kafka there")
        elif release(rel)[: len(want)] < want:
            v.problems.append(
                f"{host} still runs Kafka {rel}: roll it to a {p.kafka_min} release "
                "(kafkalab up --kafka-version <release>, one node at a time)"
            )
    if len({r for r in runs.values() if r}) > 1:
        v.problems.append("the nodes run different releases: the roll is not finished")
    return v


class FeaturesParams(Params):
    metadata_min: str = Field(pattern=r"^[0-9]+\.[0-9]+$")  # e.g. "4.0": metadata.version 4.0-*


@kind(
    "features_finalized",
    FeaturesParams,
    lambda p, _m: (
        f"metadata.version is {p.metadata_min} or newer, and every feature at the highest "
        "level the release supports (kafka-features.sh)"
    ),
)
def features_finalized(ctx: LabContext, p: FeaturesParams) -> Verdict:
    script = shlex.join(["kafka-features.sh", "--bootstrap-server", ctx.bootstrap, "describe"])
    proc = ctx.sh(ctx.tool_host(), script, timeout=90)
    features = {name: (most, level) for name, most, level in FEATURE.findall(proc.stdout)}
    v = Verdict()
    if "metadata.version" not in features:
        v.problems.append(f"kafka-features.sh describe says no metadata.version: {proc.stderr}")
        return v
    v.facts.append(", ".join(f"{n} {lvl}" for n, (_m, lvl) in sorted(features.items())))
    metadata = features["metadata.version"][1]
    line = tuple(int(x) for x in re.findall(r"\d+", metadata)[:2])
    if line < release(p.metadata_min):
        v.problems.append(
            f"metadata.version is {metadata}: the cluster still uses the old release's "
            f"metadata; raise it (kafka-features.sh upgrade --release-version "
            f"{p.metadata_min} or newer) once every node runs the new release"
        )
    behind = [f"{n} {lvl} (can be {most})" for n, (most, lvl) in features.items() if most != lvl]
    if behind:
        v.problems.append(f"not at the release's level: {', '.join(sorted(behind))}")
    return v
