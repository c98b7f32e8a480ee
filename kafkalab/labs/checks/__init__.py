"""The check kinds a lab.yml may use, registered by their modules: `topics` (topics,
records, keys, consumer groups), `csv_as_json` (a CSV file published as JSON records),
`failover` (brokers, replicas, leaders, the metadata quorum), `migration` (a
ZooKeeper cluster migrated to KRaft), `streams` (a Kafka Streams
application's counts) and `upgrade` (the release each node runs, the features); `base`
says what a kind is. Here: validating a check's params, running one, noting the
baselines a lab's checks compare with.
"""

from __future__ import annotations

from typing import Any

from kafkalab.labs.checks import csv_as_json, failover, migration, streams, topics, upgrade
from kafkalab.labs.checks.base import KINDS, Unmet, Verdict, validate
from kafkalab.labs.context import LabContext
from kafkalab.labs.definition import CheckSpec

__all__ = [
    "KINDS",
    "Verdict",
    "applicable",
    "baselines",
    "csv_as_json",
    "failover",
    "migration",
    "run",
    "streams",
    "topics",
    "upgrade",
    "validate",
]


def applicable(ctx: LabContext) -> list[CheckSpec]:
    """The lab's checks for the cluster's mode."""
    return [c for c in ctx.lab.spec.checks if c.modes is None or ctx.topo.mode in c.modes]


def run(ctx: LabContext, spec: CheckSpec) -> tuple[str, Verdict]:
    """One check against the cluster: its title and verdict. A cluster in trouble is a
    failed check (what went wrong is its problem), never a traceback."""
    kind = KINDS[spec.kind]
    params = kind.params(**spec.params)
    title = spec.title or kind.title(params, ctx.topo.mode)
    try:
        verdict = kind.run(ctx, params)
    except Unmet as exc:
        verdict = Verdict([str(exc)])
    except Exception as exc:
        verdict = Verdict([f"could not look: {exc}"])
    return title, verdict


def baselines(ctx: LabContext) -> dict[str, Any]:
    """What the lab's checks compare with later, as things are now (at `lab start`)."""
    out: dict[str, Any] = {}
    for c in applicable(ctx):
        kind = KINDS[c.kind]
        if kind.baseline:
            out[c.kind] = kind.baseline(ctx, kind.params(**c.params))
    return out
