"""What the streaming jobs should produce, computed from their input, and what they did.

The rides job's output is checked against counts computed here from spark/data/rides.csv:
one record per (1-minute window, pickup location) in `rides-counts`, with the number of
rides whose pickup time falls in that minute. Read the topics from inside the lab
network (netns.enter / netns.run_in).
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, TopicPartition

from kafkalab.paths import repo_root

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
RIDES_CSV = repo_root() / "spark" / "data" / "rides.csv"
MOUNTAIN_VIEW = (37.4133, -122.1162)
EARTH_RADIUS_MILES = 3961.0

WindowKey = tuple[str, int]  # (window start, pickup location)


@dataclass(frozen=True)
class RideRow:
    pickup: datetime
    pu_location_id: int


def read_rides(path: Path = RIDES_CSV) -> list[RideRow]:
    """Pickup time and location of each ride, in file (= replay) order."""
    with path.open(newline="") as f:
        return [
            RideRow(
                datetime.strptime(r["tpep_pickup_datetime"], TIME_FORMAT), int(r["PULocationID"])
            )
            for r in csv.DictReader(f)
        ]


def rides_in_topic(bootstrap: str, topic: str = "rides") -> list[RideRow]:
    """The rides the producer has written so far (pickup time and location of each)."""
    out = []
    for _key, value in read_topic(bootstrap, topic):
        if value is None:
            continue
        ride = json.loads(value)
        pickup = datetime.strptime(ride["tpep_pickup_datetime"], TIME_FORMAT)
        out.append(RideRow(pickup, int(ride["pu_location_id"])))
    return out


def window_start(t: datetime, minutes: int = 1) -> datetime:
    return t.replace(second=0, microsecond=0) - timedelta(minutes=t.minute % minutes)


def expected_counts(
    rides: list[RideRow], minutes: int = 1, closed_before: datetime | None = None
) -> dict[WindowKey, int]:
    """Rides per (window start, location); only windows ending by `closed_before` if given
    (those a watermark at `closed_before` has released)."""
    counts: Counter[WindowKey] = Counter()
    for r in rides:
        start = window_start(r.pickup, minutes)
        if closed_before is None or start + timedelta(minutes=minutes) <= closed_before:
            counts[(start.strftime(TIME_FORMAT), r.pu_location_id)] += 1
    return dict(counts)


def watermark_after(rides: list[RideRow], delay: timedelta = timedelta(minutes=2)) -> datetime:
    """Where Spark's watermark stands once it has seen these rides."""
    return max(r.pickup for r in rides) - delay


def max_lateness(rides: list[RideRow]) -> timedelta:
    """How far behind the latest pickup seen so far a ride arrives, at worst."""
    latest, worst = None, timedelta(0)
    for r in rides:
        if latest is not None and latest - r.pickup > worst:
            worst = latest - r.pickup
        latest = r.pickup if latest is None else max(latest, r.pickup)
    return worst


# --- reading a topic to its end ------------------------------------------------------------


def read_topic(bootstrap: str, topic: str, timeout: float = 30) -> list[tuple[str, str | None]]:
    """Every record of `topic` from the beginning to its current end, as (key, value)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "kafkalab-streaming-check",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        md = consumer.list_topics(topic, timeout=timeout)
        meta = md.topics.get(topic)
        if meta is None or meta.error is not None:
            return []
        ends = {}
        for p in meta.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
            if high > low:
                ends[p] = (low, high)
        consumer.assign([TopicPartition(topic, p, low) for p, (low, _h) in ends.items()])
        out: list[tuple[str, str | None]] = []
        left = {p: high for p, (_low, high) in ends.items()}
        while left:
            msg = consumer.poll(timeout)
            if msg is None:
                raise KafkaException(f"{topic}: no record within {timeout:.0f}s before its end")
            if msg.error():
                continue
            value = msg.value()
            out.append(((msg.key() or b"").decode(), None if value is None else value.decode()))
            partition, offset = msg.partition(), msg.offset()
            if (
                partition is not None
                and offset is not None
                and offset + 1 >= left.get(partition, 0)
            ):
                left.pop(partition, None)
        return out
    finally:
        consumer.close()


# --- comparing the windowed counts -----------------------------------------------------------


@dataclass
class CountsReport:
    expected: int  # (window, location) pairs expected
    received: int  # records in the sink
    missing: list[WindowKey] = field(default_factory=list)
    wrong: list[tuple[WindowKey, int, int]] = field(default_factory=list)  # key, got, want
    unexpected: list[WindowKey] = field(default_factory=list)
    duplicates: list[WindowKey] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.wrong or self.unexpected or self.duplicates)

    def problems(self) -> list[str]:
        out = []
        if self.missing:
            out.append(f"{len(self.missing)} windows missing, e.g. {self.missing[:3]}")
        if self.wrong:
            out.append(
                f"{len(self.wrong)} windows with a wrong count, e.g. "
                + ", ".join(f"{k}: {got} instead of {want}" for k, got, want in self.wrong[:3])
            )
        if self.unexpected:
            out.append(f"{len(self.unexpected)} windows not in the CSV, e.g. {self.unexpected[:3]}")
        if self.duplicates:
            out.append(f"{len(self.duplicates)} windows written twice, e.g. {self.duplicates[:3]}")
        return out

    def summary(self) -> str:
        verdict = "match" if self.ok else "; ".join(self.problems())
        return f"{self.received} records for {self.expected} expected windows: {verdict}"


def parse_counts(records: list[tuple[str, str | None]]) -> list[tuple[WindowKey, int]]:
    out = []
    for _key, value in records:
        if value is None:
            continue
        v = json.loads(value)
        out.append(((str(v["window_start"]), int(v["pu_location_id"])), int(v["count"])))
    return out


def compare_counts(
    expected: dict[WindowKey, int], received: list[tuple[WindowKey, int]]
) -> CountsReport:
    seen: Counter[WindowKey] = Counter(k for k, _ in received)
    got = dict(received)
    report = CountsReport(expected=len(expected), received=len(received))
    report.duplicates = sorted(k for k, n in seen.items() if n > 1)
    report.missing = sorted(k for k in expected if k not in got)
    report.unexpected = sorted(k for k in got if k not in expected)
    report.wrong = sorted((k, got[k], n) for k, n in expected.items() if k in got and got[k] != n)
    return report


# --- rider locations (seed 002) ------------------------------------------------------------


def geo_distance(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance in miles, as the job's GEO_DISTANCE and ksqlDB's."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_MILES * math.asin(math.sqrt(a))


def riders_within(
    locations: list[tuple[str, float, float]],
    miles: float = 5,
    center: tuple[float, float] = MOUNTAIN_VIEW,
) -> set[str]:
    """Riders whose latest location (last in the list) is within `miles` of `center`."""
    latest = {p: (lat, lon) for p, lat, lon in locations}
    return {p for p, (lat, lon) in latest.items() if geo_distance(lat, lon, *center) <= miles}


def latest_by_key(records: list[tuple[str, str | None]]) -> dict[str, dict[str, object]]:
    """A topic read as a table: the last value of each key; a tombstone (null) deletes it."""
    out: dict[str, dict[str, object]] = {}
    for key, value in records:
        if value is None:
            out.pop(key, None)
        else:
            out[key] = json.loads(value)
    return out
