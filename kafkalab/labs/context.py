"""One lab against one running cluster: what its checks, its starting state and its
reference solution look at and act through.

Everything here runs where the cluster is reached (the runner joins it first: its network
namespace, or the controller): Python clients directly (kafkalab.kafka.clients), Kafka's
tools on machines over ssh.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from kafkalab.errors import KafkalabError
from kafkalab.inventory import Layout
from kafkalab.kafka import clients, quorum, tools, topics
from kafkalab.kafka.topics import Consumed
from kafkalab.labs.definition import Lab
from kafkalab.targets.cluster import InventoryCluster

# Kafka's log lines start with "[2026-11-27 06:27:51,123] LEVEL "; an ISR change the
# controller refused is logged at INFO.
WARNING_LINES = r"^\[[^]]*\] (WARN|ERROR) |Failed to alter partition"
_STAMP = re.compile(r"^\[([^]]*)\] ")
# The log dir of systemd unit $u (its LOG_DIR), in $d.
_LOG_DIR = (
    'd=$(systemctl show -p Environment "$u" 2>/dev/null '
    "| grep -o 'LOG_DIR=[^ \"]*' | cut -d= -f2); "
)
# Read newest line first: a broker's start (ZooKeeper mode; KRaft mode) says its thread lives,
# the death of its AlterPartition thread says it died; the first of the two found decides.
_DIED_SINCE_START = (
    r"/starting \(kafka\.server\.KafkaServer\)|] Transition from SHUTDOWN to STARTING/ "
    '{ print "alive"; seen = 1; exit } '
    'index($0, "to-controller-alter-partition-channel-manager]: Error due to") '
    '{ print "died"; seen = 1; exit } '
    'END { if (!seen) print "alive" }'
)
# On a broker's machine: "died" or "alive", for the AlterPartition thread of its running Kafka:
# server.log, then the hourly files before it, each read backwards, until one of those lines.
ISR_THREAD_SCRIPT = (
    "u=kafka; "
    + _LOG_DIR
    + 'for f in "$d"/server.log $(ls "$d"/server.log.* 2>/dev/null | sort -r); '
    + 'do tac "$f" 2>/dev/null; done | awk '
    + shlex.quote(_DIED_SINCE_START)
)


def collapse(lines: list[str], width: int = 400) -> list[str]:
    """Log lines with each message once, where it was last logged: `[time] message (n times)`."""
    last: dict[str, tuple[int, str]] = {}
    count: Counter[str] = Counter()
    for i, line in enumerate(ln for ln in lines if ln.strip()):
        stamp = _STAMP.match(line)
        message = line[stamp.end() :] if stamp else line
        last[message] = (i, stamp.group(1) if stamp else "")
        count[message] += 1
    shown = sorted(last.items(), key=lambda item: item[1][0])
    return [
        (f"[{when}] " if when else "")
        + message[:width]
        + (f" ({count[message]} times)" if count[message] > 1 else "")
        for message, (_i, when) in shown
    ]


@dataclass
class LabContext:
    """One lab against one running cluster."""

    cluster: InventoryCluster
    topo: Layout
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
            self._admin = clients.admin(self.bootstrap)
        return self._admin

    def consumer(self, group: str = "kafkalab-lab-check") -> Consumer:
        return clients.consumer(self.bootstrap, group, {"enable.auto.commit": False})

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
        for one check run: `forget_records` starts another)."""
        if topic not in self._records:
            self._records[topic] = topics.read_to_end(self.bootstrap, topic, "kafkalab-lab-check")
        return self._records[topic]

    def forget_records(self) -> None:
        self._records.clear()

    def committed(self, group: str, topic: str, partitions: int) -> dict[int, int]:
        """The group's committed offsets on the topic (partitions without one are left out)."""
        c = self.consumer(group)
        try:
            tps = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=15)
        finally:
            c.close()
        return {tp.partition: tp.offset for tp in tps if tp.offset >= 0}

    def metadata_leader(self, replication: bool = True) -> quorum.MetadataLeader:
        """Who leads the metadata, in which epoch; with `replication`, also how every member
        is doing (KRaft: one more tool run)."""
        if self.topo.mode == "zookeeper":
            return quorum.zookeeper_leader({h: self.addresses[h] for h in self.zk_hosts()})
        run = tools.printed(self.cluster, self.tool_host(), timeout=90)
        return quorum.kraft_leader(run, self.bootstrap, self.host_of, replication)

    # -- machines ------------------------------------------------------------------------

    def sh(self, host: str, script: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """A shell script on a machine, in a login shell (Kafka tools on PATH)."""
        return tools.run(self.cluster, host, script, timeout)

    def sh_each(
        self, hosts: list[str], script: str, timeout: float = 60, lenient: bool = False
    ) -> dict[str, str]:
        """The same script on several machines at once: what each printed. `lenient`: ""
        for a machine whose script takes over `timeout` (one a fault cut off, say), where a
        look at it may fail without failing the caller."""

        def one(host: str) -> str:
            try:
                return self.sh(host, script, timeout).stdout
            except subprocess.TimeoutExpired:
                if lenient:
                    return ""
                raise

        with ThreadPoolExecutor(max_workers=len(hosts) or 1) as pool:
            return dict(zip(hosts, pool.map(one, hosts), strict=True))

    def broker_warnings(self, lines: int = 8) -> dict[str, list[str]]:
        """The last WARN and ERROR lines (and refused ISR changes) each running broker
        machine logged, from the logs of its Kafka units (their LOG_DIR), oldest first; a
        message repeated is shown once, with its count and its last time."""
        script = (
            "for u in kafka kafka-controller; do "
            + _LOG_DIR
            + '[ -n "$d" ] && grep -hE '
            + shlex.quote(WARNING_LINES)
            + " "
            '"$d"/server.log "$d"/controller.log "$d"/state-change.log 2>/dev/null; '
            "done | sort | tail -n 500"
        )
        hosts = sorted(set(self.brokers.values()) & self.running())
        said = self.sh_each(hosts, script, 30, lenient=True)
        return {h: collapse(text.splitlines())[-lines:] for h, text in said.items()}

    def isr_changes_stopped(self, hosts: list[str]) -> set[str]:
        """The machines among `hosts` whose running broker can change no ISR any more: the
        thread that sends its ISR changes to the controller (AlterPartition) died since
        that broker started, as its server.log (and the hourly files before it) says."""
        said = self.sh_each(
            sorted(set(hosts) & self.running()), ISR_THREAD_SCRIPT, 15, lenient=True
        )
        return {h for h, out in said.items() if out.strip() == "died"}

    def running(self) -> set[str]:
        """The lab's machines that run."""
        return {m.name for m in self.cluster.machines() if m.running()}

    def tool_host(self) -> str:
        """A machine to run tools on: the lab's host, or a broker whose Kafka is up."""
        live = self.live_brokers()
        hosts = [self.lab.spec.host] + [self.brokers[i] for i in sorted(live) if i in self.brokers]
        running = self.running()
        for h in hosts:
            if h in running:
                return h
        raise KafkalabError("no lab machine is running: `kafkalab up` first")
