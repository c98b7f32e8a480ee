"""The run's history of the scenario topic: who leads each partition and which replicas
are in sync, sampled a few times a second while the schedule plays. Recovery timings
(a leader elected, the ISR full again, ...) are read from it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Set
from dataclasses import dataclass

from kafkalab.kafka import clients


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


class Watcher:
    """Samples the topic's leaders and ISRs a few times a second (history for timings)."""

    def __init__(self, bootstrap: str, topic: str, clock: Callable[[], float]) -> None:
        self.admin = clients.admin(bootstrap, {"socket.timeout.ms": 5000})
        self.topic = topic
        self.clock = clock
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="watcher", daemon=True)

    @property
    def latest(self) -> Sample | None:
        return self.samples[-1] if self.samples else None

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
