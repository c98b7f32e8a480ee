"""Python-side Kafka access (confluent-kafka), for checks, tests and scenarios.

Call these from inside the lab network namespace (netns.run_in / netns.enter).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalab.errors import KafkalabError
from kafkalab.targets import netns


@dataclass
class PartitionInfo:
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]


def in_lab_netns() -> bool:
    """True when the calling thread is in a network namespace kafkalab named (/run/netns)."""
    return netns.current() is not None


def _guard() -> None:
    # Lab addresses exist only inside the lab's namespace; from the host's namespace they
    # would be someone else's private addresses. Never send a byte there.
    if not in_lab_netns():
        raise KafkalabError(
            "refusing to talk to the lab from the host's network namespace: "
            "run this inside the lab network (netns.run_in / kafkalab shell)"
        )


def admin(bootstrap: str) -> AdminClient:
    _guard()
    # Asking about a topic must never create it (brokers auto-create for learners).
    return AdminClient(
        {
            "bootstrap.servers": bootstrap,
            "socket.timeout.ms": 10000,
            "allow.auto.create.topics": False,
        }
    )


def create_topic(
    bootstrap: str, name: str, partitions: int, rf: int, config: dict[str, str] | None = None
) -> None:
    client = admin(bootstrap)  # keep it alive until the future resolves
    futures = client.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=rf, config=config or {})],
        operation_timeout=30,
    )
    try:
        futures[name].result(timeout=60)
    except KafkaException as exc:
        if exc.args[0].name() != "TOPIC_ALREADY_EXISTS":
            raise


def describe(bootstrap: str, topic: str, timeout: float = 15) -> list[PartitionInfo]:
    """Partitions of `topic` with leader, replicas and ISR. A topic just created may take
    a moment to reach every broker's metadata: unknown is retried until `timeout`."""
    client = admin(bootstrap)
    deadline = time.monotonic() + timeout
    while True:
        md = client.list_topics(topic=topic, timeout=timeout)
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
    md = admin(bootstrap).list_topics(timeout=timeout)
    return {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()}


def controller_id(bootstrap: str, timeout: float = 15) -> int:
    """The broker that reports itself controller (meaningful in ZooKeeper mode;
    in KRaft brokers name a random broker: ask kafka-metadata-quorum.sh there)."""
    md = admin(bootstrap).list_topics(timeout=timeout)
    return int(md.controller_id)


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

    _guard()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", **(extra or {})})
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
    _guard()
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": True,
        }
    )
    consumer.subscribe([topic])
    out: list[tuple[int, int, str, str]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < expected and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            raw_key, value = msg.key(), msg.value() or b""
            key = raw_key.decode() if isinstance(raw_key, bytes) else (raw_key or "")
            value_text = value.decode() if isinstance(value, bytes) else value
            out.append((msg.partition() or 0, msg.offset() or 0, key, value_text))
    finally:
        consumer.close()
    return out


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    _guard()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kafkalab-offsets"})
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)[1]
            for p in range(partitions)
        }
    finally:
        consumer.close()
