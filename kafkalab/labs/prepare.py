"""Bringing a lab to its starting state, without provisioning: machines and services
running, every broker back, the lab's topics and groups deleted and made again, its
starting records written, its work dir empty, the baselines its checks compare with noted.
Runs inside the cluster's network namespace, as the rest of the lab code.
"""

from __future__ import annotations

import shlex
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from confluent_kafka.admin import NewTopic

from kafkalab import render
from kafkalab.errors import KafkalabError
from kafkalab.kafka import clients, quorum, topics, waits
from kafkalab.labs import checks
from kafkalab.labs.checks.migration import MIGRATION_DIR, znodes
from kafkalab.labs.context import LabContext
from kafkalab.labs.progress import Progress
from kafkalab.topology import release

WAIT_BROKERS = 150.0  # a restarted broker takes 30-60 s on a busy 2-core machine


def prepare(ctx: LabContext) -> float:
    """The lab's starting state (see the module's docstring); the seconds it took."""
    start = time.monotonic()
    lab = ctx.lab
    ensure_running(ctx, render.step)
    if any(c.kind == "zookeeper_migration" for c in lab.spec.checks):
        refuse_stale_migration(ctx)
    if lab.spec.setup.voters == "all":
        restore_voters(ctx, render.step)
    topics.delete_groups(ctx.admin(), lab.spec.owns.groups)
    if release(ctx.topo.kafka_version) >= (4, 0):  # groups have configs of their own there
        topics.delete_group_configs(ctx.admin(), lab.spec.owns.groups)
    deleted = topics.delete_topics(ctx.admin(), lab.topics())
    if deleted:
        render.step(f"deleted topic(s) {', '.join(deleted)}")
    create_topics(ctx, deleted)
    written = produce_records(ctx)
    made = [t.name for t in lab.spec.setup.topics]
    if made:
        render.step(
            f"created {', '.join(made)}" + (f", wrote {written} records" if written else "")
        )
    shutil.rmtree(ctx.workdir, ignore_errors=True)
    ctx.workdir.mkdir(parents=True)
    ctx.baseline = checks.baselines(ctx)
    seconds = time.monotonic() - start
    Progress(ctx.cluster.state).set(
        lab,
        "in progress",
        baseline=ctx.baseline,
        mode=ctx.topo.mode,
        reset_seconds=round(seconds, 1),
    )
    return seconds


def restore_voters(ctx: LabContext, progress: Callable[[str], None]) -> None:
    """Every KRaft controller a voter again: one a lab removed from the (dynamic) quorum is
    added back from its own machine, as the learner would (kafka-metadata-quorum.sh
    add-controller with that node's config)."""
    combined = ctx.topo.controllers == 0
    controllers = {
        m.node_id: m.name
        for m in ctx.topo.machines()
        if m.node_id is not None
        and ("kafka_controller" in m.groups or (combined and "kafka_broker" in m.groups))
    }
    leader, now = ctx.cluster.run(lambda: quorum.voters(ctx.bootstrap))
    for node, host in sorted(controllers.items()):
        if node in now:
            continue
        progress(f"adding controller {node} ({host}) back to the KRaft voters")
        script = shlex.join(
            [
                "kafka-metadata-quorum.sh",
                "--command-config",
                "/etc/kafka/server.properties",
                "--bootstrap-controller",
                f"{ctx.addresses[ctx.host_of(leader)]}:9093",
                "add-controller",
            ]
        )
        proc = ctx.sh(host, script, timeout=120)
        if proc.returncode:
            raise KafkalabError(
                f"could not add controller {node} back to the voters: "
                f"{(proc.stdout + proc.stderr).strip().splitlines()[-1:]}"
            )


def ensure_running(ctx: LabContext, progress: Callable[[str], None]) -> None:
    """Boot stopped machines, start stopped services, wait until every broker is back."""
    stopped = [m.name for m in ctx.cluster.machines() if not m.running()]
    if stopped:
        progress(f"starting machine(s) {', '.join(stopped)} (they were stopped)")
        ctx.cluster.start_machines(stopped)
    if ctx.topo.mode == "zookeeper":
        refuse_migrated(ctx)
    roles = {m.name: m.groups for m in ctx.topo.machines()}

    def start(host: str) -> str:
        services = [
            s
            for s, g in (
                ("zookeeper", "zookeeper"),
                ("kafka", "kafka_broker"),
                ("kafka", "kafka_controller"),
            )
            if g in roles[host]
        ]
        services = list(dict.fromkeys(services))
        if not services:
            return ""
        script = "; ".join(
            f"systemctl is-active -q {s} || {{ sudo systemctl start {s} && echo {s}; }}"
            for s in services
        )
        proc = ctx.sh(host, script, timeout=120)
        return " ".join(proc.stdout.split())

    with ThreadPoolExecutor(max_workers=len(roles)) as pool:
        started = dict(zip(roles, pool.map(start, roles), strict=True))
    for host, what in started.items():
        if what:
            progress(f"started {what} on {host} (it was stopped)")
    wait_brokers_back(ctx, progress if any(started.values()) or stopped else None)


def refuse_migrated(ctx: LabContext) -> None:
    """A ZooKeeper cluster being migrated to KRaft by hand (lab 15: a machine has a migration
    controller's storage) is no starting state: its brokers may no longer use ZooKeeper, and
    starting ZooKeeper or a lab there would not undo that. Refused with the way back."""
    hosts = [m.name for m in ctx.topo.machines() if "kafka_broker" in m.groups]
    probe = f"test -e {MIGRATION_DIR}/meta.properties && echo migrating || true"
    found = [h for h, out in ctx.sh_each(hosts, probe, 30).items() if "migrating" in out]
    if found:
        embedded = ctx.cluster.kind == "embedded"
        raise KafkalabError(
            f"this ZooKeeper cluster is being migrated to KRaft ({', '.join(found)} "
            f"{'has' if len(found) == 1 else 'have'} KRaft controller storage in {MIGRATION_DIR}), "
            "so it is no lab's starting state: "
            + (
                "run `kafkalab down --purge` (it deletes the lab's data), then "
                "`kafkalab up --mode zookeeper`"
                if embedded
                else "roll the migration back (labs/16-migration-rollback) or use a cluster "
                "on new storage"
            )
        )


def refuse_stale_migration(ctx: LabContext) -> None:
    """A lab that migrates to KRaft does not start over an earlier migration's state in
    ZooKeeper: new controllers would take that /migration for their own, copy nothing from
    ZooKeeper and write their empty metadata back to it."""
    if znodes(ctx, "/migration")["/migration"] is not None:
        raise KafkalabError(
            "ZooKeeper still holds /migration, the state of an earlier migration to KRaft: "
            "once it is rolled back (labs/16-migration-rollback), delete it with "
            "`zookeeper-shell.sh kafka1:2181 delete /migration` on a machine, then start again"
        )


def wait_brokers_back(ctx: LabContext, progress: Callable[[str], None] | None) -> None:
    """Every broker registered again (and, in ZooKeeper mode, every ZooKeeper serving)."""
    if progress:
        progress("waiting until every broker is registered again")
    health, _ = waits.wait_healthy(
        ctx.brokers, ctx.addresses, WAIT_BROKERS, zookeeper=ctx.zk_hosts(), tick=1
    )
    if health.ok:
        return
    gone = health.gone(ctx.brokers)
    why = "; ".join(f"{h}: {_service_state(ctx, h)}" for h in gone) or "ZooKeeper"
    raise KafkalabError(
        f"{', '.join(gone) or 'ZooKeeper'} did not come back within {WAIT_BROKERS:.0f}s "
        f"({why}); see `kafkalab status` and "
        "`kafkalab exec <host> -- journalctl -u kafka -n 50`"
    )


def _service_state(ctx: LabContext, host: str) -> str:
    """One line on a broker that does not come back: its unit's state and last log line."""
    proc = ctx.sh(
        host,
        "systemctl show kafka -p ActiveState -p SubState -p NRestarts --value | paste -sd' '; "
        "journalctl -u kafka -n 1 --no-pager -o cat 2>/dev/null | cut -c1-200",
        timeout=30,
    )
    return " | ".join(line for line in proc.stdout.splitlines() if line.strip()) or "unreachable"


def create_topics(ctx: LabContext, recreated: list[str]) -> None:
    """The setup topics, each with its preferred leaders and a full ISR before the next. A
    topic deleted just now may still be `marked for deletion` (ZooKeeper mode): it is
    retried until the brokers have let it go."""
    for spec in ctx.lab.spec.setup.topics:
        if spec.replicas:
            new = NewTopic(
                spec.name,
                num_partitions=len(spec.replicas),
                replica_assignment=spec.replicas,
                config=spec.config,
            )
        else:
            new = NewTopic(
                spec.name,
                num_partitions=spec.partitions,
                replication_factor=spec.replication_factor or -1,
                config=spec.config,
            )
        topics.create_topic(ctx.admin(), new, wait_deleted=spec.name in recreated)
        waits.wait_topic_ready(ctx.admin(), spec.name, partitions=spec.partitions, preferred=True)


def produce_records(ctx: LabContext) -> int:
    """The setup records, partitioned like the Java clients do (murmur2 of the key)."""
    specs = ctx.lab.spec.setup.records
    if not specs:
        return 0
    errors: list[str] = []
    producer = clients.producer(
        ctx.bootstrap, {"acks": "all", "partitioner": "murmur2_random", "linger.ms": 5}
    )

    def done(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    count = 0
    for r in specs:
        for i in range(r.count):
            key = r.key.format(i=i) if r.key is not None else None
            producer.produce(r.topic, key=key, value=r.value.format(i=i), on_delivery=done)
            producer.poll(0)
            count += 1
    left = producer.flush(60)
    if errors or left:
        raise KafkalabError(
            f"could not write the starting records ({left} not delivered; {errors[:2]})"
        )
    return count
