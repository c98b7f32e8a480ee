"""Who wrote a record: the producer id, producer epoch and sequence number of the batch
that holds it, read from the partition's log on a broker with Kafka's own
`kafka-dump-log.sh` (batch headers only, no record data).

The failover verdict uses it to tell the two kinds of duplicate apart. The broker
deduplicates an idempotent producer's retries within one producer epoch; a copy written
under a newer epoch is a re-send by a client that bumped its epoch (librdkafka does so
when it cannot tell whether a request to a dead leader was persisted), which the broker
cannot recognise. Two copies under the same producer id and epoch would be the broker's
deduplication failing.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kafkalab.errors import KafkalabError
from kafkalab.kafka import tools
from kafkalab.targets.cluster import InventoryCluster

_FIELD = re.compile(r"(\w+): (-?\d+)")


@dataclass(frozen=True)
class Writer:
    """The producer that wrote one record, as its batch header says."""

    producer_id: int  # -1: not an idempotent producer
    epoch: int
    sequence: int  # the record's own sequence number (-1 without idempotence)


def parse(dump: str, offsets: Iterable[int]) -> dict[int, Writer]:
    """The writer of each wanted offset, from kafka-dump-log.sh's batch lines."""
    wanted = set(offsets)
    found: dict[int, Writer] = {}
    for line in dump.splitlines():
        if not line.startswith("baseOffset:"):
            continue
        f = {k: int(v) for k, v in _FIELD.findall(line)}
        try:
            base, last = f["baseOffset"], f["lastOffset"]
            pid, epoch, seq = f["producerId"], f["producerEpoch"], f["baseSequence"]
        except KeyError:
            continue
        for offset in wanted:
            if base <= offset <= last:
                found[offset] = Writer(pid, epoch, seq + offset - base if seq >= 0 else -1)
    return found


def read_writers(
    cluster: InventoryCluster, host: str, topic: str, partition: int, offsets: Iterable[int]
) -> dict[int, Writer]:
    """Dump the partition's segments on `host` (a broker with a replica) and parse them."""
    script = (
        "set -e; "
        "dir=$(sed -n 's/^log.dirs=//p' /etc/kafka/server.properties | cut -d, -f1); "
        f'cd "$dir"/{shlex.quote(f"{topic}-{partition}")}; '
        'kafka-dump-log.sh --files "$(ls *.log | paste -sd, -)"'
    )
    try:
        proc = tools.run(cluster, host, script, timeout=180)
    except subprocess.TimeoutExpired:
        raise KafkalabError(f"kafka-dump-log.sh on {host} took over 180s") from None
    if proc.returncode != 0:
        detail = (proc.stderr.strip() or proc.stdout.strip())[-300:]
        raise KafkalabError(f"kafka-dump-log.sh on {host} failed: {detail}")
    return parse(proc.stdout, offsets)


def read_all(
    cluster: InventoryCluster,
    topic: str,
    positions: Iterable[tuple[int, int]],
    leader_host: Callable[[int], str | None],
) -> tuple[dict[tuple[int, int], Writer], list[str]]:
    """The writer of each (partition, offset), read on each partition's leader
    (`leader_host`: None when it has none); and, for each partition not read, why."""
    by_partition: dict[int, list[int]] = {}
    for partition, offset in positions:
        by_partition.setdefault(partition, []).append(offset)
    found: dict[tuple[int, int], Writer] = {}
    unread: list[str] = []
    for partition, offsets in sorted(by_partition.items()):
        host = leader_host(partition)
        if host is None:
            unread.append(f"partition {partition} has no leader to read its log from")
            continue
        try:
            writers = read_writers(cluster, host, topic, partition, offsets)
        except (KafkalabError, OSError) as exc:
            unread.append(str(exc))
            continue
        found.update({(partition, o): w for o, w in writers.items()})
    return found, unread


RESENT = "re-sent by the client after it bumped its producer epoch"


def cause(copies: list[Writer | None]) -> str:
    """Why one record is in the log more than once, as far as its writers tell."""
    if len(copies) < 2 or any(c is None for c in copies):
        return "unknown (writers not read from the log)"
    known = [c for c in copies if c is not None]
    if any(c.producer_id < 0 for c in known):
        return "not an idempotent producer: a plain retry"
    if len({c.producer_id for c in known}) > 1:
        return "written by different producer ids"
    if len({c.epoch for c in known}) == len(known):
        return RESENT
    return "same producer epoch: the broker's deduplication did not catch it"


def resent_after_epoch_bump(copies: list[Writer | None]) -> bool:
    """Every copy by one idempotent producer, each under its own epoch: the client
    re-sent after bumping its epoch, outside the broker's deduplication."""
    return cause(copies) == RESENT
