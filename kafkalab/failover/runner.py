"""Playing a failover scenario (kafkalab.failover.scenario) against a cluster.

A run checks everything it can first (`preflight`), then, in a thread where the cluster
is reached (its network namespace, or the controller): waits until the cluster is
healthy, creates a fresh topic, starts a recording producer (kafkalab.failover.traffic),
plays the schedule (kafkalab.failover.schedule) while a watcher samples partition metadata
(kafkalab.failover.watch), heals whatever is still broken, waits until the cluster is
healthy again, reads everything back and gives the verdict (kafkalab.failover.delivery,
.verdict; who wrote a duplicate: .forensics). Ctrl-C heals what the schedule broke, then
gives the verdict; a second Ctrl-C leaves the cluster as it is.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from confluent_kafka.admin import NewTopic

from kafkalab.errors import INTERRUPTS, KafkalabError
from kafkalab.failover import delivery, faults, forensics, verdict
from kafkalab.failover.scenario import (
    MAX_RATE,
    MAX_RECORDS,
    Scenario,
    check_against,
    check_count,
)
from kafkalab.failover.schedule import Schedule
from kafkalab.failover.session import Session
from kafkalab.failover.traffic import RecordingProducer, consume_to
from kafkalab.failover.verdict import Result
from kafkalab.failover.watch import Watcher
from kafkalab.inventory import Layout
from kafkalab.kafka import topics, waits
from kafkalab.targets.cluster import InventoryCluster


class Runner:
    """One run of a scenario, from the first health check to the verdict."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def run(self) -> None:
        run, s, r = self.session, self.session.scenario, self.session.result
        self.check_healthy("before the run", timeout=120, required=True)
        run.progress(
            f"topic {r.topic}: {s.topic.partitions} partitions, RF {s.topic.replication_factor}"
        )
        new = NewTopic(
            r.topic,
            num_partitions=s.topic.partitions,
            replication_factor=s.topic.replication_factor,
            config=s.topic.config,
        )
        topics.create_topic(run.admin, new)
        waits.wait_topic_ready(run.admin, r.topic, 60)
        run.t0 = time.monotonic()
        watch = Watcher(run.bootstrap, r.topic, run.clock)
        watch.start()
        producer = RecordingProducer(run.bootstrap, r.topic, s.producer.config, r.records, r.rate)
        schedule = Schedule(run, watch, producer)
        try:
            producer.start()
            settings = ", ".join(f"{k}={v}" for k, v in s.producer.config.items())
            run.progress(f"producing at {r.rate}/s ({settings})")
            try:
                schedule.wait_acked(min(r.rate, r.records), 60)
                schedule.play(s.schedule)
            except KafkalabError as exc:
                r.problems.append(str(exc))
                run.note("schedule stopped", note=str(exc))
            finally:
                self.recover()
            run.note("producer finishing", note=f"{producer.stats.sent} sent so far")
            r.sends = producer.finish()
        finally:
            watch.stop()
        run.note("reading back", note=f"{r.sends.acked} acked")
        back = consume_to(run.bootstrap, r.topic, delivery.targets(producer.acked))
        r.delivery = delivery.check(producer.acked, back.records)
        r.short_partitions = back.short
        if r.delivery.duplicates and s.expect.duplicates != "allowed":
            self.who_wrote(r.delivery.duplicates)
        verdict.judge(r)

    def recover(self) -> None:
        """Undo what the schedule left broken and wait until the cluster is whole again."""
        run = self.session
        if run.faulted or any(faults.isolated(run.cluster, h) for h in run.kafka_hosts):
            run.t_back = run.clock()
            run.note("healing what is still broken", ", ".join(sorted(run.faulted)) or None)
            faults.heal(run.cluster)
            run.faulted.clear()
        self.check_healthy("after the schedule", timeout=300, required=False)

    def check_healthy(self, when: str, timeout: float, required: bool) -> None:
        """Every broker listening and registered, every partition of every topic led and
        with a full ISR. Before the run that is required; after it, a problem of the run."""
        run = self.session
        health, secs = waits.wait_healthy(run.brokers, run.address, timeout, full_isr=True)
        if health.ok:
            if not required:
                run.result.healthy_after_s = round(secs, 2)
                run.note("cluster healthy", note=f"after {secs:.1f}s")
            return
        message = f"cluster not healthy {when} after {timeout:.0f}s ({health.describe()})"
        if required:
            raise KafkalabError(f"{message}: try `kafkalab fault heal`, then `kafkalab status`")
        run.result.problems.append(message)

    def who_wrote(self, duplicates: dict[int, list[tuple[int, int]]]) -> None:
        """Read the producer id, epoch and sequence of every duplicate's copies from the log
        (kafka-dump-log.sh on the partition's leader)."""
        run, r = self.session, self.session.result
        run.note("reading the log", note=f"who wrote the {len(duplicates)} duplicates")
        parts = run.admin.list_topics(r.topic, timeout=15).topics[r.topic].partitions
        found, unread = forensics.read_all(
            run.cluster,
            r.topic,
            [pos for at in duplicates.values() for pos in at],
            lambda p: run.brokers.get(parts[p].leader) if p in parts else None,
        )
        r.writers_unknown = "; ".join(unread)
        r.duplicate_writers = {i: [found.get(pos) for pos in at] for i, at in duplicates.items()}


def preflight(
    cluster: InventoryCluster,
    scenario: Scenario,
    records: int | None = None,
    rate: int | None = None,
    mode: str | None = None,
) -> Layout:
    """What is checked before the topic is made, the producer starts or any fault runs:
    the options, the cluster's mode and size, and every machine the schedule names."""
    check_count("--records", records, MAX_RECORDS)
    check_count("--rate", rate, MAX_RATE)
    topo = cluster.layout()
    if topo is None:
        raise KafkalabError("no lab here yet: run `kafkalab up`")
    if mode is not None and mode not in ("kraft", "zookeeper"):
        raise KafkalabError(f"--mode: kraft or zookeeper (got {mode!r})")
    needed = [mode] if mode else scenario.modes
    if topo.mode not in needed:
        raise KafkalabError(
            f"scenario {scenario.name} needs a {' or '.join(needed)} lab, but lab {cluster.name} "
            f"runs {topo.mode}; nothing was changed. `kafkalab down --purge` then "
            f"`kafkalab up --mode {needed[0]}` gives one (down --purge deletes the lab's data)"
        )
    if mode and mode not in scenario.modes:
        raise KafkalabError(f"scenario {scenario.name} is for {', '.join(scenario.modes)} only")
    topo.check_replication_factor(scenario.topic.replication_factor)
    machines = cluster.machines()
    check_against(scenario, [m.name for m in machines], faults.kafka_hosts(cluster))
    stopped = [m.name for m in machines if not m.running()]
    if stopped:
        raise KafkalabError(f"machines not running: {', '.join(stopped)}; run `kafkalab up`")
    return topo


def run(
    cluster: InventoryCluster,
    scenario: Scenario,
    records: int | None = None,
    rate: int | None = None,
    mode: str | None = None,
    keep_topic: bool = False,
    progress: Callable[[str], None] = lambda _m: None,
) -> Result:
    """Play a scenario against the cluster and return the verdict with its figures."""
    topo = preflight(cluster, scenario, records, rate, mode)
    stamp = datetime.now(UTC)
    result = Result(
        scenario=scenario,
        lab=cluster.name,
        mode=topo.mode,
        topic=f"scenario-{scenario.name}-{stamp:%Y%m%d%H%M%S}",
        started=stamp.isoformat(timespec="seconds"),
        records=scenario.producer.records if records is None else records,
        rate=scenario.producer.rate if rate is None else rate,
    )
    began = time.monotonic()
    cancel = threading.Event()

    def play() -> None:
        # Every Kafka client is made here, in a thread where the cluster is reached (inside
        # its namespace, if it has one: the threads librdkafka starts inherit it).
        runner = Runner(Session(cluster, scenario, result, progress, cancel))
        runner.run()
        if keep_topic:
            return
        try:  # tidying up: the verdict stands whatever happens here
            topics.delete_topics(runner.session.admin, [result.topic], wait_gone=False)
        except Exception as exc:
            progress(f"topic {result.topic} kept: deleting it failed ({exc})")

    done = threading.Event()
    failed: list[BaseException] = []

    def body() -> None:
        try:
            cluster.run(play)
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
    except INTERRUPTS:
        cancel.set()
        progress("interrupted: healing what the schedule broke, then the verdict")
        try:
            while not done.wait(0.5):
                pass
        except INTERRUPTS:
            progress("left as it is: `kafkalab fault heal` repairs the lab")
            os._exit(130)
    if failed:
        raise failed[0]
    result.seconds = round(time.monotonic() - began, 1)
    return result
