"""What one broker itself says about the cluster: its own metadata cache, asked directly.

Every broker answers metadata requests from its own cache, and a cache can be behind:
a broker that was paused (SIGSTOP) answers from the cache it had when it stopped until it
has caught up with the metadata log, so right after a long pause it can report a full ISR
the controller has already shrunk. confluent-kafka sends a metadata request to whichever
broker it likes, so its answer may be that stale one. Health waits therefore ask each
broker for its own view (kafka-python, whose client can address one node) and believe
the cluster healthy only when every broker says so.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka.client_async import KafkaClient  # type: ignore[import-untyped]

# Metadata v7 (Kafka 2.1): every broker line kafkalab runs serves it, Kafka 4's included
# (KIP-896 keeps 2.1 as the oldest client baseline), and its layout is fixed here.
_VERSION = 7
_NODE = "bootstrap-0"  # kafka-python's name for the one address it was given

logging.getLogger("kafka").setLevel(logging.CRITICAL)  # its connection noise is ours to report


@dataclass(frozen=True)
class View:
    """One broker's answer: the brokers registered (unfenced) and the topic-partitions
    without a leader or with an ISR short of the replicas."""

    brokers: frozenset[int]
    short: tuple[str, ...]


@dataclass(frozen=True)
class TopicView:
    """One broker's answer about one topic: partition -> (leader, replicas, ISR), and the
    controller that broker knows (-1: none). `parts` is empty while the topic is unknown."""

    controller: int
    parts: dict[int, tuple[int, tuple[int, ...], tuple[int, ...]]]


def own_view(address: str, timeout: float = 5) -> View:
    """The metadata of the broker at `address` (host:port), from that broker itself.
    Raises OSError when it does not answer within `timeout` seconds."""
    return parse(_metadata(address, timeout, None))


def topic_view(address: str, topic: str, timeout: float = 5) -> TopicView:
    """One topic's leaders, replicas and ISRs as the broker at `address` itself has them,
    with the controller it knows. Raises OSError when it does not answer in time."""
    return parse_topic(_metadata(address, timeout, [topic]), topic)


def _metadata(address: str, timeout: float, topics: list[str] | None) -> object:
    # Imported here: kafka-python takes ~0.15 s to import, which every kafkalab command paid.
    from kafka.client_async import KafkaClient  # type: ignore[import-untyped]
    from kafka.errors import KafkaError  # type: ignore[import-untyped]

    deadline = time.monotonic() + timeout
    client = KafkaClient(
        bootstrap_servers=address,
        api_version=(2, 1),  # no version probe: the request's version is fixed
        request_timeout_ms=int(timeout * 1000),
        client_id="kafkalab-health",
    )
    try:
        return _ask(client, address, timeout, deadline, topics)
    except KafkaError as exc:
        raise OSError(f"{address}: {exc}") from exc
    finally:
        client.close()


def _ask(
    client: KafkaClient, address: str, timeout: float, deadline: float, topics: list[str] | None
) -> object:
    while not client.ready(_NODE):
        if time.monotonic() >= deadline:
            raise OSError(f"{address}: no connection within {timeout:g}s")
        client.poll(timeout_ms=50)
    from kafka.protocol.metadata import MetadataRequest  # type: ignore[import-untyped]

    future = client.send(_NODE, MetadataRequest[_VERSION](topics=topics))
    client.poll(future=future, timeout_ms=max(1, int((deadline - time.monotonic()) * 1000)))
    if not future.is_done:
        raise OSError(f"{address}: no metadata within {timeout:g}s")
    if future.failed():
        raise OSError(f"{address}: {future.exception}")
    return future.value


def parse(response: object) -> View:
    """A View from a v7 MetadataResponse (brokers: (id, host, port, rack); topics: (error,
    name, internal, partitions); partitions: (error, id, leader, epoch, replicas, isr,
    offline))."""
    brokers = frozenset(b[0] for b in response.brokers)  # type: ignore[attr-defined]
    short = tuple(
        f"{topic}-{part}"
        for _err, topic, _internal, partitions in response.topics  # type: ignore[attr-defined]
        for _perr, part, leader, _epoch, replicas, isr, _offline in partitions
        if leader < 0 or set(isr) != set(replicas)
    )
    return View(brokers, short)


def parse_topic(response: object, topic: str) -> TopicView:
    """A TopicView of `topic` from a v7 MetadataResponse (an error on the topic: no parts)."""
    parts = {
        part: (leader, tuple(replicas), tuple(isr))
        for err, name, _internal, partitions in response.topics  # type: ignore[attr-defined]
        if name == topic and err == 0
        for _perr, part, leader, _epoch, replicas, isr, _offline in partitions
    }
    return TopicView(response.controller_id, parts)  # type: ignore[attr-defined]
