"""What the lab looks like right now: machines, services, ids, who leads."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kafkalab import client, inventory
from kafkalab.labs_quorum import zk_srvr
from kafkalab.targets import boot, netns
from kafkalab.targets.embedded import EmbeddedCluster

SERVICES = {
    "kafka_broker": "kafka",
    "kafka_controller": "kafka",
    "zookeeper": "zookeeper",
    "spark_master": "spark-master",
    "spark_worker": "spark-worker",
    "ksqldb": "ksqldb",
}


def zk_mode(address: str, timeout: float = 2.0) -> str | None:
    """ZooKeeper's own answer to `srvr`: leader, follower or standalone (caller in lab netns)."""
    return zk_srvr(address, timeout).get("Mode")


def _run(lab: EmbeddedCluster, name: str, command: list[str], timeout: float = 60) -> str:
    try:
        proc = subprocess.run(
            lab.login_command(name, command), capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return ""
    return proc.stdout


def quorum_leader(lab: EmbeddedCluster, via: str, bootstrap: str) -> int | None:
    """The active KRaft controller's node id, from kafka-metadata-quorum.sh."""
    out = _run(
        lab,
        via,
        [
            "/opt/kafka/bin/kafka-metadata-quorum.sh",
            "--bootstrap-server",
            bootstrap,
            "describe",
            "--status",
        ],
    )
    for line in out.splitlines():
        if line.strip().startswith("LeaderId:"):
            return int(line.split(":", 1)[1])
    return None


def collect(lab: EmbeddedCluster) -> dict[str, Any]:
    """Status as data (the table and --json both come from this)."""
    topo = lab.topology()
    if topo is None or not lab.inventory_path.exists():
        return {"lab": None, "machines": []}
    hosts = inventory.hosts(inventory.load(lab.inventory_path))
    machines = {m.name: m for m in lab.machines()}

    def one(name: str) -> dict[str, Any]:
        hv = hosts[name]
        services = sorted({SERVICES[g] for g in hv["groups"] if g in SERVICES})
        running = machines[name].running()
        booted = boot.state(machines[name], timeout=10) if running else boot.BootState("stopped")
        states = {s: "machine stopped" for s in services}
        if running and services:
            out = _run(lab, name, ["systemctl", "is-active", *services], timeout=20).split()
            states = dict(zip(services, out or ["unreachable"] * len(services), strict=False))
        return {
            "host": name,
            "address": hv["kafkalab_address"],
            "roles": [g for g in hv["groups"]],
            "machine": "running" if running else "stopped",
            "boot": booted.as_dict(),
            "services": states,
            "node_id": hv.get("kafka_node_id"),
            "zookeeper_myid": hv.get("zookeeper_myid"),
        }

    with ThreadPoolExecutor(max_workers=8) as pool:
        rows = list(pool.map(one, hosts))
    lead: dict[str, Any] = {"mode": topo.mode}
    live = [r for r in rows if r["services"].get("kafka") == "active"]
    if topo.mode == "kraft" and live:
        bootstrap = ",".join(f"{r['address']}:9092" for r in live)
        lead["active_controller"] = quorum_leader(lab, live[0]["host"], bootstrap)
    combined = topo.mode == "kraft" and topo.controllers == 0
    for r in rows:
        if combined and "kafka_broker" in r["roles"]:
            r["roles"] = [*r["roles"], "kafka_controller"]
    if topo.mode == "zookeeper" and live:
        bootstrap = ",".join(f"{r['address']}:9092" for r in live)
        try:
            lead["active_controller"] = netns.run_in(
                lab.ns, lambda: client.controller_id(bootstrap)
            )
        except Exception:  # a cluster in trouble still gets a status table
            lead["active_controller"] = None
    if topo.mode == "zookeeper":
        zk = [r for r in rows if "zookeeper" in r["roles"]]
        modes = netns.run_in(lab.ns, lambda: {r["host"]: zk_mode(r["address"]) for r in zk})
        for r in zk:
            r["zookeeper_mode"] = modes[r["host"]]
        lead["zookeeper_leader"] = next((h for h, m in modes.items() if m == "leader"), None)
    for r in rows:
        r["leader"] = _leader_mark(r, lead)
    return {"lab": {"netns": lab.ns, **lead, "state": str(lab.state)}, "machines": rows}


def _leader_mark(row: dict[str, Any], lead: dict[str, Any]) -> str:
    marks = []
    if row["node_id"] is not None and row["node_id"] == lead.get("active_controller"):
        marks.append("active controller")
    if row.get("zookeeper_mode"):
        marks.append(f"zk {row['zookeeper_mode']}")
    return ", ".join(marks)
