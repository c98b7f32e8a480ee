"""Playing a scenario's fault schedule: blocks (`repeat`, `for_each`), sleeps, faults on
the hosts a target names at that moment (`leader`, `follower`, `controller`, `last`, ...),
and the waits that time the recovery (`leader-elected`, `isr-full`, ...).
"""

from __future__ import annotations

import time

from kafkalab.errors import KafkalabError
from kafkalab.failover import faults
from kafkalab.failover.scenario import ALL_OF, BRINGS_BACK, PAST, TAKES_DOWN, ScheduleStep
from kafkalab.failover.session import Session
from kafkalab.failover.traffic import RecordingProducer
from kafkalab.failover.watch import Watcher, isr_full, isr_shrunk, leaders_ok
from kafkalab.kafka import quorum, waits


class Schedule:
    def __init__(self, session: Session, watch: Watcher, producer: RecordingProducer) -> None:
        self.run = session
        self.watch = watch
        self.producer = producer

    def play(self, steps: list[ScheduleStep], current: str | None = None) -> None:
        run = self.run
        for step in steps:
            if run.cancel.is_set():
                raise KafkalabError("interrupted")
            kind = step.kind
            if kind == "repeat":
                for i in range(step.repeat or 1):
                    run.progress(f"round {i + 1} of {step.repeat}")
                    self.play(step.steps, current)
            elif kind == "for_each":
                for host in run.brokers.values():
                    self.play(step.steps, host)
            elif kind == "sleep":
                secs = step.arg  # seconds, checked when the file was read
                run.note(f"sleep {secs:g}s")
                run.cancel.wait(secs)
            elif kind == "wait":
                self.wait(step.arg, step.timeout)
            else:
                self.fault(kind, step.arg, current)

    # -- faults -------------------------------------------------------------------------

    def resolve(self, kind: str, target: str, current: str | None) -> tuple[list[str], str]:
        """Hosts a target names now, and why (shown in the event log)."""
        run = self.run
        if target == "all":
            if (kinds := ALL_OF[kind]) is None:
                return list(run.kafka_hosts), "every Kafka host"
            return [
                h for h, k in run.faulted.items() if k in kinds
            ], f"every {' or '.join(PAST[k] for k in kinds)} host"
        if target == "last":
            if run.last is None:
                raise KafkalabError("target `last` before any fault step")
            return [run.last], "the host of the previous fault"
        if target == "current":
            if current is None:
                raise KafkalabError("target `current` outside a for_each block")
            return [current], "this round's broker"
        if target in ("leader", "follower"):
            latest = self.watch.latest
            if latest is None or 0 not in latest.parts:
                raise KafkalabError("no metadata for partition 0 yet")
            leader, replicas, isr = latest.parts[0]
            if target == "leader":
                if leader not in run.brokers:
                    raise KafkalabError("partition 0 has no leader right now")
                return [run.brokers[leader]], "leader of partition 0"
            down = run.down_ids()
            followers = [b for b in replicas if b != leader and b in isr and b not in down]
            if not followers:
                raise KafkalabError("partition 0 has no in-sync follower right now")
            return [run.brokers[followers[0]]], "in-sync follower of partition 0"
        if target == "controller":
            node = self.controller()
            host = next((h for h, n in run.node_of.items() if n == node), None)
            if host is None:
                raise KafkalabError("cannot tell which node is the active controller")
            return [host], "active controller"
        run.cluster.machine(target)  # raises with the known names
        return [target], ""

    def controller(self) -> int | None:
        """The active controller's node id: the quorum's leader (KRaft), else the broker
        the metadata names."""
        run = self.run
        if run.mode == "zookeeper":
            latest = self.watch.latest
            return latest.controller if latest else None
        live = [h for h in run.brokers.values() if h not in run.faulted]
        if not live:
            return None
        return quorum.active_controller(",".join(f"{run.address[h]}:9092" for h in live))

    def fault(self, kind: str, target: str, current: str | None) -> None:
        run = self.run
        hosts, why = self.resolve(kind, target, current)
        for host in hosts:
            t = run.clock()
            if kind in TAKES_DOWN:
                run.t_down = t
                run.faulted[host] = kind
                run.last = host
            run.note(kind, host, why)
            if kind == "heal":
                faults.heal(run.cluster, [host])
            else:
                getattr(faults, kind)(run.cluster, host)
            if kind in BRINGS_BACK:
                run.t_back = t
                run.faulted.pop(host, None)

    # -- waits ----------------------------------------------------------------------------

    def wait(self, what: str, timeout: float) -> None:
        run = self.run
        if what == "traffic":
            self.wait_acked(self.producer.acked_count + min(run.result.rate, 100), timeout)
            return
        if what == "controller-elected":
            secs = self.wait_controller(timeout)
        else:
            ok, since, label = {
                "leader-elected": (lambda s: leaders_ok(s, run.down_ids()), run.t_down, "leader_s"),
                "isr-shrunk": (lambda s: isr_shrunk(s, run.down_ids()), run.t_down, "isr_shrink_s"),
                "isr-full": (isr_full, run.t_back, "isr_s"),
            }[what]
            start = since
            if what == "isr-full":
                # Metadata can still show a restarted broker's old registration as in sync:
                # count only samples taken once every live broker listens again.
                start = max(since, self.wait_listening(timeout))
            found = self.watch.first(start, ok, timeout, run.cancel)
            if found is None and run.cancel.is_set():
                raise KafkalabError("interrupted")
            if found is None:
                raise KafkalabError(f"{what}: not reached within {timeout:.0f}s")
            secs = round(start - since + found, 2)
            run.result.recovery.setdefault(label, []).append(secs)
        run.note(what, note=f"after {secs:.1f}s")

    def wait_listening(self, timeout: float) -> float:
        """The run's clock when every broker without a fault accepts connections again."""
        run = self.run
        deadline = time.monotonic() + timeout
        unfaulted = [h for h in run.brokers.values() if h not in run.faulted]
        while down := waits.not_listening(unfaulted, run.address):
            if time.monotonic() > deadline:
                raise KafkalabError(f"{', '.join(down)} not listening within {timeout:.0f}s")
            run.pause(0.5)
        return run.clock()

    def wait_controller(self, timeout: float) -> float:
        run = self.run
        deadline = time.monotonic() + timeout
        since = run.t_down
        while time.monotonic() < deadline:
            node = self.controller()
            if node is not None and node >= 0 and node not in run.down_ids():
                secs = round(run.clock() - since, 2)
                run.result.recovery.setdefault("controller_s", []).append(secs)
                return secs
            run.pause(0.5)
        raise KafkalabError(f"controller-elected: no live active controller within {timeout:.0f}s")

    def wait_acked(self, count: int, timeout: float) -> None:
        """Until the producer has `count` acknowledgements (the cluster takes writes)."""
        deadline = time.monotonic() + timeout
        while self.producer.acked_count < count:
            if self.producer.error is not None:
                raise KafkalabError(f"the producer stopped: {self.producer.error}")
            if time.monotonic() > deadline:
                raise KafkalabError(f"fewer than {count} records acked after {timeout:.0f}s")
            self.run.pause(0.1)
