"""The run's history of the scenario topic: who leads each partition and which replicas
are in sync, sampled a few times a second while the schedule plays. Recovery timings
(a leader elected, the ISR full again, ...) are read from it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass

from kafkalab.kafka import views


@dataclass
class Sample:
    t: float
    parts: dict[int, tuple[int, list[int], list[int]]]  # partition -> (leader, replicas, isr)
    controller: int


def leaders_ok(s: Sample, down: Set[int]) -> bool:
    """Every partition has a leader, and none of the brokers taken `down` leads."""
    return all(leader >= 0 and leader not in down for leader, _, _ in s.parts.values())


def isr_full(s: Sample) -> bool:
    return bool(s.parts) and all(set(isr) == set(rep) for _, rep, isr in s.parts.values())


def isr_shrunk(s: Sample, down: Set[int]) -> bool:
    """No broker taken `down` is in any ISR any more."""
    return all(not down & set(isr) for _, _, isr in s.parts.values())


FRESH_S = 1.0  # an answer older than this (its broker stopped answering) no longer counts
TICK_S = 0.25


def agreed(
    answers: Mapping[str, tuple[float, views.TopicView]], now: float, fresh: float = FRESH_S
) -> tuple[float, views.TopicView] | None:
    """What every broker that answered in the last `fresh` seconds says, when they all say
    the same about the topic's partitions, and the time of the newest of those answers (by
    then all of them had it). None while they differ, or when nobody answered. The
    controller is the one most of them name (brokers learn of a new one one by one)."""
    recent = [(t, view) for t, view in answers.values() if now - t <= fresh and view.parts]
    if not recent or any(view.parts != recent[0][1].parts for _, view in recent[1:]):
        return None
    controller = Counter(view.controller for _, view in recent).most_common(1)[0][0]
    return max(t for t, _ in recent), views.TopicView(controller, recent[0][1].parts)


class Watcher:
    """Samples the topic's leaders and ISRs a few times a second (history for timings).

    Each broker is asked for its own metadata, and a sample is taken only when every broker
    that answers agrees: a broker answers from its own cache, which lags behind the
    controller for a moment after a change and for longer after a pause (SIGSTOP), so one
    broker's word could put an ISR back before the cluster has it. A broker that is down or
    paused does not answer and does not count."""

    def __init__(self, bootstrap: str, topic: str, clock: Callable[[], float]) -> None:
        self.addresses = bootstrap.split(",")
        self.topic = topic
        self.clock = clock
        self.samples: list[Sample] = []
        self._answers: dict[str, tuple[float, views.TopicView]] = {}
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._ask, args=(a,), name=f"watch-{a}", daemon=True)
            for a in self.addresses
        ] + [threading.Thread(target=self._run, name="watcher", daemon=True)]

    @property
    def latest(self) -> Sample | None:
        return self.samples[-1] if self.samples else None

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(10)

    def _ask(self, address: str) -> None:
        while not self._stop.is_set():
            try:
                view = views.topic_view(address, self.topic, 2)
                self._answers[address] = (self.clock(), view)  # the time it was known
            except OSError:  # down, paused or restarting: its word does not count
                self._answers.pop(address, None)
            self._stop.wait(TICK_S)

    def _run(self) -> None:
        while not self._stop.wait(TICK_S):
            found = agreed(dict(self._answers), self.clock())
            if found is not None and (not self.samples or found[0] > self.samples[-1].t):
                t, view = found
                parts = {
                    p: (leader, list(rep), list(isr))
                    for p, (leader, rep, isr) in view.parts.items()
                }
                self.samples.append(Sample(t, parts, view.controller))

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
