"""Shared checks of the failover tier: the cluster is whole again."""

from __future__ import annotations

import socket
import time

from kafkalab.kafka import views
from tests.client import describe


def listening(bootstrap: str) -> list[str]:
    """The brokers of `bootstrap` that refuse connections (metadata can lag behind a
    restart: a broker that does not listen is not back, whatever the ISR says)."""
    down = []
    for broker in bootstrap.split(","):
        host, port = broker.rsplit(":", 1)
        try:
            with socket.create_connection((host, int(port)), timeout=2):
                pass
        except OSError:
            down.append(broker)
    return down


def healthy(bootstrap: str, brokers: int = 3) -> tuple[bool, str]:
    """All brokers listening and registered, every partition of every topic led, ISR full,
    as every broker itself sees it: a broker that has just resumed from a pause answers
    from a stale cache for a moment, and it must not be the one that says "healthy"."""
    if down := listening(bootstrap):
        return False, f"not listening: {down}"
    for address in bootstrap.split(","):
        view = views.own_view(address)
        if len(view.brokers) != brokers or view.short:
            return False, f"{address} sees brokers {sorted(view.brokers)}; short: {view.short[:5]}"
    return True, "every broker sees them all, every ISR full"


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
