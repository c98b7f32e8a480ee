"""The traffic a failover scenario runs under, and reading it back.

A `RecordingProducer` sends numbered records from its own thread and logs each
acknowledged one as (partition, offset, key, id); `consume_to` reads the topic back up
to the producer's last acknowledged offsets. kafkalab.failover.delivery does the
arithmetic. Start both from a thread inside the cluster's network namespace (their
clients come from kafkalab.kafka.clients).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

from kafkalab.failover.delivery import Record
from kafkalab.kafka import clients

KEYS = 32  # record i has key key-(i % KEYS): every partition gets records, in id order


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
    faults always happen under load. Start it from a thread inside the cluster's namespace.
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
        self.bootstrap = bootstrap
        self.config = {"linger.ms": 5, **config}
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
        producer = clients.producer(self.bootstrap, self.config)
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
    consumer = clients.consumer(
        bootstrap,
        f"kafkalab-verify-{topic}",
        {
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        },
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
