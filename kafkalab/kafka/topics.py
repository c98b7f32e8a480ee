"""Topics and consumer groups on a running cluster: create (retrying what a cluster just
back from a fault answers), delete (and wait until they are gone), read a topic back to
its end. Call from inside the cluster's network namespace.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, Message, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)

from kafkalab.errors import KafkalabError
from kafkalab.kafka import clients


def create_topic(
    admin: AdminClient, new: NewTopic, timeout: float = 60, wait_deleted: bool = False
) -> None:
    """Create a topic. A retriable error (a cluster just back from a fault) is tried again
    until `timeout`; so is "already exists" with `wait_deleted`, for a topic of that name
    deleted just now (ZooKeeper mode keeps it `marked for deletion` a while); without it,
    "already exists" is done (an earlier attempt got through)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            admin.create_topics([new], operation_timeout=30)[new.topic].result(60)
            return
        except KafkaException as exc:
            err = exc.args[0]
            exists = err.code() == KafkaError.TOPIC_ALREADY_EXISTS
            if exists and not wait_deleted:
                return
            retry = exists or err.retriable() or err.code() < 0
            if not retry or time.monotonic() > deadline:
                raise KafkalabError(f"cannot create topic {new.topic}: {err.str()}") from None
        time.sleep(0.5)


def delete_topics(
    admin: AdminClient, topics: list[str], timeout: float = 60, wait_gone: bool = True
) -> list[str]:
    """Delete those of `topics` that exist; the deleted ones. With `wait_gone`, return only
    once the brokers no longer list them (a topic of the same name can be made again)."""
    existing = set(admin.list_topics(timeout=15).topics)
    doomed = [t for t in topics if t in existing]
    if not doomed:
        return []
    for topic, fut in admin.delete_topics(doomed, operation_timeout=30).items():
        try:
            fut.result(timeout)
        except KafkaException as exc:
            if exc.args[0].name() != "UNKNOWN_TOPIC_OR_PART":
                raise KafkalabError(f"cannot delete topic {topic}: {exc}") from None
    deadline = time.monotonic() + timeout
    while wait_gone and set(doomed) & set(admin.list_topics(timeout=15).topics):
        if time.monotonic() > deadline:
            raise KafkalabError(
                f"topics {', '.join(doomed)} are still there {timeout:.0f} s after deletion"
            )
        time.sleep(0.3)
    return doomed


def delete_groups(admin: AdminClient, groups: list[str]) -> None:
    """Delete those of the `groups` that exist, of any type (consumer, classic, share); a
    group with members is refused. Only existing groups are asked to go: on a new cluster
    the coordinator of a group nobody used answers NOT_COORDINATOR."""
    if not groups:
        return
    with warnings.catch_warnings():
        # list_groups is deprecated, but list_consumer_groups leaves share groups out
        warnings.simplefilter("ignore", DeprecationWarning)
        listed = {g.id for g in admin.list_groups(timeout=30)}
    groups = [g for g in groups if g in listed]
    if not groups:
        return
    futures = admin.delete_consumer_groups(groups, request_timeout=30)
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


def delete_group_configs(admin: AdminClient, groups: list[str]) -> list[str]:
    """Remove what was set on the `groups` themselves (e.g. share.auto.offset.reset, Kafka
    4.x group configs): a group made again starts from the brokers' defaults. Returns the
    settings removed, as group:name."""
    if not groups:
        return []
    resources = [ConfigResource(ResourceType.GROUP, g) for g in groups]
    removed: list[str] = []
    for res, fut in admin.describe_configs(resources, request_timeout=30).items():
        entries = fut.result()
        dynamic = [
            ConfigEntry(name, None, incremental_operation=AlterConfigOpType.DELETE)
            for name, e in entries.items()
            if e.source == ConfigSource.GROUP_CONFIG.value
        ]
        if not dynamic:
            continue
        target = ConfigResource(ResourceType.GROUP, res.name, incremental_configs=dynamic)
        for done in admin.incremental_alter_configs([target], request_timeout=30).values():
            done.result()
        removed += [f"{res.name}:{e.name}" for e in dynamic]
    return removed


@dataclass(frozen=True)
class Consumed:
    """One record as read back."""

    partition: int
    offset: int
    key: str | None
    value: str | None  # None: a tombstone (a record with a null value)
    leader_epoch: int | None

    @property
    def text(self) -> str:
        """The value as text ("" for a tombstone)."""
        return self.value or ""


def consumed(msg: Message) -> Consumed:
    key, value = msg.key(), msg.value()
    return Consumed(
        msg.partition() or 0,
        msg.offset() or 0,
        key.decode(errors="replace") if isinstance(key, bytes) else key,
        value.decode(errors="replace") if isinstance(value, bytes) else value,
        msg.leader_epoch(),
    )


def read_to_end(bootstrap: str, topic: str, group: str, timeout: float = 60) -> list[Consumed]:
    """Every record of `topic`, from the beginning to the end its partitions have now
    (nothing when there is no such topic); an error when that takes over `timeout`."""
    return [consumed(msg) for msg in messages_to_end(bootstrap, topic, group, timeout)]


def messages_to_end(bootstrap: str, topic: str, group: str, timeout: float = 60) -> list[Message]:
    """read_to_end's records as the client gives them (keys and values as bytes)."""
    consumer = clients.consumer(bootstrap, group, {"enable.auto.commit": False})
    try:
        meta = consumer.list_topics(topic, timeout=15).topics.get(topic)
        if meta is None or meta.error is not None:
            return []
        ends = {}
        for p in meta.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)
            if high > low:
                ends[p] = high
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
        out: list[Message] = []
        deadline = time.monotonic() + timeout
        while ends and time.monotonic() < deadline:
            for msg in consumer.consume(500, timeout=1.0):
                if msg.error():
                    continue
                out.append(msg)
                if (msg.offset() or 0) + 1 >= ends.get(msg.partition() or 0, 0):
                    ends.pop(msg.partition() or 0, None)
    finally:
        consumer.close()
    if ends:
        raise KafkalabError(f"could not read topic {topic} to its end (partitions {sorted(ends)})")
    return out
