"""Playing a failover scenario (kafkalab.scenarios) against a lab, and its verdict.

A run creates a fresh topic, starts a recording producer, plays the schedule while a
watcher samples partition metadata, heals whatever is still broken, waits until the
cluster is healthy, reads everything back and compares (kafkalab.verify).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalab import faults, inventory, logdump, status, verify
from kafkalab.errors import KafkalabError
from kafkalab.render import plural
from kafkalab.scenarios import (
    ALL_OF,
    BRINGS_BACK,
    MAX_RATE,
    MAX_RECORDS,
    PAST,
    TAKES_DOWN,
    Scenario,
    Step,
    check_against,
    check_count,
)
from kafkalab.targets import netns
from kafkalab.targets.embedded import EmbeddedCluster
from kafkalab.topology import Topology

# -- the run ------------------------------------------------------------------------------


@dataclass
class Event:
    t: float  # seconds since the producer started
    step: str
    host: str | None = None
    note: str = ""


@dataclass
class Result:
    scenario: Scenario
    lab: str
    mode: str
    topic: str
    started: str
    records: int
    rate: int
    seconds: float = 0.0
    events: list[Event] = field(default_factory=list)
    recovery: dict[str, list[float]] = field(default_factory=dict)
    sends: verify.SendStats = field(default_factory=verify.SendStats)
    delivery: verify.Delivery | None = None
    short_partitions: dict[int, int] = field(default_factory=dict)
    healthy_after_s: float | None = None
    problems: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    # duplicate id -> who wrote each copy (same order as delivery.duplicates), or why not known
    duplicate_writers: dict[int, list[logdump.Writer | None]] = field(default_factory=dict)
    writers_unknown: str = ""

    @property
    def passed(self) -> bool:
        return not self.problems and not self.reasons


@dataclass
class Sample:
    t: float
    parts: dict[int, tuple[int, list[int], list[int]]]  # partition -> (leader, replicas, isr)
    controller: int


def admin_client(bootstrap: str) -> AdminClient:
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000}
    config["logger"] = verify.RDKAFKA_LOG
    return AdminClient(config)


class Watcher:
    """Samples the topic's leaders and ISRs a few times a second (history for timings)."""

    def __init__(self, bootstrap: str, topic: str, clock: Callable[[], float]) -> None:
        self.admin = admin_client(bootstrap)
        self.topic = topic
        self.clock = clock
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="watcher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                md = self.admin.list_topics(topic=self.topic, timeout=3)
                t = md.topics.get(self.topic)
                if t is not None and t.error is None and t.partitions:
                    parts = {
                        p.id: (p.leader, list(p.replicas), list(p.isrs))
                        for p in t.partitions.values()
                    }
                    self.samples.append(Sample(self.clock(), parts, md.controller_id))
            except Exception:  # a broker in trouble: try again
                pass
            self._stop.wait(0.25)

    def first(
        self,
        since: float,
        ok: Callable[[Sample], bool],
        timeout: float,
        cancel: threading.Event,
    ) -> float | None:
        """Seconds from `since` to the first sample after it where `ok` holds (waits)."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            fresh = self.samples[seen:]
            seen += len(fresh)
            for s in fresh:
                if s.t >= since and ok(s):
                    return s.t - since
            if time.monotonic() > deadline or cancel.is_set():
                return None
            time.sleep(0.1)


def in_lab_namespace(ns: str) -> None:
    """Refuse to make Kafka clients outside the lab's namespace (they would talk to the
    host's network)."""
    here = os.stat("/proc/thread-self/ns/net").st_ino
    if here != os.stat(netns.NETNS_RUN / ns).st_ino:
        raise KafkalabError(f"internal: Kafka clients must run inside network namespace {ns}")


class Runner:
    def __init__(
        self,
        lab: EmbeddedCluster,
        scenario: Scenario,
        result: Result,
        progress: Callable[[str], None],
        cancel: threading.Event | None = None,
    ) -> None:
        in_lab_namespace(lab.ns)
        self.cancel = cancel or threading.Event()
        self.lab = lab
        self.s = scenario
        self.result = result
        self.progress = progress
        hosts = inventory.hosts(inventory.load(lab.inventory_path))
        self.brokers = {
            hv["kafka_node_id"]: h for h, hv in hosts.items() if "kafka_broker" in hv["groups"]
        }
        self.kafka_hosts = faults.kafka_hosts(lab)
        self.node_of = {h: hv.get("kafka_node_id") for h, hv in hosts.items()}
        self.address = {h: hv["kafkalab_address"] for h, hv in hosts.items()}
        self.bootstrap = ",".join(
            f"{hosts[h]['kafkalab_address']}:9092" for h in self.brokers.values()
        )
        self.mode = result.mode
        self.t0 = time.monotonic()
        self.admin = admin_client(self.bootstrap)
        self.faulted: dict[str, str] = {}  # host -> the fault that took it down
        self.last: str | None = None
        self.t_down = self.t_back = 0.0

    def clock(self) -> float:
        return time.monotonic() - self.t0

    def note(self, step: str, host: str | None = None, note: str = "") -> None:
        ev = Event(round(self.clock(), 2), step, host, note)
        self.result.events.append(ev)
        where = f" {host}" if host else ""
        self.progress(f"{ev.t:7.1f}s  {step}{where}{f'  ({note})' if note else ''}")

    # -- the whole run --------------------------------------------------------------------

    def run(self) -> None:
        s, r = self.s, self.result
        self.wait_healthy("before the run", timeout=120, required=True)
        self.progress(
            f"topic {r.topic}: {s.topic.partitions} partitions, RF {s.topic.replication_factor}"
        )
        # Not client.create_topic: it drops its admin client before the future resolves,
        # and librdkafka then fails the request with _DESTROY.
        new = NewTopic(
            r.topic,
            num_partitions=s.topic.partitions,
            replication_factor=s.topic.replication_factor,
            config=s.topic.config,
        )
        self.create_topic(new)
        self.wait_topic_ready(r.topic, 60)
        self.t0 = time.monotonic()
        self.watch = Watcher(self.bootstrap, r.topic, self.clock)
        self.watch.start()
        producer = verify.RecordingProducer(
            self.bootstrap, r.topic, s.producer.config, r.records, r.rate
        )
        try:
            producer.start()
            settings = ", ".join(f"{k}={v}" for k, v in s.producer.config.items())
            self.progress(f"producing at {r.rate}/s ({settings})")
            try:
                self.wait_acked(producer, min(r.rate, r.records), 60)
                self.play(s.schedule, producer, current=None)
            except KafkalabError as exc:
                r.problems.append(str(exc))
                self.note("schedule stopped", note=str(exc))
            finally:
                self.recover()
            self.note("producer finishing", note=f"{producer.stats.sent} sent so far")
            r.sends = producer.finish()
        finally:
            self.watch.stop()
        self.note("reading back", note=f"{r.sends.acked} acked")
        back = verify.consume_to(self.bootstrap, r.topic, verify.targets(producer.acked))
        r.delivery = verify.check(producer.acked, back.records)
        r.short_partitions = back.short
        if r.delivery.duplicates and s.expect.duplicates != "allowed":
            self.who_wrote(r.delivery.duplicates)
        self.judge()

    def who_wrote(self, duplicates: dict[int, list[tuple[int, int]]]) -> None:
        """Read the producer id, epoch and sequence of every duplicate's copies from the log
        (kafka-dump-log.sh on the partition's leader)."""
        r = self.result
        self.note("reading the log", note=f"who wrote the {len(duplicates)} duplicates")
        parts = self.admin.list_topics(r.topic, timeout=15).topics[r.topic].partitions
        found: dict[tuple[int, int], logdump.Writer] = {}
        for p in sorted({p for at in duplicates.values() for p, _o in at}):
            offsets = [o for at in duplicates.values() for q, o in at if q == p]
            host = self.brokers.get(parts[p].leader) if p in parts else None
            if host is None:
                r.writers_unknown = f"partition {p} has no leader to read the log from"
                continue
            try:
                writers = logdump.read_writers(self.lab, host, r.topic, p, offsets)
            except KafkalabError as exc:
                r.writers_unknown = str(exc)
                continue
            found.update({(p, o): w for o, w in writers.items()})
        r.duplicate_writers = {i: [found.get(pos) for pos in at] for i, at in duplicates.items()}

    def recover(self) -> None:
        """Undo what the schedule left broken and wait until the cluster is whole again."""
        if self.faulted or any(faults.isolated(self.lab, h) for h in self.kafka_hosts):
            self.t_back = self.clock()
            self.note("healing what is still broken", ", ".join(sorted(self.faulted)) or None)
            faults.heal(self.lab)
            self.faulted.clear()
        self.wait_healthy("after the schedule", timeout=300, required=False)

    def judge(self) -> None:
        r, d, e = self.result, self.result.delivery, self.s.expect
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
                if not logdump.resent_after_epoch_bump(r.duplicate_writers.get(i, []))
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

    # -- the schedule -----------------------------------------------------------------------

    def play(
        self, steps: list[Step], producer: verify.RecordingProducer, current: str | None
    ) -> None:
        for step in steps:
            if self.cancel.is_set():
                raise KafkalabError("interrupted")
            kind = step.kind
            if kind == "repeat":
                for i in range(step.repeat or 1):
                    self.progress(f"round {i + 1} of {step.repeat}")
                    self.play(step.steps, producer, current)
            elif kind == "for_each":
                for host in self.brokers.values():
                    self.play(step.steps, producer, host)
            elif kind == "sleep":
                secs = step.arg  # seconds, checked when the file was read
                self.note(f"sleep {secs:g}s")
                self.cancel.wait(secs)
            elif kind == "wait":
                self.wait(step.arg, step.timeout, producer)
            else:
                self.fault(kind, step.arg, current)

    def resolve(self, kind: str, target: str, current: str | None) -> tuple[list[str], str]:
        """Hosts a target names now, and why (shown in the event log)."""
        latest = self.watch.samples[-1] if self.watch.samples else None
        if target == "all":
            if (kinds := ALL_OF[kind]) is None:
                return list(self.kafka_hosts), "every Kafka host"
            return [
                h for h, k in self.faulted.items() if k in kinds
            ], f"every {' or '.join(PAST[k] for k in kinds)} host"
        if target == "last":
            if self.last is None:
                raise KafkalabError("target `last` before any fault step")
            return [self.last], "the host of the previous fault"
        if target == "current":
            if current is None:
                raise KafkalabError("target `current` outside a for_each block")
            return [current], "this round's broker"
        if target in ("leader", "follower"):
            if latest is None or 0 not in latest.parts:
                raise KafkalabError("no metadata for partition 0 yet")
            leader, replicas, isr = latest.parts[0]
            if target == "leader":
                if leader not in self.brokers:
                    raise KafkalabError("partition 0 has no leader right now")
                return [self.brokers[leader]], "leader of partition 0"
            down = self.down_ids()
            followers = [b for b in replicas if b != leader and b in isr and b not in down]
            if not followers:
                raise KafkalabError("partition 0 has no in-sync follower right now")
            return [self.brokers[followers[0]]], "in-sync follower of partition 0"
        if target == "controller":
            node = self.controller()
            host = next((h for h, n in self.node_of.items() if n == node), None)
            if host is None:
                raise KafkalabError("cannot tell which node is the active controller")
            return [host], "active controller"
        self.lab.machine(target)  # raises with the known names
        return [target], ""

    def controller(self) -> int | None:
        if self.mode == "zookeeper":
            latest = self.watch.samples[-1] if self.watch.samples else None
            return latest.controller if latest else None
        live = [h for h in self.kafka_hosts if h not in self.faulted]
        if not live:
            return None
        return status.quorum_leader(self.lab, live[0], self.bootstrap)

    def fault(self, kind: str, target: str, current: str | None) -> None:
        hosts, why = self.resolve(kind, target, current)
        for host in hosts:
            t = self.clock()
            if kind in TAKES_DOWN:
                self.t_down = t
                self.faulted[host] = kind
                self.last = host
            self.note(kind, host, why)
            if kind == "heal":
                faults.heal(self.lab, [host])
            else:
                getattr(faults, kind)(self.lab, host)
            if kind in BRINGS_BACK:
                self.t_back = t
                self.faulted.pop(host, None)

    # -- conditions ---------------------------------------------------------------------------

    def down_ids(self) -> set[int]:
        return {n for h in self.faulted if (n := self.node_of.get(h)) is not None}

    def leaders_ok(self, s: Sample) -> bool:
        down = self.down_ids()
        return all(leader >= 0 and leader not in down for leader, _, _ in s.parts.values())

    def isr_full(self, s: Sample) -> bool:
        return bool(s.parts) and all(set(isr) == set(rep) for _, rep, isr in s.parts.values())

    def isr_shrunk(self, s: Sample) -> bool:
        down = self.down_ids()
        return all(not down & set(isr) for _, _, isr in s.parts.values())

    def wait(self, what: str, timeout: float, producer: verify.RecordingProducer) -> None:
        rec = self.result.recovery
        if what == "traffic":
            self.wait_acked(producer, producer.acked_count + min(self.result.rate, 100), timeout)
            return
        if what == "controller-elected":
            secs = self.wait_controller(timeout)
        else:
            ok, since, label = {
                "leader-elected": (self.leaders_ok, self.t_down, "leader_s"),
                "isr-shrunk": (self.isr_shrunk, self.t_down, "isr_shrink_s"),
                "isr-full": (self.isr_full, self.t_back, "isr_s"),
            }[what]
            start = since
            if what == "isr-full":
                # Metadata can still show a restarted broker's old registration as in sync:
                # count only samples taken once every live broker listens again.
                start = max(since, self.wait_listening(timeout))
            found = self.watch.first(start, ok, timeout, self.cancel)
            if found is None and self.cancel.is_set():
                raise KafkalabError("interrupted")
            if found is None:
                raise KafkalabError(f"{what}: not reached within {timeout:.0f}s")
            secs = round(start - since + found, 2)
            rec.setdefault(label, []).append(secs)
        self.note(what, note=f"after {secs:.1f}s")

    def not_listening(self) -> list[str]:
        """Brokers that should be up (no fault on them) but refuse connections on 9092."""
        out = []
        for host in self.brokers.values():
            if host in self.faulted:
                continue
            try:
                with socket.create_connection((self.address[host], 9092), timeout=2):
                    pass
            except OSError:
                out.append(host)
        return out

    def wait_listening(self, timeout: float) -> float:
        """The run's clock when every broker without a fault accepts connections again."""
        deadline = time.monotonic() + timeout
        while down := self.not_listening():
            if time.monotonic() > deadline:
                raise KafkalabError(f"{', '.join(down)} not listening within {timeout:.0f}s")
            if self.cancel.wait(0.5):
                raise KafkalabError("interrupted")
        return self.clock()

    def wait_controller(self, timeout: float) -> float:
        deadline = time.monotonic() + timeout
        since = self.t_down
        while time.monotonic() < deadline:
            node = self.controller()
            if node is not None and node >= 0 and node not in self.down_ids():
                secs = round(self.clock() - since, 2)
                self.result.recovery.setdefault("controller_s", []).append(secs)
                return secs
            if self.cancel.wait(0.5):
                raise KafkalabError("interrupted")
        raise KafkalabError(f"controller-elected: no live active controller within {timeout:.0f}s")

    def wait_acked(self, producer: verify.RecordingProducer, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while producer.acked_count < count:
            if producer.error is not None:
                raise KafkalabError(f"the producer stopped: {producer.error}")
            if time.monotonic() > deadline:
                raise KafkalabError(f"fewer than {count} records acked after {timeout:.0f}s")
            if self.cancel.wait(0.1):
                raise KafkalabError("interrupted")

    def create_topic(self, new: NewTopic, attempts: int = 5) -> None:
        """Create the run's topic; retry what a cluster just back from a fault may answer."""
        for attempt in range(1, attempts + 1):
            try:
                self.admin.create_topics([new], operation_timeout=30)[new.topic].result(60)
                return
            except KafkaException as exc:
                err = exc.args[0]
                if err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    return  # an earlier attempt got through
                if attempt == attempts or not (err.retriable() or err.code() < 0):
                    raise KafkalabError(f"cannot create topic {new.topic}: {err.str()}") from exc
            time.sleep(2)

    def wait_topic_ready(self, topic: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                t = self.admin.list_topics(topic=topic, timeout=5).topics.get(topic)
                parts = list(t.partitions.values()) if t and t.error is None else []
                if parts and all(p.leader >= 0 and set(p.isrs) == set(p.replicas) for p in parts):
                    return
            except Exception:  # not created everywhere yet
                pass
            time.sleep(0.25)
        raise KafkalabError(f"topic {topic} did not get leaders and full ISRs in {timeout:.0f}s")

    def wait_healthy(self, when: str, timeout: float, required: bool) -> None:
        """Every broker registered and every partition of every topic with a full ISR."""
        start = time.monotonic()
        admin = self.admin
        problem = "no answer"
        while time.monotonic() - start < timeout:
            try:
                if down := self.not_listening():
                    problem = f"not listening: {', '.join(down)}"
                    time.sleep(0.5)
                    continue
                md = admin.list_topics(timeout=5)
                missing = set(self.brokers) - set(md.brokers)
                short = [
                    f"{t.topic}-{p.id}"
                    for t in md.topics.values()
                    for p in t.partitions.values()
                    if set(p.isrs) != set(p.replicas) or p.leader < 0
                ]
                if not missing and not short:
                    secs = time.monotonic() - start
                    if not required:
                        self.result.healthy_after_s = round(secs, 2)
                        self.note("cluster healthy", note=f"after {secs:.1f}s")
                    return
                problem = f"brokers missing: {sorted(missing)}" if missing else ""
                problem += f" under-replicated: {', '.join(short[:5])}" if short else ""
            except Exception as exc:
                problem = str(exc)
            time.sleep(0.5)
        message = f"cluster not healthy {when} after {timeout:.0f}s ({problem.strip()})"
        if required:
            raise KafkalabError(f"{message}: try `kafkalab fault heal`, then `kafkalab status`")
        self.result.problems.append(message)


def preflight(
    lab: EmbeddedCluster,
    scenario: Scenario,
    records: int | None = None,
    rate: int | None = None,
    mode: str | None = None,
) -> Topology:
    """What is checked before the topic is made, the producer starts or any fault runs:
    the options, the lab's mode and size, and every machine the schedule names."""
    check_count("--records", records, MAX_RECORDS)
    check_count("--rate", rate, MAX_RATE)
    topo = lab.topology()
    if topo is None or not lab.inventory_path.exists():
        raise KafkalabError("no lab here yet: run `kafkalab up`")
    if mode is not None and mode not in ("kraft", "zookeeper"):
        raise KafkalabError(f"--mode: kraft or zookeeper (got {mode!r})")
    needed = [mode] if mode else scenario.modes
    if topo.mode not in needed:
        raise KafkalabError(
            f"scenario {scenario.name} needs a {' or '.join(needed)} lab, but lab {lab.ns} runs "
            f"{topo.mode}; nothing was changed. `kafkalab down --purge` then "
            f"`kafkalab up --mode {needed[0]}` gives one (down --purge deletes the lab's data)"
        )
    if mode and mode not in scenario.modes:
        raise KafkalabError(f"scenario {scenario.name} is for {', '.join(scenario.modes)} only")
    topo.check_replication_factor(scenario.topic.replication_factor)
    machines = lab.machines()
    check_against(scenario, [m.name for m in machines], faults.kafka_hosts(lab))
    stopped = [m.name for m in machines if not m.running()]
    if stopped:
        raise KafkalabError(f"machines not running: {', '.join(stopped)}; run `kafkalab up`")
    return topo


def run(
    lab: EmbeddedCluster,
    scenario: Scenario,
    records: int | None = None,
    rate: int | None = None,
    mode: str | None = None,
    keep_topic: bool = False,
    progress: Callable[[str], None] = lambda _m: None,
) -> Result:
    """Play a scenario against the lab and return the verdict with its figures."""
    topo = preflight(lab, scenario, records, rate, mode)
    stamp = datetime.now(UTC)
    result = Result(
        scenario=scenario,
        lab=lab.ns,
        mode=topo.mode,
        topic=f"scenario-{scenario.name}-{stamp:%Y%m%d%H%M%S}",
        started=stamp.isoformat(timespec="seconds"),
        records=scenario.producer.records if records is None else records,
        rate=scenario.producer.rate if rate is None else rate,
    )
    began = time.monotonic()
    cancel = threading.Event()

    def play() -> None:
        # Every Kafka client is made here, in a thread inside the lab namespace: the
        # threads librdkafka starts inherit it.
        runner = Runner(lab, scenario, result, progress, cancel)
        runner.run()
        if keep_topic:
            return
        try:  # tidying up: the verdict stands whatever happens here
            runner.admin.delete_topics([result.topic])[result.topic].result(60)
        except Exception as exc:
            progress(f"topic {result.topic} kept: deleting it failed ({exc})")

    done = threading.Event()
    failed: list[BaseException] = []

    def body() -> None:
        try:
            netns.run_in(lab.ns, play)
        except BaseException as exc:
            failed.append(exc)
        finally:
            done.set()

    # Wait on an Event, not Thread.join: a Ctrl-C inside join (Python 3.11) marks the
    # thread finished, and the healing below would be cut short at exit.
    threading.Thread(target=body, name="scenario", daemon=True).start()
    try:
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        cancel.set()
        progress("interrupted: healing what the schedule broke, then the verdict")
        try:
            while not done.wait(0.5):
                pass
        except KeyboardInterrupt:
            progress("left as it is: `kafkalab fault heal` repairs the lab")
            os._exit(130)
    if failed:
        raise failed[0]
    result.seconds = round(time.monotonic() - began, 1)
    return result


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
                "cause": logdump.cause(result.duplicate_writers.get(i, [])),
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
