"""Waiting on a cluster: until a topic has its leaders and full ISRs, until the cluster is
healthy (every broker listening and registered, ZooKeeper serving, partitions whole).
Labs wait before they set up their starting state, failover scenarios before and after
their fault schedule. Call from inside the cluster's network namespace.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka.admin import AdminClient

from kafkalab.errors import KafkalabError
from kafkalab.kafka import views
from kafkalab.kafka.quorum import SERVING, zk_mode


def topic_ready(topic: Any, partitions: int | None = None, preferred: bool = False) -> bool:
    """Every partition of the topic's metadata has a leader (with `preferred`, its preferred
    leader, the first replica) and a full ISR; with `partitions`, that many of them."""
    parts = list(topic.partitions.values()) if topic is not None and topic.error is None else []
    if not parts or (partitions is not None and len(parts) != partitions):
        return False
    return all(
        (p.leader == p.replicas[0] if preferred else p.leader >= 0)
        and set(p.isrs) == set(p.replicas)
        for p in parts
    )


def wait_topic_ready(
    admin: AdminClient,
    topic: str,
    timeout: float = 60,
    partitions: int | None = None,
    preferred: bool = False,
) -> None:
    """Wait until `topic_ready` (a new topic gets its leaders and full ISRs in a moment)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            t = admin.list_topics(topic=topic, timeout=5).topics.get(topic)
            if topic_ready(t, partitions, preferred):
                return
        except Exception:  # not created everywhere yet
            pass
        time.sleep(0.25)
    raise KafkalabError(f"topic {topic} did not get leaders and full ISRs in {timeout:.0f}s")


def not_listening(hosts: Iterable[str], addresses: Mapping[str, str]) -> list[str]:
    """The brokers that refuse connections on 9092 (metadata can lag behind a restart: a
    broker that does not listen is not back, whatever the metadata says)."""
    out = []
    for host in hosts:
        try:
            with socket.create_connection((addresses[host], 9092), timeout=2):
                pass
        except OSError:
            out.append(host)
    return out


@dataclass
class Health:
    """What keeps a cluster from being healthy (nothing: it is)."""

    not_listening: list[str] = field(default_factory=list)  # machines
    missing: list[int] = field(default_factory=list)  # broker ids not registered
    zookeeper: list[str] = field(default_factory=list)  # ZooKeeper servers not serving
    short: list[str] = field(default_factory=list)  # topic-partition without leader or ISR
    error: str = ""  # the metadata request failed

    @property
    def ok(self) -> bool:
        return not (self.not_listening or self.missing or self.zookeeper or self.short)

    def gone(self, brokers: Mapping[int, str]) -> list[str]:
        """The brokers' machines that are not back (not listening or not registered)."""
        hosts = self.not_listening + [brokers[i] for i in self.missing if i in brokers]
        return list(dict.fromkeys(hosts))

    def describe(self) -> str:
        if self.error:
            return self.error
        if self.not_listening:
            return f"not listening: {', '.join(self.not_listening)}"
        problem = f"brokers missing: {self.missing}" if self.missing else ""
        problem += f" under-replicated: {', '.join(self.short[:5])}" if self.short else ""
        problem += f" ZooKeeper not serving: {', '.join(self.zookeeper)}" if self.zookeeper else ""
        return problem.strip()


def health(
    brokers: Mapping[int, str],
    addresses: Mapping[str, str],
    zookeeper: Sequence[str] = (),
    full_isr: bool = False,
    request_timeout: float = 5,
    read: Callable[[str, float], views.View] = views.own_view,
) -> Health:
    """How the cluster is doing now: `brokers` (node id -> machine) listening and
    registered, the `zookeeper` machines serving, with `full_isr` every partition of every
    topic led and in sync. Each broker is asked for its own view (`read`), and all must
    agree: one that has just resumed may still answer from a stale cache."""
    down = not_listening(brokers.values(), addresses)
    if down:
        return Health(not_listening=down)
    missing: set[int] = set()
    short: dict[str, None] = {}
    for node, host in brokers.items():
        try:
            view = read(f"{addresses[host]}:9092", request_timeout)
        except OSError as exc:  # a cluster in trouble answers slowly or not at all
            return Health(missing=[node], error=f"{host}: {exc}")
        missing |= set(brokers) - view.brokers
        if full_isr:
            short.update(dict.fromkeys(view.short))
    return Health(
        missing=sorted(missing),
        zookeeper=[h for h in zookeeper if zk_mode(addresses[h]) not in SERVING],
        short=list(short),
    )


def wait_healthy(
    brokers: Mapping[int, str],
    addresses: Mapping[str, str],
    timeout: float,
    zookeeper: Sequence[str] = (),
    full_isr: bool = False,
    tick: float = 0.5,
) -> tuple[Health, float]:
    """Wait until `health` says the cluster is healthy, at most `timeout` seconds; the last
    answer and the seconds it took. Whether not being healthy is an error, the caller says."""
    start = time.monotonic()
    while True:
        now = health(brokers, addresses, zookeeper, full_isr)
        took = time.monotonic() - start
        if now.ok or took >= timeout:
            return now, took
        time.sleep(tick)
