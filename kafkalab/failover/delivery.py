"""The arithmetic of the delivery verdict: every acknowledged record must be consumed
(Kafka's own criterion, its system tests' validate_delivery).

lost = acked ids never consumed, duplicates = ids the log holds at more than one offset.
A position the consumer happened to read twice is one record, counted apart as `reread`:
the verdict is about what the log holds. The records come from kafkalab.failover.traffic
(what the producer was told, what the consumer read back).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, order=True)
class Record:
    """One record as the producer was told it landed, or as the consumer read it.

    offset is -1 for an ack without an offset: the idempotent producer's retry of a batch
    the broker already had (DUPLICATE_SEQUENCE_NUMBER) is a success with no offset.
    """

    partition: int
    offset: int
    key: str
    id: int


@dataclass
class Delivery:
    """What was acknowledged against what was read back."""

    acked: int  # distinct ids the cluster acknowledged
    consumed: int  # log positions read up to the last acked offsets (duplicates included)
    lost: list[Record]  # acked, never read: where the producer was told they were
    duplicates: dict[int, list[tuple[int, int]]]  # id -> its (partition, offset)s, if 2+
    out_of_order: int  # read after a higher id of the same partition (sent later)
    moved: int  # acked ids read back at another partition/offset than acknowledged
    unacked_consumed: int  # read but never acked (a failed or timed-out send that landed)
    acked_without_offset: int = 0  # acks that came without an offset (see Record)
    reread: int = 0  # positions the consumer was handed again (one record, read twice)

    @property
    def duplicate_records(self) -> int:
        """Extra copies in the log: an id at three offsets counts two."""
        return sum(len(at) - 1 for at in self.duplicates.values())

    def as_dict(self, limit: int = 1000) -> dict[str, Any]:
        return {
            "acked": self.acked,
            "consumed": self.consumed,
            "lost": len(self.lost),
            "lost_records": [r.__dict__ for r in self.lost[:limit]],
            "duplicates": len(self.duplicates),
            "duplicate_records": self.duplicate_records,
            "duplicate_ids": sorted(self.duplicates)[:limit],
            "duplicate_positions": {
                str(i): [list(at) for at in self.duplicates[i]]
                for i in sorted(self.duplicates)[:limit]
            },
            "reread": self.reread,
            "out_of_order": self.out_of_order,
            "moved": self.moved,
            "unacked_consumed": self.unacked_consumed,
            "acked_without_offset": self.acked_without_offset,
        }


def check(acked: Iterable[Record], consumed: Iterable[Record]) -> Delivery:
    """The arithmetic of the verdict, on plain logs (any order)."""
    acked_by_id: dict[int, Record] = {}
    for r in acked:
        acked_by_id.setdefault(r.id, r)
    handed = 0
    at: dict[tuple[int, int], Record] = {}
    for r in consumed:  # a position read twice is one record of the log
        handed += 1
        at.setdefault((r.partition, r.offset), r)
    read = sorted(at.values())
    where: dict[int, list[tuple[int, int]]] = {}
    for r in read:
        where.setdefault(r.id, []).append((r.partition, r.offset))
    lost = sorted((r for i, r in acked_by_id.items() if i not in where), key=lambda r: r.id)
    duplicates = {i: where[i] for i in sorted(where) if len(where[i]) > 1}
    moved = sum(
        1
        for i, r in acked_by_id.items()
        if i in where and r.offset >= 0 and (r.partition, r.offset) not in where[i]
    )
    return Delivery(
        acked=len(acked_by_id),
        consumed=len(read),
        lost=lost,
        duplicates=duplicates,
        out_of_order=_out_of_order(read),
        moved=moved,
        unacked_consumed=sum(1 for i in where if i not in acked_by_id),
        acked_without_offset=sum(1 for r in acked_by_id.values() if r.offset < 0),
        reread=handed - len(read),
    )


def _out_of_order(read: list[Record]) -> int:
    """Records a partition holds after a record with a higher id (ids are sent in order)."""
    seen: set[int] = set()
    highest: dict[int, int] = {}
    late = 0
    for r in sorted(read, key=lambda r: (r.partition, r.offset)):
        if r.id in seen:
            continue  # a duplicate is counted as such, not again as reordering
        seen.add(r.id)
        if r.id < highest.get(r.partition, -1):
            late += 1
        highest[r.partition] = max(highest.get(r.partition, -1), r.id)
    return late


def targets(acked: Iterable[Record]) -> dict[int, int]:
    """Per partition, the offset after the last acknowledged one: what the consumer reads to.

    -1 for a partition with an ack without offset: read it to the end of its log."""
    out: dict[int, int] = {}
    for r in acked:
        if out.get(r.partition) == -1:
            continue
        out[r.partition] = -1 if r.offset < 0 else max(out.get(r.partition, 0), r.offset + 1)
    return out
