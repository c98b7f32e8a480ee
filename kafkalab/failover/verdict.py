"""A scenario run's result and its verdict: the delivery figures (kafkalab.failover.delivery)
against what the scenario expects (no loss; duplicates none, allowed, or only re-sends
after a producer epoch bump as the log shows them, kafkalab.failover.forensics), the
recovery timings, and the report `scenario run --report` writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafkalab.failover import forensics
from kafkalab.failover.delivery import Delivery
from kafkalab.failover.scenario import Scenario
from kafkalab.failover.traffic import SendStats
from kafkalab.render import plural


@dataclass
class Event:
    t: float  # seconds since the producer started
    step: str
    host: str | None = None
    note: str = ""


@dataclass
class Result:
    scenario: Scenario
    lab: str  # the cluster's network namespace ("lab" in the report, as it always was)
    mode: str
    topic: str
    started: str
    records: int
    rate: int
    seconds: float = 0.0
    events: list[Event] = field(default_factory=list)
    recovery: dict[str, list[float]] = field(default_factory=dict)
    sends: SendStats = field(default_factory=SendStats)
    delivery: Delivery | None = None
    short_partitions: dict[int, int] = field(default_factory=dict)
    healthy_after_s: float | None = None
    problems: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    # duplicate id -> who wrote each copy (same order as delivery.duplicates), or why not known
    duplicate_writers: dict[int, list[forensics.Writer | None]] = field(default_factory=dict)
    writers_unknown: str = ""

    @property
    def passed(self) -> bool:
        return not self.problems and not self.reasons


def judge(result: Result) -> None:
    """The reasons a run fails, from its delivery and sends against the scenario's
    expectation (none: it passes)."""
    r, d, e = result, result.delivery, result.scenario.expect
    if d is None:
        return
    if e.loss == "none" and d.lost:
        r.reasons.append(f"{len(d.lost)} acknowledged records lost (expected none)")
    if e.duplicates == "none" and d.duplicates:
        r.reasons.append(
            f"{plural(len(d.duplicates), 'record')} written more than once (expected none)"
        )
    if e.duplicates == "after-epoch-bump" and d.duplicates:
        unexplained = [
            i
            for i in d.duplicates
            if not forensics.resent_after_epoch_bump(r.duplicate_writers.get(i, []))
        ]
        if unexplained:
            why = f"; {r.writers_unknown}" if r.writers_unknown else ""
            r.reasons.append(
                f"{plural(len(unexplained), 'record')} written more than once by the same "
                "producer epoch, or by writers the log does not show (expected: only re-sends "
                f"after a producer epoch bump){why}"
            )
    if r.sends.unfinished:
        r.reasons.append(f"{r.sends.unfinished} sends never completed")
    if r.sends.acked == 0:
        r.reasons.append("nothing was acknowledged")


def to_dict(result: Result) -> dict[str, Any]:
    d = result.delivery
    rec = result.recovery
    return {
        "scenario": result.scenario.name,
        "passed": result.passed,
        "reasons": [*result.problems, *result.reasons],
        "expect": result.scenario.expect.model_dump(),
        "lab": result.lab,
        "mode": result.mode,
        "topic": result.topic,
        "started": result.started,
        "seconds": result.seconds,
        "settings": {
            "topic": result.scenario.topic.model_dump(),
            "producer": {
                **result.scenario.producer.config,
                "records": result.records,
                "rate": result.rate,
            },
        },
        "delivery": d.as_dict() if d else None,
        "duplicates": [
            {
                "id": i,
                "cause": forensics.cause(result.duplicate_writers.get(i, [])),
                "copies": [
                    {"partition": p, "offset": o, **(w.__dict__ if w else {})}
                    for (p, o), w in zip(
                        at, result.duplicate_writers.get(i, [None] * len(at)), strict=True
                    )
                ],
            }
            for i, at in list(d.duplicates.items())[:1000]
        ]
        if d
        else [],
        "duplicate_writers_unknown": result.writers_unknown or None,
        "sends": result.sends.as_dict(),
        "short_partitions": result.short_partitions,
        "recovery": {
            "leader_s": max(rec.get("leader_s", []), default=None),
            "isr_s": max(rec.get("isr_s", []), default=None),
            "controller_s": max(rec.get("controller_s", []), default=None),
            "isr_shrink_s": max(rec.get("isr_shrink_s", []), default=None),
            "healthy_after_s": result.healthy_after_s,
            "each": rec,
        },
        "events": [e.__dict__ for e in result.events],
    }
