"""Check kinds about a Kafka Streams application's output: lab 10's count of rides per
pickup location, compared with counts computed from spark/data/rides.csv (the rides the
lab's producer replays into `rides`).
"""

from __future__ import annotations

from typing import Literal

from kafkalab.labs.checks.base import Params, Verdict, existing_topic, kind
from kafkalab.labs.context import LabContext
from kafkalab.render import plural
from kafkalab.streaming import expected, kstreams


class KeyCountsParams(Params):
    topic: str
    expected: Literal["rides_per_pickup_location"] = "rides_per_pickup_location"


def _key_counts_title(p: KeyCountsParams, _mode: str) -> str:
    return f"the latest count per key in {p.topic} is the number of rides per pickup location"


@kind("key_counts", KeyCountsParams, _key_counts_title)
def key_counts(ctx: LabContext, p: KeyCountsParams) -> Verdict:
    existing_topic(ctx, p.topic)
    want = kstreams.expected_counts(expected.read_rides())
    got = kstreams.latest_counts(ctx.bootstrap, p.topic)
    return compare_key_counts(want, got, p.topic)


def compare_key_counts(want: dict[str, int], got: dict[str, int], topic: str) -> Verdict:
    """Every key's latest count equals the expected one; no key that should not be there."""
    v = Verdict()
    missing = sorted(k for k in want if k not in got)
    wrong = sorted((k, got[k], n) for k, n in want.items() if k in got and got[k] != n)
    extra = sorted(k for k in got if k not in want)
    if missing:
        v.problems.append(
            f"{plural(len(missing), 'pickup location')} without a count in {topic},"
            f" e.g. {', '.join(missing[:3])}"
        )
    if wrong:
        v.problems.append(
            f"{plural(len(wrong), 'pickup location')} with a wrong latest count, e.g. "
            + ", ".join(f"{k}: {g} instead of {n}" for k, g, n in wrong[:3])
        )
    if extra:
        v.problems.append(f"keys not in rides.csv in {topic}: {', '.join(extra[:3])}")
    v.facts.append(f"{plural(len(got), 'key')} in {topic}, {len(want)} pickup locations expected")
    return v
