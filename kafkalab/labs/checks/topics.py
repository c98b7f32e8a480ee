"""Check kinds about topics, records, keys and consumer groups. Each looks at the cluster
itself (metadata, offsets, committed offsets, records read back), never at log text, and
says what is missing in the learner's words.
"""

from __future__ import annotations

import shlex
from typing import Literal

from pydantic import Field

from kafkalab.kafka.partitioner import java_partition
from kafkalab.labs.checks.base import Params, Verdict, existing_topic, kind
from kafkalab.labs.context import LabContext
from kafkalab.render import plural


class TopicParams(Params):
    topic: str
    partitions: int | None = Field(None, ge=1)
    replication_factor: int | None = Field(None, ge=1)
    config: dict[str, str] = Field(default_factory=dict)  # set on the topic itself


def _topic_title(p: TopicParams, _mode: str) -> str:
    bits = [plural(p.partitions, "partition")] if p.partitions else []
    if p.replication_factor:
        bits.append(f"replication factor {p.replication_factor}")
    bits += [f"{k}={v}" for k, v in p.config.items()]
    return f"topic {p.topic} exists" + (f" ({', '.join(bits)})" if bits else "")


@kind("topic", TopicParams, _topic_title)
def topic(ctx: LabContext, p: TopicParams) -> Verdict:
    from confluent_kafka.admin import ConfigResource, ConfigSource

    t = existing_topic(ctx, p.topic)
    v = Verdict()
    parts = list(t.partitions.values())
    if p.partitions and len(parts) != p.partitions:
        v.problems.append(
            f"topic {p.topic} has {plural(len(parts), 'partition')}, the lab wants {p.partitions}"
        )
    rf = len(parts[0].replicas) if parts else 0
    if p.replication_factor and rf != p.replication_factor:
        v.problems.append(
            f"topic {p.topic} has replication factor {rf}, the lab wants {p.replication_factor}"
        )
    if p.config:
        dynamic = ConfigSource.DYNAMIC_TOPIC_CONFIG
        res = ConfigResource(ConfigResource.Type.TOPIC, p.topic)
        entries = ctx.admin().describe_configs([res])[res].result(timeout=15)
        for name, want in p.config.items():
            e = entries.get(name)
            if e is None or e.source not in (dynamic, dynamic.value):
                now = f" (the brokers' default applies: {e.value})" if e is not None else ""
                v.problems.append(f"{name} is not set on topic {p.topic}{now}; set it to {want}")
            elif e.value != want:
                v.problems.append(f"{name} of topic {p.topic} is {e.value}, the lab wants {want}")
    return v


class RecordsParams(Params):
    topic: str
    values: list[str] = Field(default_factory=list)  # each must be there
    ordered: bool = False  # ... in one partition, in this order
    min_count: int = Field(0, ge=0)  # at least this many (matching key/value_prefix)
    key: str | None = None
    value_prefix: str | None = None


def _records_title(p: RecordsParams, _mode: str) -> str:
    what = []
    if p.values:
        what.append(", ".join(p.values) + (" (in this order)" if p.ordered else ""))
    if p.min_count:
        which = "records"
        if p.value_prefix:
            which += f" whose value starts with {p.value_prefix!r}"
        if p.key:
            which += f" with key {p.key!r}"
        what.append(f"at least {p.min_count} {which}")
    return f"topic {p.topic} holds " + " and ".join(what or ["records"])


@kind("records", RecordsParams, _records_title)
def records(ctx: LabContext, p: RecordsParams) -> Verdict:
    existing_topic(ctx, p.topic)
    recs = ctx.records(p.topic)
    v = Verdict()
    matching = [
        r
        for r in recs
        if (p.key is None or r.key == p.key)
        and (p.value_prefix is None or r.text.startswith(p.value_prefix))
    ]
    if len(matching) < max(p.min_count, 1 if not p.values else 0):
        v.problems.append(
            f"topic {p.topic} holds {plural(len(matching), 'such record')}, "
            f"the lab wants at least {max(p.min_count, 1)}"
        )
    values = [r.text for r in recs]
    missing = [x for x in p.values if x not in values]
    if missing:
        v.problems.append(
            f"no record with value {', '.join(repr(x) for x in missing)} in topic {p.topic}"
        )
    elif p.values and p.ordered:
        by_part: dict[int, list[str]] = {}
        for r in sorted(recs, key=lambda r: (r.partition, r.offset)):
            by_part.setdefault(r.partition, []).append(r.text)
        if not any(_subsequence(p.values, vs) for vs in by_part.values()):
            v.problems.append(
                f"{', '.join(p.values)} are in topic {p.topic}, but not in this "
                "order in one partition"
            )
    v.facts.append(f"{plural(len(recs), 'record')} in {p.topic}")
    return v


def _subsequence(want: list[str], have: list[str]) -> bool:
    it = iter(have)
    return all(any(h == w for h in it) for w in want)


class KeysParams(Params):
    topic: str
    keys: dict[str, list[str]] = Field(min_length=1)  # key -> its values, in produce order
    partitioner: Literal["murmur2", "any"] = "murmur2"


def _keys_title(p: KeysParams, _mode: str) -> str:
    return (
        f"keys {', '.join(p.keys)} of topic {p.topic} each stay in one partition, "
        "in the order they were produced"
    )


@kind("keys", KeysParams, _keys_title)
def keys(ctx: LabContext, p: KeysParams) -> Verdict:
    t = existing_topic(ctx, p.topic)
    n = len(t.partitions)
    recs = sorted(ctx.records(p.topic), key=lambda r: (r.partition, r.offset))
    v = Verdict()
    for key, want in p.keys.items():
        mine = [r for r in recs if r.key == key]
        if not mine:
            v.problems.append(f"no record with key {key!r} in {p.topic} yet")
            continue
        parts = sorted({r.partition for r in mine})
        if len(parts) > 1:
            v.problems.append(
                f"records with key {key!r} are spread over partitions "
                f"{', '.join(map(str, parts))}: a key keeps its partition only while the "
                "partition count stays the same"
            )
            continue
        expected = java_partition(key, n)
        if p.partitioner == "murmur2" and parts[0] != expected:
            v.problems.append(
                f"key {key!r} is in partition {parts[0]}, but kafka-console-producer.sh puts it in "
                f"partition {expected} (murmur2 of the key mod {n}): produce it with "
                "--property parse.key=true after the partitions were added"
            )
            continue
        if not _subsequence(want, [r.text for r in mine]):
            v.problems.append(
                f"key {key!r}: the values {', '.join(want)} are not all there in "
                f"this order (found: {', '.join(r.text for r in mine)})"
            )
            continue
        v.facts.append(f"{key} -> partition {parts[0]}")
    return v


# -- consumer groups -------------------------------------------------------------------------


class GroupParams(Params):
    group: str
    topic: str


@kind(
    "group_caught_up",
    GroupParams,
    lambda p, _m: f"consumer group {p.group} has read everything in {p.topic}",
)
def group_caught_up(ctx: LabContext, p: GroupParams) -> Verdict:
    t = existing_topic(ctx, p.topic)
    n = len(t.partitions)
    committed = ctx.committed(p.group, p.topic, n)
    if not committed:
        return Verdict(
            [
                f"group {p.group} has not committed any offset on {p.topic}: "
                "no consumer of that group has read it yet"
            ]
        )
    v = Verdict()
    total = 0
    for part, (_lo, end) in sorted(ctx.end_offsets(p.topic, n).items()):
        done = committed.get(part)
        if done is None:
            if end > 0:
                v.problems.append(
                    f"partition {part}: group {p.group} has read none of its "
                    f"{plural(end, 'record')}"
                )
            continue
        total += end - done
        if done < end:
            v.problems.append(
                f"partition {part}: {plural(end - done, 'record')} not read yet (lag {end - done})"
            )
    v.facts.append(f"total lag {total}")
    return v


class GroupKeyParams(Params):
    group: str
    topic: str
    key: str


@kind(
    "group_read_only_key",
    GroupKeyParams,
    lambda p, _m: (
        f"consumer group {p.group} read only what came after it started "
        f"(the {p.key!r} records), none of the older records"
    ),
)
def group_read_only_key(ctx: LabContext, p: GroupKeyParams) -> Verdict:
    t = existing_topic(ctx, p.topic)
    committed = ctx.committed(p.group, p.topic, len(t.partitions))
    keyed = [r for r in ctx.records(p.topic) if r.key == p.key]
    if not keyed:
        return Verdict([f"no record with key {p.key!r} in {p.topic} yet"])
    if not committed:
        return Verdict(
            [
                f"group {p.group} has not committed any offset: start its consumer "
                f"first, then produce the {p.key!r} records while it runs"
            ]
        )
    first: dict[int, int] = {}
    for r in keyed:
        first[r.partition] = min(first.get(r.partition, r.offset), r.offset)
    v = Verdict()
    others = sorted(set(committed) - set(first))
    if others:
        v.problems.append(
            f"group {p.group} committed offsets on partition(s) {', '.join(map(str, others))}, "
            f"where no {p.key!r} record is: it read older records too (auto.offset.reset=earliest?)"
        )
    for part, off in sorted(committed.items()):
        if part in first and off <= first[part]:
            v.problems.append(
                f"partition {part}: group {p.group} stopped before the {p.key!r} records"
            )
    v.facts.append("committed: " + ", ".join(f"p{k}@{o}" for k, o in sorted(committed.items())))
    return v


class GroupTypeParams(Params):
    group: str
    type: Literal["consumer", "classic"]


@kind(
    "group_type",
    GroupTypeParams,
    lambda p, _m: f"consumer group {p.group} runs on the {p.type} group protocol",
)
def group_type(ctx: LabContext, p: GroupTypeParams) -> Verdict:
    """The group's type as its coordinator says (DescribeGroups: Consumer for KIP-848's
    protocol, Classic for the old one; an empty group keeps its type), and each member's
    partitions while members run."""
    described = ctx.admin().describe_consumer_groups([p.group])[p.group].result(timeout=15)
    state = described.state.name.lower()
    if state == "dead":
        return Verdict([f"there is no group {p.group}: no member has joined it yet"])
    have = described.type.name.lower()
    v = (
        Verdict()
        if have == p.type
        else Verdict(
            [f"group {p.group} is a {have} group, not a {p.type} one (group.protocol={p.type}?)"]
        )
    )
    v.facts.append(f"{have} group, state {state}")
    for m in described.members:
        parts = sorted(tp.partition for tp in m.assignment.topic_partitions)
        v.facts.append(f"member {m.client_id or m.member_id}: partitions {parts}")
    return v


class ShareGroupParams(Params):
    group: str
    topic: str


def _share_offsets(text: str, group: str, topic: str) -> dict[int, tuple[int, int]]:
    """`kafka-share-groups.sh --describe --offsets` rows of one topic: partition ->
    (start offset, lag)."""
    out = {}
    for line in text.splitlines():
        cols = line.split()
        if len(cols) == 5 and cols[:2] == [group, topic] and cols[2].isdigit():
            start, lag = (int(c) if c.lstrip("-").isdigit() else -1 for c in cols[3:])
            out[int(cols[2])] = (start, lag)
    return out


@kind(
    "share_group_done",
    ShareGroupParams,
    lambda p, _m: f"share group {p.group} has acknowledged every record of {p.topic}",
)
def share_group_done(ctx: LabContext, p: ShareGroupParams) -> Verdict:
    """What the share group's coordinator says of it (Kafka's own kafka-share-groups.sh on a
    machine: confluent-kafka's admin has no share group call): it exists, and on every
    partition of the topic nothing is left to deliver (lag 0: each record accepted, or
    rejected, or given up after its last delivery)."""
    t = existing_topic(ctx, p.topic)
    script = shlex.join(
        [
            "kafka-share-groups.sh",
            "--bootstrap-server",
            ctx.bootstrap,
            "--describe",
            "--group",
            p.group,
            "--offsets",
        ]
    )
    proc = ctx.sh(ctx.tool_host(), script)
    said = proc.stdout + proc.stderr
    if f"Group {p.group} is not a share group" in said:
        return Verdict([f"group {p.group} is a consumer group, not a share group"])
    if "GroupIdNotFoundException" in said:
        return Verdict([f"there is no share group {p.group}: no worker has joined it yet"])
    rows = _share_offsets(said, p.group, p.topic)
    if not rows:
        return Verdict([f"share group {p.group} has not read {p.topic} yet"])
    v = Verdict()
    for part in range(len(t.partitions)):
        start, lag = rows.get(part, (-1, -1))
        if part not in rows or lag < 0:
            v.problems.append(f"partition {part}: share group {p.group} has not started on it")
        elif lag != 0:
            v.problems.append(
                f"partition {part}: {plural(lag, 'record')} not acknowledged yet (lag {lag})"
            )
        else:
            v.facts.append(f"partition {part}: start offset {start}, lag 0")
    return v
