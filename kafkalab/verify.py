"""The delivery verdict: every acknowledged record must be consumed (Kafka's validate_delivery).

A `RecordingProducer` sends numbered records from its own thread and logs each
acknowledged one as (partition, offset, key, id); `consume_to` reads the topic back up
to the producer's last acknowledged offsets; `check` does the arithmetic: lost = acked
ids never consumed, duplicates = ids the log holds at more than one offset. A position the
consumer happened to read twice is one record, counted apart as `reread`: the verdict is
about what the log holds. Run the producer and the consumer inside the lab's network
namespace (`netns.run_in`, or a thread started there).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

KEYS = 32  # record i has key key-(i % KEYS): every partition gets records, in id order
# librdkafka's own log lines (connection refused while a broker is down, ...) go here,
# not to the terminal; the verdict says what matters.
RDKAFKA_LOG = logging.getLogger("kafkalab.rdkafka")
RDKAFKA_LOG.addHandler(logging.NullHandler())
RDKAFKA_LOG.propagate = False


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


@dataclass
class SendStats:
    sent: int = 0
    acked: int = 0
    failed: Counter[str] = field(default_factory=Counter)  # error name -> sends
    unfinished: int = 0  # neither acked nor failed when the producer gave up waiting
    max_ack_gap_s: float = 0.0  # the longest time without any acknowledgement

    def as_dict(self) -> dict[str, Any]:
        return {
            "sent": self.sent,
            "acked": self.acked,
            "failed": sum(self.failed.values()),
            "failed_by_error": dict(self.failed),
            "unfinished": self.unfinished,
            "max_ack_gap_s": round(self.max_ack_gap_s, 2),
        }


class RecordingProducer:
    """Sends records 0, 1, 2, ... at `rate` per second from its own thread, logging acks.

    It keeps sending until `finish()` was called and at least `records` were sent, so
    faults always happen under load. Start it from a thread inside the lab namespace.
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        config: Mapping[str, Any],
        records: int,
        rate: int,
        flush_timeout: float = 120,
    ) -> None:
        self.topic = topic
        self.records = records
        self.rate = rate
        self.flush_timeout = flush_timeout
        self.config = {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "logger": RDKAFKA_LOG,
            **config,
        }
        self.acked: list[Record] = []
        self.stats = SendStats()
        self.error: BaseException | None = None
        self._ack_times: list[float] = []
        self._finish = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"producer-{topic}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def finish(self, timeout: float | None = None) -> SendStats:
        """Stop once `records` are sent, wait for the outstanding acks, return the stats."""
        self._finish.set()
        left = max(0, self.records - self.stats.sent) / max(self.rate, 1)
        self._thread.join(timeout if timeout is not None else left + self.flush_timeout + 30)
        if self.error is not None:
            raise self.error
        return self.stats

    def _done(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.stats.failed[err.name()] += 1
            return
        offset = msg.offset()
        self.acked.append(
            Record(
                msg.partition(),
                -1 if offset is None or offset < 0 else offset,
                msg.key().decode(),
                int(msg.value()),
            )
        )
        self._ack_times.append(time.monotonic())
        self.stats.acked += 1

    def _run(self) -> None:
        try:
            self._send_all()
        except BaseException as exc:  # surfaced by finish()
            self.error = exc

    def _send_all(self) -> None:
        producer = Producer(self.config)
        begin = time.monotonic()
        i = 0
        while not (self._finish.is_set() and i >= self.records):
            due = begin + i / self.rate
            now = time.monotonic()
            if now < due:
                producer.poll(min(due - now, 0.05))
                continue
            try:
                producer.produce(
                    self.topic, key=f"key-{i % KEYS}", value=str(i), on_delivery=self._done
                )
            except BufferError:
                producer.poll(0.1)  # the local queue is full: the cluster is not taking writes
                continue
            i += 1
            self.stats.sent = i
            producer.poll(0)
        self.stats.unfinished = producer.flush(self.flush_timeout)
        times = [begin, *self._ack_times, time.monotonic()]
        self.stats.max_ack_gap_s = max(b - a for a, b in itertools.pairwise(times))

    @property
    def acked_count(self) -> int:
        return self.stats.acked


@dataclass
class ReadBack:
    records: list[Record]
    short: dict[int, int]  # partition -> end offset, where the log ends before the target


def consume_to(
    bootstrap: str,
    topic: str,
    until: Mapping[int, int],
    settle: float = 10,
    timeout: float = 180,
) -> ReadBack:
    """Read every partition from the beginning up to (not including) `until[p]`
    (-1: to the end of its log, as it is now).

    A partition whose log ends before its target (records truncated away) is given
    `settle` seconds to grow, then left as it is: what is missing there is lost.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"kafkalab-verify-{topic}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
            "logger": RDKAFKA_LOG,
        }
    )
    until = dict(until)
    for p, end in until.items():
        if end < 0:
            until[p] = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)[1]
    pending = {p for p, end in until.items() if end > 0}
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(pending)])
    out: list[Record] = []
    short: dict[int, int] = {}
    short_since: dict[int, float] = {}
    deadline = time.monotonic() + timeout
    try:
        while pending and time.monotonic() < deadline:
            now = time.monotonic()
            for p, since in list(short_since.items()):
                if p in pending and now - since > settle:
                    pending.discard(p)
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            p, offset, err = msg.partition() or 0, msg.offset(), msg.error()
            if offset is None:
                continue
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF and p in pending:
                    short[p] = offset
                    short_since.setdefault(p, time.monotonic())
                continue
            short.pop(p, None)
            short_since.pop(p, None)
            if offset < until[p]:
                raw_key = msg.key()
                key = raw_key.decode() if isinstance(raw_key, bytes) else ""
                out.append(Record(p, offset, key, _id(msg.value())))
            if offset + 1 >= until[p]:
                pending.discard(p)
    finally:
        consumer.close()
    short.update({p: -1 for p in pending if p not in short})  # timed out without an answer
    return ReadBack(out, short)


def _id(value: str | bytes | None) -> int:
    try:
        return int(value or b"")
    except ValueError:
        return -1  # not one of ours
