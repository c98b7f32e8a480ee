"""Check kinds about brokers, replicas, leaders and the metadata quorum: what the failover
labs look at. Like every kind, they look at the cluster itself, never at log text.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from typing import Any

from pydantic import Field

from kafkalab.failover import forensics
from kafkalab.kafka.topics import Consumed
from kafkalab.labs.checks.base import Params, Remedy, Unmet, Verdict, existing_topic, kind
from kafkalab.labs.context import LabContext
from kafkalab.render import plural

# -- brokers, replicas, leaders --------------------------------------------------------------


class NoParams(Params):
    pass


@kind("brokers_up", NoParams, lambda _p, _m: "every broker is up and registered")
def brokers_up(ctx: LabContext, _p: NoParams) -> Verdict:
    live = ctx.live_brokers()
    return Verdict(
        [
            f"broker {i} ({h}) is down: start it (sudo systemctl start kafka on {h})"
            for i, h in sorted(ctx.brokers.items())
            if i not in live
        ]
    )


class TopicOnly(Params):
    topic: str


# Why a broker's AlterPartition thread dies (seen in lab 16, proved with kafka-clients 3.9.2
# alone): the Selectors of a broker's channels to the controller name their sensors by the
# broker id only, so its alter-partition and forwarding channels share them; when both
# rebuild their network client at once, as a migrating broker does when the KRaft controller
# takes over, one can register a metric on a sensor the other has just removed. The metric
# stays, and the next rebuild of that channel (the controller back on ZooKeeper) fails on it.
ISR_THREAD_DIES = (
    "Kafka 3.9 does at random when a broker's controller moves between KRaft and ZooKeeper "
    "(a migration's rollback: labs/16-migration-rollback/README.md, step 4)"
)
RESTART = "sudo systemctl restart kafka"


@kind(
    "isr_full", TopicOnly, lambda p, _m: f"every replica of {p.topic} is in sync (ISR = replicas)"
)
def isr_full(ctx: LabContext, p: TopicOnly) -> Verdict:
    t = existing_topic(ctx, p.topic)
    v = Verdict()
    leaders: set[int] = set()
    for part in sorted(t.partitions.values(), key=lambda x: x.id):
        out = [r for r in part.replicas if r not in part.isrs]
        if out:
            who = ", ".join(f"{r} ({ctx.host_of(r)})" for r in out)
            v.problems.append(
                f"partition {part.id}: replica {who} is not in the ISR "
                f"(ISR: {', '.join(map(str, part.isrs))})"
            )
            if part.leader is not None and part.leader >= 0:
                leaders.add(part.leader)
    hosts = [ctx.brokers[i] for i in sorted(leaders) if i in ctx.brokers]
    for host in sorted(ctx.isr_changes_stopped(hosts)) if hosts else []:
        why = (
            f"{host} leads some of them but can add no replica to an ISR: the thread that "
            "sends its ISR changes to the controller died (its server.log: "
            "'to-controller-alter-partition-channel-manager]: Error due to'), which "
            f"{ISR_THREAD_DIES}"
        )
        v.problems.append(f"{why}: restart it ({RESTART} on {host})")
        v.remedies.append(Remedy(host, RESTART, why))
    return v


@kind(
    "preferred_leaders",
    TopicOnly,
    lambda p, _m: f"every partition of {p.topic} is led by its preferred leader",
)
def preferred_leaders(ctx: LabContext, p: TopicOnly) -> Verdict:
    t = existing_topic(ctx, p.topic)
    v = Verdict()
    for part in sorted(t.partitions.values(), key=lambda x: x.id):
        want = part.replicas[0]
        if part.leader != want:
            v.problems.append(
                f"partition {part.id} is led by {part.leader} "
                f"({ctx.host_of(part.leader)}), its preferred leader is {want} "
                f"({ctx.host_of(want)})"
            )
    return v


class AckedParams(Params):
    topic: str
    acked_file: str  # in the lab's work dir: one acknowledged record per line
    min_acked: int = Field(1, ge=1)
    min_epochs: int = Field(2, ge=2)  # leader_changes only


def _acked(ctx: LabContext, p: AckedParams) -> tuple[list[str], Verdict]:
    path = ctx.workdir / p.acked_file
    acked = (
        [ln.split()[0] for ln in path.read_text().splitlines() if ln.strip()]
        if (path.exists())
        else []
    )
    if len(acked) < p.min_acked:
        return acked, Verdict(
            [
                f"{plural(len(acked), 'acknowledged record')} noted in {path}; "
                f"run the lab's producer.py (it notes each one) for at least "
                f"{p.min_acked}"
            ]
        )
    return acked, Verdict()


@kind(
    "no_acked_loss",
    AckedParams,
    lambda p, _m: f"every acknowledged record of {p.topic} can be read back (none lost)",
)
def no_acked_loss(ctx: LabContext, p: AckedParams) -> Verdict:
    acked, v = _acked(ctx, p)
    if not v.ok:
        return v
    records = ctx.records(p.topic)
    seen = Counter(r.text for r in records)
    lost = [a for a in dict.fromkeys(acked) if a not in seen]
    twice = {a for a, n in seen.items() if n > 1 and a in set(acked)}
    dups = sum(seen[a] - 1 for a in twice)
    v.facts.append(f"acknowledged {len(set(acked))}, lost {len(lost)}, duplicates {dups}")
    if twice:
        v.facts.extend(_who_wrote(ctx, p.topic, [r for r in records if r.text in twice]))
    if lost:
        v.problems.append(
            f"{plural(len(lost), 'acknowledged record')} cannot be read back "
            f"(lost): {', '.join(lost[:5])}{' ...' if len(lost) > 5 else ''}"
        )
    return v


def _who_wrote(ctx: LabContext, topic: str, copies: list[Consumed]) -> list[str]:
    """One line per duplicated record (the first five): where its copies are and why, as
    the batch headers on the partition's leader tell (kafka-dump-log.sh)."""
    by_record: dict[str, list[Consumed]] = {}
    for c in copies:
        by_record.setdefault(c.text, []).append(c)
    shown = dict(list(by_record.items())[:5])
    try:
        parts = existing_topic(ctx, topic).partitions
    except Unmet as exc:
        return [f"who wrote them is not known: {exc}"]

    def leader_host(partition: int) -> str | None:
        part = parts.get(partition)
        ok = part is not None and part.leader is not None and part.leader >= 0
        return ctx.host_of(part.leader) if ok else None

    positions = [(c.partition, c.offset) for cs in shown.values() for c in cs]
    writers, unread = forensics.read_all(ctx.cluster, topic, positions, leader_host)
    lines = []
    for text, cs in shown.items():
        ws = [writers.get((c.partition, c.offset)) for c in cs]
        where = ", ".join(
            f"{topic}-{c.partition}@{c.offset}"
            + (f" (producer {w.producer_id} epoch {w.epoch} seq {w.sequence})" if w else "")
            for c, w in zip(cs, ws, strict=True)
        )
        lines.append(f"{text} written {len(cs)} times: {where}: {forensics.cause(ws)}")
    if len(by_record) > len(shown):
        lines.append(f"... and {plural(len(by_record) - len(shown), 'more duplicated record')}")
    return lines + unread


@kind(
    "leader_changes",
    AckedParams,
    lambda p, _m: (
        f"{p.topic} acknowledged records under {p.min_epochs} leaders of one "
        "partition: the producer ran through a failover"
    ),
)
def leader_changes(ctx: LabContext, p: AckedParams) -> Verdict:
    acked, v = _acked(ctx, p)
    if not v.ok:
        return v
    wanted = set(acked)
    epochs: dict[int, set[int]] = {}
    for r in ctx.records(p.topic):
        if r.text in wanted and r.leader_epoch is not None:
            epochs.setdefault(r.partition, set()).add(r.leader_epoch)
    most = max((len(e) for e in epochs.values()), default=0)
    v.facts.append(
        "leader epochs: " + ", ".join(f"p{k}: {sorted(e)}" for k, e in sorted(epochs.items()))
    )
    if most < p.min_epochs:
        v.problems.append(
            "every partition took all the acknowledged records from one leader: "
            "stop the leader's broker while producer.py runs"
        )
    return v


# -- who leads the metadata -----------------------------------------------------------------


def _metadata_title(_p: NoParams, mode: str) -> str:
    if mode == "zookeeper":
        return "a new ZooKeeper leader took over since the lab started"
    return "a new active controller (KRaft quorum leader) took over since the lab started"


def _metadata_baseline(ctx: LabContext, _p: NoParams) -> dict[str, Any]:
    now = ctx.metadata_leader(replication=False)
    return {"leader": now.leader, "epoch": now.epoch}


@kind("metadata_leader_changed", NoParams, _metadata_title, baseline=_metadata_baseline)
def metadata_leader_changed(ctx: LabContext, p: NoParams) -> Verdict:
    then = ctx.baseline.get("metadata_leader_changed") or {}
    now = ctx.metadata_leader(replication=False)
    what = "ZooKeeper leader" if ctx.topo.mode == "zookeeper" else "active controller"
    service = "zookeeper" if ctx.topo.mode == "zookeeper" else "kafka"
    if now.leader is None:
        return Verdict(
            [
                f"there is no {what} right now (an election may be under way, or too "
                "few members run): wait a few seconds, start what you stopped"
            ]
        )
    v = Verdict(
        facts=[
            f"{what}: {now.leader}, epoch {now.epoch} (at the start: "
            f"{then.get('leader')}, epoch {then.get('epoch')})"
        ]
    )
    if then.get("epoch") is None or now.epoch is None or now.epoch <= then["epoch"]:
        v.problems.append(
            f"the {what} is still {now.leader}, as when the lab started: stop "
            f"{service} on {now.leader} (sudo systemctl stop {service}) and "
            "watch another member take over"
        )
    return v


def _healthy_title(_p: NoParams, mode: str) -> str:
    if mode == "zookeeper":
        return "every ZooKeeper server serves again (one leader, the others followers)"
    return "every controller is back in the quorum and caught up"


@kind("metadata_quorum_healthy", NoParams, _healthy_title)
def metadata_quorum_healthy(ctx: LabContext, _p: NoParams) -> Verdict:
    now = ctx.metadata_leader()
    v = Verdict(facts=[", ".join(f"{h}: {m}" for h, m in sorted(now.members.items()))])
    service = "zookeeper" if now.mode == "zookeeper" else "kafka"
    if now.leader is None:
        v.problems.append("no leader right now: start what you stopped and wait a few seconds")
    for host, state in sorted(now.members.items()):
        if state == "down":
            v.problems.append(
                f"{host} does not answer: start it (sudo systemctl start {service} on {host})"
            )
    for host, lag in sorted(now.lagging.items()):
        v.problems.append(
            f"{host} is not caught up with the leader yet (lag {lag}): start it "
            "if it is stopped, or wait a few seconds"
        )
    return v


class VotersParams(Params):
    voters: list[str] = Field(min_length=1)  # machine names
    observers: list[str] = Field(default_factory=list)


def _kraft_version(ctx: LabContext) -> int | None:
    """The finalized kraft.version (0: a static quorum, 1: dynamic, KIP-853), as
    kafka-features.sh describes it; None when the tool does not say."""
    script = shlex.join(["kafka-features.sh", "--bootstrap-server", ctx.bootstrap, "describe"])
    proc = ctx.sh(ctx.tool_host(), script)
    found = re.search(r"Feature: kraft\.version\s.*?FinalizedVersionLevel: (\d+)", proc.stdout)
    return int(found.group(1)) if found else None


@kind(
    "quorum_voters",
    VotersParams,
    lambda p, _m: (
        f"the KRaft quorum is dynamic, its voters {', '.join(p.voters)}"
        + (f"; {', '.join(p.observers)} observing" if p.observers else "")
    ),
)
def quorum_voters(ctx: LabContext, p: VotersParams) -> Verdict:
    """kraft.version and the quorum's members as the active controller says (the voters,
    and the observers: brokers and removed controllers that only read the metadata log)."""
    v = Verdict()
    level = _kraft_version(ctx)
    if level is None or level < 1:
        v.problems.append(
            f"the quorum is static (kraft.version {level}): voters can change only once it is "
            "dynamic (kafka-features.sh upgrade --feature kraft.version=1)"
        )
    now = ctx.metadata_leader()
    voting = sorted(h for h, s in now.members.items() if s in ("Leader", "Follower", "down"))
    watching = sorted(h for h, s in now.members.items() if s == "Observer")
    v.facts.append(f"kraft.version {level}; voters {voting}; observers {watching}")
    if voting != sorted(p.voters):
        v.problems.append(f"the voters are {', '.join(voting)}, not {', '.join(sorted(p.voters))}")
    missing = sorted(set(p.observers) - set(watching))
    if missing:
        v.problems.append(f"{', '.join(missing)} not among the observers ({', '.join(watching)})")
    return v
