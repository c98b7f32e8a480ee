"""One run of a scenario, as its parts share it: the cluster's brokers and addresses, the
run's clock and event log, the faults in force, the watcher's history, Ctrl-C.

kafkalab.failover.runner makes it (in a thread where the cluster is reached)
and plays the run; kafkalab.failover.schedule plays the fault schedule against it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from kafkalab.errors import KafkalabError
from kafkalab.failover import faults
from kafkalab.failover.scenario import Scenario
from kafkalab.failover.verdict import Event, Result
from kafkalab.kafka import clients
from kafkalab.targets.cluster import InventoryCluster


class Session:
    def __init__(
        self,
        cluster: InventoryCluster,
        scenario: Scenario,
        result: Result,
        progress: Callable[[str], None],
        cancel: threading.Event | None = None,
    ) -> None:
        cluster.check_here()
        self.cancel = cancel or threading.Event()
        self.cluster = cluster
        self.scenario = scenario
        self.result = result
        self.progress = progress
        hosts = cluster.hosts()
        self.brokers: dict[int, str] = {
            hv["kafka_node_id"]: h for h, hv in hosts.items() if "kafka_broker" in hv["groups"]
        }
        self.kafka_hosts = faults.kafka_hosts(cluster)
        self.node_of = {h: hv.get("kafka_node_id") for h, hv in hosts.items()}
        self.address = {h: hv["kafkalab_address"] for h, hv in hosts.items()}
        self.bootstrap = ",".join(f"{self.address[h]}:9092" for h in self.brokers.values())
        self.mode = result.mode
        self.t0 = time.monotonic()
        self.admin = clients.admin(self.bootstrap, {"socket.timeout.ms": 5000})
        self.faulted: dict[str, str] = {}  # host -> the fault that took it down
        self.last: str | None = None  # the host of the latest fault that took one down
        self.t_down = self.t_back = 0.0  # when the latest fault took a host down / back

    def clock(self) -> float:
        """Seconds since the producer started (the event log's time)."""
        return time.monotonic() - self.t0

    def note(self, step: str, host: str | None = None, note: str = "") -> None:
        ev = Event(round(self.clock(), 2), step, host, note)
        self.result.events.append(ev)
        where = f" {host}" if host else ""
        self.progress(f"{ev.t:7.1f}s  {step}{where}{f'  ({note})' if note else ''}")

    def down_ids(self) -> set[int]:
        """The node ids of the hosts a fault took down."""
        return {n for h in self.faulted if (n := self.node_of.get(h)) is not None}

    def pause(self, seconds: float) -> None:
        """Wait, unless Ctrl-C comes first: then stop the schedule."""
        if self.cancel.wait(seconds):
            raise KafkalabError("interrupted")
