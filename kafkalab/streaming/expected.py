"""What the streaming jobs should produce, computed from their input, and what they did.

The rides job's output is checked against counts computed here from spark/data/rides.csv:
one record per (1-minute window, pickup location) in `rides-counts`, with the number of
rides whose pickup time falls in that minute. Read the topics from inside the cluster's
network (netns.enter / netns.run_in).
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from kafkalab.kafka.topics import read_to_end
from kafkalab.paths import repo_root

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
RIDES_CSV = repo_root() / "spark" / "data" / "rides.csv"

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


# --- reading a topic to its end ------------------------------------------------------------


def read_topic(bootstrap: str, topic: str, timeout: float = 30) -> list[tuple[str, str | None]]:
    """Every record of `topic` from the beginning to its current end, as (key, value); a
    tombstone's value is None."""
    records = read_to_end(bootstrap, topic, "kafkalab-streaming-check", timeout)
    return [(r.key or "", r.value) for r in records]


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
