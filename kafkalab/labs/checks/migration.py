"""Check kind about a ZooKeeper cluster migrated to KRaft (KIP-866, Kafka 3.9): what lab 15
looks at, phase by phase. Each phase is read from the cluster itself: the KRaft quorum
(kafka-metadata-quorum.sh), what ZooKeeper says (zookeeper-shell.sh), the configs the
running brokers and controllers report (DescribeConfigs), and whether ZooKeeper still runs.

The migration's controllers are the kafka role's `kafka-controller.service`, on the ZooKeeper
cluster's own machines, with their storage in MIGRATION_DIR (the role's
kafka_migration_data_dir).
"""

from __future__ import annotations

import json
import re
import shlex
import socket
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from confluent_kafka import TopicCollection
from confluent_kafka.admin import ConfigResource

from kafkalab.kafka import quorum
from kafkalab.labs.checks.base import Params, Unmet, Verdict, kind
from kafkalab.labs.context import LabContext

# The storage of a migration's KRaft controller (the kafka role's kafka_migration_data_dir).
MIGRATION_DIR = "/var/lib/kafka/controller"
CONTROLLER_PORT = 9093
# The copy of the KRaft metadata log a broker in migration mode keeps (in the role's
# kafka_data_dir): a rolled-back broker drops it.
METADATA_LOG = "/var/lib/kafka/data/__cluster_metadata-0"
# What separates the answers of several zookeeper-shell.sh runs in one script.
MARK = "=== znode "
# What zookeeper-shell.sh prints before a znode's data.
NOISE = ("Connecting to", "WATCHER::", "WatchedEvent ")

Phase = Literal["controllers", "dual_write", "finalized", "rolled_back"]

TITLES = {
    "controllers": "the migration's KRaft controllers run and have elected a leader",
    "dual_write": (
        "the metadata is migrated: a KRaft controller leads the cluster and writes ZooKeeper "
        "too (dual-write)"
    ),
    "finalized": (
        "the migration is finalized: brokers and controllers run KRaft without ZooKeeper, "
        "ZooKeeper is stopped, the cluster and topic ids are the ones of the start"
    ),
    "rolled_back": (
        "the migration is rolled back: a broker is the controller again through ZooKeeper, no "
        "KRaft controller or migration state is left, the cluster and topic ids are the ones "
        "of the start"
    ),
}


class MigrationParams(Params):
    phase: Phase


def _baseline(ctx: LabContext, _p: MigrationParams) -> dict[str, Any]:
    """The cluster id and every setup topic's id at `lab start`: a migration keeps both."""
    return {"cluster_id": _cluster_id(ctx), "topic_ids": _topic_ids(ctx)}


def _cluster_id(ctx: LabContext) -> str:
    return str(ctx.admin().describe_cluster(request_timeout=15).result().cluster_id)


def _topic_ids(ctx: LabContext) -> dict[str, str]:
    names = [t.name for t in ctx.lab.spec.setup.topics]
    if not names:
        return {}
    futures = ctx.admin().describe_topics(TopicCollection(names), request_timeout=15)
    return {name: str(f.result().topic_id) for name, f in futures.items()}


def znodes(ctx: LabContext, *paths: str) -> dict[str, str | None]:
    """Znodes' data (None: no such node), read with zookeeper-shell.sh on a ZooKeeper
    machine: one run of the tool a path, in one ssh session."""
    host = ctx.zk_hosts()[0]
    server = f"{ctx.addresses[host]}:2181"
    script = "; ".join(
        f"echo {shlex.quote(MARK + p)}; "
        + shlex.join(["zookeeper-shell.sh", server, "get", p])
        + " 2>&1"  # "Node does not exist" is on stderr
        for p in paths
    )
    proc = ctx.sh(host, script, timeout=60 + 15 * len(paths))
    out: dict[str, str | None] = {}
    for said in proc.stdout.split(MARK)[1:]:
        path, *rest = said.splitlines()
        lines = [ln.strip() for ln in rest if ln.strip() and not ln.startswith("[")]
        if any(ln.startswith("Node does not exist") for ln in lines):
            out[path] = None
        elif lines and not lines[-1].startswith(NOISE):
            out[path] = lines[-1]
    missing = [p for p in paths if p not in out]
    if missing:
        raise Unmet(
            f"could not read {', '.join(missing)} from ZooKeeper: "
            f"{(proc.stdout + proc.stderr).strip()[-300:]}"
        )
    return out


def _json(data: str | None) -> dict[str, Any] | None:
    if data is None:
        return None
    value = json.loads(data) if data.startswith("{") else None
    return value if isinstance(value, dict) else None


def controller_quorum(ctx: LabContext) -> tuple[int | None, list[int], dict[str, int]]:
    """The KRaft quorum's leader, voters and the voters behind the leader (node id -> lag),
    asked of the controllers themselves (--bootstrap-controller: the brokers may still be
    ZooKeeper brokers)."""
    hosts = sorted(set(ctx.brokers.values()))
    listening = [h for h in hosts if _listens(ctx.addresses[h], CONTROLLER_PORT)]
    if not listening:  # the tool would wait a minute per question for nothing
        raise Unmet(
            "the KRaft controllers do not answer on port 9093 on any machine (sudo systemctl "
            "status kafka-controller)"
        )
    controllers = ",".join(f"{ctx.addresses[h]}:{CONTROLLER_PORT}" for h in listening)
    said: list[str] = []

    def run(script: str) -> str:
        proc = ctx.sh(hosts[0], script, timeout=90)
        said.append(proc.stdout + proc.stderr)
        return proc.stdout

    seen = quorum.kraft_leader(run, controllers, str, controllers=True)
    voters = sorted(int(n) for n, role in seen.members.items() if role != "Observer")
    if seen.epoch is None:
        raise Unmet(
            "the KRaft controllers do not answer on port 9093 (sudo systemctl status "
            f"kafka-controller): {' '.join(said).strip()[-300:]}"
        )
    lagging = {n: lag for n, lag in seen.lagging.items() if int(n) in voters}
    return (int(seen.leader) if seen.leader else None), voters, lagging


def _listens(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=2):
            return True
    except OSError:
        return False


def controller_setting(ctx: LabContext, host: str, node: int, name: str) -> str | None:
    """What the running controller `node` on `host` reports for setting `name`."""
    script = shlex.join(
        [
            "kafka-configs.sh",
            "--bootstrap-controller",
            f"{ctx.addresses[host]}:{CONTROLLER_PORT}",
            "--describe",
            "--all",
            "--entity-type",
            "brokers",
            "--entity-name",
            str(node),
        ]
    )
    proc = ctx.sh(host, script, timeout=90)
    found = re.search(rf"^\s*{re.escape(name)}=(\S*)", proc.stdout, re.MULTILINE)
    return found.group(1) if found else None


def broker_settings(ctx: LabContext, names: list[str]) -> dict[int, dict[str, str | None]]:
    """What each running broker reports for `names` (DescribeConfigs, one broker a call)."""
    out: dict[int, dict[str, str | None]] = {}
    for node in sorted(ctx.brokers):
        resource = ConfigResource(ConfigResource.Type.BROKER, str(node))
        (fut,) = ctx.admin().describe_configs([resource], request_timeout=15).values()
        entries = fut.result()
        out[node] = {n: entries[n].value if n in entries else None for n in names}
    return out


@kind("zookeeper_migration", MigrationParams, lambda p, _m: TITLES[p.phase], baseline=_baseline)
def zookeeper_migration(ctx: LabContext, p: MigrationParams) -> Verdict:
    v = Verdict()
    if p.phase == "rolled_back":
        _rolled_back(ctx, v)
        _same_ids(ctx, v)
        return v
    brokers = set(ctx.brokers)
    leader, voters, lagging = controller_quorum(ctx)
    v.facts.append(f"KRaft voters {voters}, leader {leader}")
    if leader is None:
        v.problems.append("the KRaft controllers have no leader yet: are all three started?")
    for node, lag in sorted(lagging.items()):
        v.problems.append(f"controller {node} is behind the leader ({lag} records): started?")
    if set(voters) & brokers or not voters:
        v.problems.append(
            f"the voters {voters} should be the dedicated controllers (node ids 3001..), "
            "not brokers"
        )
    if p.phase == "controllers" or v.problems:
        return v
    if p.phase == "dual_write":
        _dual_write(ctx, v, voters)
    else:
        _finalized(ctx, v, voters)
    return v


def _dual_write(ctx: LabContext, v: Verdict, voters: list[int]) -> None:
    read = znodes(ctx, "/controller", "/migration")
    controller, migration = _json(read["/controller"]) or {}, _json(read["/migration"]) or {}
    v.facts.append(f"/controller {controller}, /migration {migration}")
    if controller.get("brokerid") not in voters or _kraft_epoch(controller) < 0:
        v.problems.append(
            f"ZooKeeper's /controller names broker {controller.get('brokerid')}: the KRaft "
            "controllers take over once every broker runs in migration mode "
            "(zookeeper.metadata.migration.enable=true, controller.quorum.voters) and was restarted"
        )
    if int(migration.get("kraft_metadata_offset", -1)) < 0:
        v.problems.append("no /migration state in ZooKeeper: the metadata is not migrated yet")


def _kraft_epoch(controller: dict[str, Any]) -> int:
    """The KRaft controller epoch in ZooKeeper's /controller: -1 (or none) when a broker
    elected through ZooKeeper is the controller."""
    return int(controller.get("kraftControllerEpoch", -1))


def _finalized(ctx: LabContext, v: Verdict, voters: list[int]) -> None:
    for node, got in sorted(broker_settings(ctx, ["process.roles", "zookeeper.connect"]).items()):
        host = ctx.host_of(node)
        if got["process.roles"] != "broker" or got["zookeeper.connect"]:
            v.problems.append(
                f"broker {node} ({host}) still runs on ZooKeeper (process.roles "
                f"{got['process.roles'] or 'not set'}, zookeeper.connect "
                f"{got['zookeeper.connect'] or 'not set'}): node.id, process.roles=broker, no "
                "zookeeper.* in its server.properties, then restart it"
            )
    hosts = sorted(set(ctx.brokers.values()))
    nodes = dict(zip(hosts, voters, strict=False))
    with ThreadPoolExecutor(max_workers=len(hosts)) as pool:
        settings = pool.map(
            lambda h: controller_setting(ctx, h, nodes[h], "zookeeper.metadata.migration.enable"),
            nodes,
        )
        migrating = dict(zip(nodes, settings, strict=True))
    zookeeper = ctx.sh_each(ctx.zk_hosts(), "systemctl is-active zookeeper", 30)
    for host, value in migrating.items():
        if value != "false":
            v.problems.append(
                f"the controller {nodes[host]} on {host} still runs in migration mode "
                f"(zookeeper.metadata.migration.enable={value}): remove zookeeper.* from "
                "/etc/kafka/controller.properties and restart kafka-controller"
            )
    running = [h for h, state in zookeeper.items() if state.strip() == "active"]
    if running:
        v.problems.append(
            f"ZooKeeper still runs on {', '.join(running)}: once the migration is finalized, "
            "sudo systemctl disable --now zookeeper"
        )
    _same_ids(ctx, v)


def _rolled_back(ctx: LabContext, v: Verdict) -> None:
    probe = (
        "systemctl is-active -q kafka-controller && echo running; "
        f"test -e {MIGRATION_DIR}/meta.properties && echo storage; "
        f"test -e {METADATA_LOG} && echo metadata-log; true"
    )
    left = ctx.sh_each(sorted(set(ctx.brokers.values())), probe, 30)
    for host, what in left.items():
        if "running" in what:
            v.problems.append(
                f"the KRaft controller still runs on {host}: sudo systemctl disable --now "
                "kafka-controller there"
            )
        elif "storage" in what:
            v.problems.append(
                f"{host} still has the controller's storage: sudo rm -rf {MIGRATION_DIR} "
                "/etc/kafka/controller.properties there (a next migration formats it anew)"
            )
        if "metadata-log" in what:
            v.problems.append(
                f"the broker on {host} still has its copy of the migration's metadata log: "
                f"stop kafka, sudo rm -rf {METADATA_LOG}, start kafka"
            )
    state = f"/brokers/topics/{ctx.lab.spec.setup.topics[0].name}/partitions/0/state"
    read = znodes(ctx, "/controller", "/controller_epoch", "/migration", state)
    controller = _json(read["/controller"]) or {}
    v.facts.append(f"/controller {controller}, /controller_epoch {read['/controller_epoch']}")
    if controller.get("brokerid") not in ctx.brokers or _kraft_epoch(controller) >= 0:
        v.problems.append(
            f"ZooKeeper's /controller names {controller.get('brokerid', 'nobody')}, not a broker: "
            "with the KRaft controllers stopped, zookeeper-shell.sh kafka1:2181 deleteall "
            "/controller lets a broker take over"
        )
    written = int((_json(read[state]) or {}).get("controller_epoch", -1))
    if int(read["/controller_epoch"] or -1) < written:
        v.problems.append(
            f"the ZooKeeper controller's epoch {read['/controller_epoch']} is not above the "
            f"{written} the KRaft controller wrote the partitions' state with: it cannot elect "
            f"leaders (KAFKA-20488): zookeeper-shell.sh kafka1:2181 set /controller_epoch "
            f"{written}, then deleteall /controller again"
        )
    if read["/migration"] is not None:
        v.problems.append(
            "ZooKeeper still holds /migration: a next migration would take it for its own and "
            "copy nothing (zookeeper-shell.sh kafka1:2181 delete /migration)"
        )
    names = ["zookeeper.metadata.migration.enable", "controller.quorum.voters"]
    for node, got in sorted(broker_settings(ctx, names).items()):
        if got["zookeeper.metadata.migration.enable"] == "true" or got["controller.quorum.voters"]:
            v.problems.append(
                f"broker {node} ({ctx.host_of(node)}) still runs in migration mode: remove "
                "zookeeper.metadata.migration.enable and controller.* from its server.properties "
                "and restart it"
            )


def _same_ids(ctx: LabContext, v: Verdict) -> None:
    """The cluster id and the setup topics' ids are those noted at `lab start`."""
    then = ctx.baseline.get("zookeeper_migration", {})
    now_cluster, now_topics = _cluster_id(ctx), _topic_ids(ctx)
    v.facts.append(f"cluster id {now_cluster}")
    if then and then.get("cluster_id") != now_cluster:
        v.problems.append(
            f"the cluster id is {now_cluster}, not {then.get('cluster_id')}: the controllers "
            "were formatted with another id (take it from ZooKeeper's /cluster/id)"
        )
    for name, topic_id in then.get("topic_ids", {}).items():
        if now_topics.get(name) != topic_id:
            v.problems.append(f"topic {name} is not the one of the start (its id changed)")
