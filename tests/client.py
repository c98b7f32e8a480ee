"""Kafka client calls only the tests make (kafkalab's own are in kafkalab.kafka): describe a
topic, produce keyed records, consume them all, end offsets. Call them from inside the
cluster's network namespace, as kafkalab's clients."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import TopicPartition
from confluent_kafka.admin import NewTopic

from kafkalab.errors import KafkalabError
from kafkalab.kafka import clients, topics
from kafkalab.kafka.quorum import controller_id

__all__ = ["brokers", "consume_all", "controller_id", "create_topic", "describe", "end_offsets"]


@dataclass
class PartitionInfo:
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]


def create_topic(
    bootstrap: str, name: str, partitions: int, rf: int, config: dict[str, str] | None = None
) -> None:
    new = NewTopic(name, num_partitions=partitions, replication_factor=rf, config=config or {})
    topics.create_topic(clients.admin(bootstrap), new)


def describe(bootstrap: str, topic: str, timeout: float = 15) -> list[PartitionInfo]:
    """Partitions of `topic` with leader, replicas and ISR. A topic just created may take
    a moment to reach every broker's metadata: unknown is retried until `timeout`."""
    admin = clients.admin(bootstrap)
    deadline = time.monotonic() + timeout
    while True:
        md = admin.list_topics(topic=topic, timeout=timeout)
        t = md.topics.get(topic)
        if t is not None and t.error is None:
            return [
                PartitionInfo(p.id, p.leader, list(p.replicas), list(p.isrs))
                for p in sorted(t.partitions.values(), key=lambda p: p.id)
            ]
        if time.monotonic() > deadline:
            raise KafkalabError(f"topic {topic} not found ({t.error if t else 'no metadata'})")
        time.sleep(0.5)


def brokers(bootstrap: str, timeout: float = 15) -> dict[int, str]:
    md = clients.admin(bootstrap).list_topics(timeout=timeout)
    return {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()}


def produce_keyed(
    bootstrap: str, topic: str, count: int, extra: dict[str, Any] | None = None
) -> list[tuple[int, int, str]]:
    """Produce `count` records keyed key-(i % 10), value i; return the acked
    (partition, offset, key)."""
    acked: list[tuple[int, int, str]] = []
    errors: list[str] = []

    def done(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            acked.append((msg.partition(), msg.offset(), msg.key().decode()))

    producer = clients.producer(bootstrap, {"acks": "all", **(extra or {})})
    for i in range(count):
        producer.produce(topic, key=f"key-{i % 10}", value=str(i), on_delivery=done)
        producer.poll(0)
    left = producer.flush(60)
    if errors or left:
        raise KafkalabError(f"produce failed: {left} not delivered; errors: {errors[:3]}")
    return acked


def consume_all(
    bootstrap: str, topic: str, expected: int, group: str, timeout: float = 60
) -> list[tuple[int, int, str, str]]:
    """Read from the beginning until `expected` records or the timeout."""
    consumer = clients.consumer(
        bootstrap, group, {"auto.offset.reset": "earliest", "enable.auto.commit": True}
    )
    consumer.subscribe([topic])
    out: list[tuple[int, int, str, str]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < expected and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            rec = topics.consumed(msg)
            out.append((rec.partition, rec.offset, rec.key or "", rec.text))
    finally:
        consumer.close()
    return out


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = clients.consumer(bootstrap, "kafkalab-offsets")
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)[1]
            for p in range(partitions)
        }
    finally:
        consumer.close()
