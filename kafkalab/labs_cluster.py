"""What labs do to and learn from the running cluster.

Everything here runs inside the lab network namespace (the runner calls it through
`netns.run_in`): Python clients directly, tools on machines through `login_command`.
Clients are quiet: librdkafka's own log lines (a broker is down, ...) are not shown,
the checks say what matters.
"""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalab.errors import KafkalabError
from kafkalab.labs_quorum import zk_srvr
from kafkalab.targets.embedded import EmbeddedCluster
from kafkalab.topology import Topology

if TYPE_CHECKING:
    from kafkalab.labs import Lab

QUIET = logging.getLogger("kafkalab.labs.rdkafka")
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False
WAIT_BROKERS = 150.0  # a restarted broker takes 30-60 s on a busy 2-core machine
# The Kafka tools labs start live for seconds: C1 only and the serial GC start them in
# about half the time of the launchers' server defaults, with the same behaviour.
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true"


@dataclass
class Consumed:
    partition: int
    offset: int
    key: str | None
    value: str
    leader_epoch: int | None


@dataclass
class LabContext:
    """One lab against one running cluster."""

    cluster: EmbeddedCluster
    topo: Topology
    lab: Lab
    workdir: Path
    baseline: dict[str, Any] = field(default_factory=dict)
    _records: dict[str, list[Consumed]] = field(default_factory=dict)
    _admin: AdminClient | None = None

    # -- layout ------------------------------------------------------------------------

    @property
    def brokers(self) -> dict[int, str]:
        """node id -> machine name, for every broker of the topology."""
        return {
            m.node_id: m.name
            for m in self.topo.machines()
            if "kafka_broker" in m.groups and m.node_id is not None
        }

    @property
    def node_hosts(self) -> dict[int, str]:
        return {m.node_id: m.name for m in self.topo.machines() if m.node_id is not None}

    @property
    def addresses(self) -> dict[str, str]:
        return {m.name: m.address for m in self.topo.machines()}

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.addresses[h]}:9092" for h in self.brokers.values())

    def host_of(self, node_id: int) -> str:
        return self.node_hosts.get(node_id, f"node {node_id}")

    def zk_hosts(self) -> list[str]:
        return [m.name for m in self.topo.machines() if "zookeeper" in m.groups]

    # -- clients -----------------------------------------------------------------------

    def admin(self) -> AdminClient:
        """One admin client per context (futures need it alive until they resolve)."""
        if self._admin is None:
            conf: dict[str, Any] = {
                "bootstrap.servers": self.bootstrap,
                "socket.timeout.ms": 10000,
                "logger": QUIET,
                # a metadata request must never create the topic (brokers auto-create)
                "allow.auto.create.topics": False,
            }
            self._admin = AdminClient(conf)
        return self._admin

    def consumer(self, **extra: Any) -> Consumer:
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "logger": QUIET,
            "group.id": "kafkalab-lab-check",
            "enable.auto.commit": False,
        }
        return Consumer({**conf, **extra})

    def live_brokers(self, timeout: float = 10) -> set[int]:
        try:
            md = self.admin().list_topics(timeout=timeout)
        except KafkaException:
            return set()
        return set(md.brokers)

    def topic(self, name: str, timeout: float = 10) -> Any | None:
        """The topic's metadata (partitions with leader, replicas, isrs), or None."""
        md = self.admin().list_topics(topic=name, timeout=timeout)
        t = md.topics.get(name)
        if t is None or t.error is not None:
            return None
        return t

    def end_offsets(self, topic: str, partitions: int) -> dict[int, tuple[int, int]]:
        c = self.consumer()
        try:
            return {
                p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=15)
                for p in range(partitions)
            }
        finally:
            c.close()

    def records(self, topic: str) -> list[Consumed]:
        """Every record of the topic, read from the beginning to the current end (cached
        for one check run)."""
        if topic in self._records:
            return self._records[topic]
        t = self.topic(topic)
        if t is None:
            return []
        ends = {p: hi for p, (_lo, hi) in self.end_offsets(topic, len(t.partitions)).items()}
        todo = {p for p, hi in ends.items() if hi > 0}
        out: list[Consumed] = []
        c = self.consumer()
        try:
            c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in todo])
            deadline = time.monotonic() + 60
            while todo and time.monotonic() < deadline:
                for msg in c.consume(500, timeout=1.0):
                    if msg.error():
                        continue
                    rec = _consumed(msg)
                    out.append(rec)
                    if rec.offset + 1 >= ends[rec.partition]:
                        todo.discard(rec.partition)
        finally:
            c.close()
        if todo:
            raise KafkalabError(
                f"could not read topic {topic} to its end (partitions {sorted(todo)})"
            )
        self._records[topic] = out
        return out

    def committed(self, group: str, topic: str, partitions: int) -> dict[int, int]:
        """The group's committed offsets on the topic (partitions without one are left out)."""
        c = self.consumer(**{"group.id": group})
        try:
            tps = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=15)
        finally:
            c.close()
        return {tp.partition: tp.offset for tp in tps if tp.offset >= 0}

    # -- machines ------------------------------------------------------------------------

    def sh(self, host: str, script: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """A shell script on a machine, in a login shell (Kafka tools on PATH)."""
        script = f"export KAFKA_JVM_PERFORMANCE_OPTS='{QUICK_JVM}'; {script}"
        return subprocess.run(
            self.cluster.login_command(host, ["bash", "-c", script]),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def tool_host(self) -> str:
        """A machine to run tools on: the lab's host, or a broker whose Kafka is up."""
        live = self.live_brokers()
        hosts = [self.lab.spec.host] + [self.brokers[i] for i in sorted(live) if i in self.brokers]
        running = {m.name for m in self.cluster.machines() if m.running()}
        for h in hosts:
            if h in running:
                return h
        raise KafkalabError("no lab machine is running: `kafkalab up` first")


def _consumed(msg: Message) -> Consumed:
    key = msg.key()
    value = msg.value()
    return Consumed(
        msg.partition() or 0,
        msg.offset() or 0,
        key.decode(errors="replace") if key is not None else None,
        value.decode(errors="replace") if value is not None else "",
        msg.leader_epoch(),
    )


# -- bringing a lab to its starting state --------------------------------------------------


def ensure_running(ctx: LabContext, progress: Callable[[str], None]) -> None:
    """Boot stopped machines, start stopped services, wait until every broker is back."""
    stopped = [m.name for m in ctx.cluster.machines() if not m.running()]
    if stopped:
        progress(f"starting machine(s) {', '.join(stopped)} (they were stopped)")
        ctx.cluster.start_machines(stopped)
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
    wait_healthy(ctx, progress if any(started.values()) or stopped else None)


def wait_healthy(ctx: LabContext, progress: Callable[[str], None] | None) -> None:
    if progress:
        progress("waiting until every broker is registered again")
    want = set(ctx.brokers)
    deadline = time.monotonic() + WAIT_BROKERS
    while True:
        live = ctx.live_brokers()
        zk_ok = True
        if ctx.topo.mode == "zookeeper":
            modes = [zk_srvr(ctx.addresses[h]).get("Mode") for h in ctx.zk_hosts()]
            zk_ok = all(m in ("leader", "follower", "standalone") for m in modes)
        if want <= live and zk_ok:
            return
        if time.monotonic() > deadline:
            gone = [ctx.brokers[i] for i in sorted(want - live)]
            why = "; ".join(f"{h}: {_service_state(ctx, h)}" for h in gone) or "ZooKeeper"
            raise KafkalabError(
                f"{', '.join(gone) or 'ZooKeeper'} did not come back within {WAIT_BROKERS:.0f}s "
                f"({why}); see `kafkalab status` and "
                "`kafkalab exec <host> -- journalctl -u kafka -n 50`"
            )
        time.sleep(1)


def _service_state(ctx: LabContext, host: str) -> str:
    """One line on a broker that does not come back: its unit's state and last log line."""
    proc = ctx.sh(
        host,
        "systemctl show kafka -p ActiveState -p SubState -p NRestarts --value | paste -sd' '; "
        "journalctl -u kafka -n 1 --no-pager -o cat 2>/dev/null | cut -c1-200",
        timeout=30,
    )
    return " | ".join(line for line in proc.stdout.splitlines() if line.strip()) or "unreachable"


def delete_groups(ctx: LabContext, groups: list[str]) -> None:
    if not groups:
        return
    listed = ctx.admin().list_consumer_groups(request_timeout=30).result()
    groups = [g for g in groups if g in {x.group_id for x in listed.valid}]
    if not groups:
        return
    futures = ctx.admin().delete_consumer_groups(groups, request_timeout=30)
    for group, fut in futures.items():
        try:
            fut.result()
        except KafkaException as exc:
            name = exc.args[0].name()
            if name in ("GROUP_ID_NOT_FOUND", "GROUP_ID_NOT_FOUND_ERROR"):
                continue
            if name == "NON_EMPTY_GROUP":
                raise KafkalabError(
                    f"consumer group {group} still has members: stop its consumers (Ctrl-C in "
                    "their terminals), then run this again"
                ) from None
            raise KafkalabError(f"cannot delete consumer group {group}: {exc}") from None


def delete_topics(ctx: LabContext, topics: list[str]) -> list[str]:
    existing = set(ctx.admin().list_topics(timeout=15).topics)
    doomed = [t for t in topics if t in existing]
    if not doomed:
        return []
    for topic, fut in ctx.admin().delete_topics(doomed, operation_timeout=30).items():
        try:
            fut.result()
        except KafkaException as exc:
            if exc.args[0].name() != "UNKNOWN_TOPIC_OR_PART":
                raise KafkalabError(f"cannot delete topic {topic}: {exc}") from None
    deadline = time.monotonic() + 60
    while set(doomed) & set(ctx.admin().list_topics(timeout=15).topics):
        if time.monotonic() > deadline:
            raise KafkalabError(f"topics {', '.join(doomed)} are still there 60 s after deletion")
        time.sleep(0.3)
    return doomed


def create_topics(ctx: LabContext, recreated: list[str]) -> None:
    """The setup topics. A topic deleted just now may still be `marked for deletion`
    (ZooKeeper mode): retry until the brokers have let it go."""
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
        deadline = time.monotonic() + 60
        while True:
            fut = ctx.admin().create_topics([new], operation_timeout=30)[spec.name]
            try:
                fut.result()
                break
            except KafkaException as exc:
                err = exc.args[0]
                retry = err.name() == "TOPIC_ALREADY_EXISTS" and spec.name in recreated
                if not retry or time.monotonic() > deadline:
                    raise KafkalabError(f"cannot create topic {spec.name}: {err.str()}") from None
                time.sleep(0.5)
        wait_topic_ready(ctx, spec.name, spec.partitions)


def wait_topic_ready(ctx: LabContext, topic: str, partitions: int, timeout: float = 60) -> None:
    """Every partition has its preferred leader and a full ISR (new topics get both)."""
    deadline = time.monotonic() + timeout
    while True:
        t = ctx.topic(topic)
        if (
            t is not None
            and len(t.partitions) == partitions
            and all(
                p.leader == p.replicas[0] and sorted(p.isrs) == sorted(p.replicas)
                for p in t.partitions.values()
            )
        ):
            return
        if time.monotonic() > deadline:
            raise KafkalabError(
                f"topic {topic} has no leader on every partition after {timeout:.0f}s"
            )
        time.sleep(0.3)


def produce_records(ctx: LabContext) -> int:
    """The setup records, partitioned like the Java clients do (murmur2 of the key)."""
    specs = ctx.lab.spec.setup.records
    if not specs:
        return 0
    errors: list[str] = []
    producer = Producer(
        {
            "bootstrap.servers": ctx.bootstrap,
            "acks": "all",
            "partitioner": "murmur2_random",
            "linger.ms": 5,
            "logger": QUIET,
        }
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
