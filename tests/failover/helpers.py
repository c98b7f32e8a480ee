"""Shared checks of the failover tier: the cluster is whole again."""

from __future__ import annotations

import socket
import time

from kafkalab.kafka import clients


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
    """All brokers listening and registered, every partition of every topic led, ISR full."""
    if down := listening(bootstrap):
        return False, f"not listening: {down}"
    # kafkalab's quiet clients: no connection-refused lines while a broker starts
    admin = clients.admin(bootstrap, {"socket.timeout.ms": 5000})
    md = admin.list_topics(timeout=10)
    short = [
        f"{t.topic}-{p.id} isr={sorted(p.isrs)} replicas={sorted(p.replicas)}"
        for t in md.topics.values()
        for p in t.partitions.values()
        if p.leader < 0 or set(p.isrs) != set(p.replicas)
    ]
    ok = len(md.brokers) == brokers and not short
    return ok, f"brokers {sorted(md.brokers)}; under-replicated: {short[:5]}"


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
