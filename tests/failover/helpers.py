"""Shared checks of the failover tier: the cluster is whole again."""

from __future__ import annotations

import time

from kafkalab.kafka import waits
from tests.client import describe


def healthy(bootstrap: str) -> tuple[bool, str]:
    """All brokers of `bootstrap` (kafka1, kafka2, ... in that order) listening and
    registered, every partition of every topic led, ISR full, as every broker itself sees
    it (kafkalab's own health check, waits.health: a broker that has just resumed from a
    pause answers from a stale cache for a moment, and it must not be the one that says
    "healthy")."""
    hosts = [broker.rsplit(":", 1)[0] for broker in bootstrap.split(",")]
    now = waits.health(
        {node: host for node, host in enumerate(hosts, start=1)},
        {host: host for host in hosts},
        full_isr=True,
    )
    return now.ok, now.describe() or "every broker sees them all, every ISR full"


def wait_healthy(bootstrap: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    detail = ""
    while time.monotonic() < deadline:
        try:
            ok, detail = healthy(bootstrap)
        except Exception as exc:  # a broker still starting
            ok, detail = False, str(exc)
        if ok:
            return
        time.sleep(1)
    raise AssertionError(f"cluster not healthy after {timeout:.0f}s: {detail}")


def wait_isr(bootstrap: str, topic: str, node: int, present: bool, timeout: float = 90) -> float:
    """Seconds until `node` is in every ISR of `topic` (present) or in none."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        isrs = [p.isr for p in describe(bootstrap, topic)]
        if all((node in isr) == present for isr in isrs):
            return time.monotonic() - started
        time.sleep(0.5)
    raise AssertionError(f"node {node} {'not back in' if present else 'still in'} ISRs: {isrs}")
