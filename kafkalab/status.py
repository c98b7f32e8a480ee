"""What the cluster looks like right now: which target, machines, services, ids, who leads.
It works on any target: what it learns of a machine it learns over ssh, and how the
machine booted where the target controls its machines (embedded)."""

from __future__ import annotations

import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kafkalab.kafka import quorum
from kafkalab.targets import forward
from kafkalab.targets.cluster import InventoryCluster

SERVICES = {
    "kafka_broker": "kafka",
    "kafka_controller": "kafka",
    "zookeeper": "zookeeper",
    "spark_master": "spark-master",
    "spark_worker": "spark-worker",
    "ksqldb": "ksqldb",
}


def _run(cluster: InventoryCluster, name: str, script: str, timeout: float = 60) -> str:
    """What a script on a machine printed ("" when it took over `timeout`)."""
    try:
        return cluster.sh(name, script, timeout).stdout
    except subprocess.TimeoutExpired:
        return ""


def collect(cluster: InventoryCluster) -> dict[str, Any]:
    """Status as data (the table and --json both come from this)."""
    target = cluster.describe()
    topo = cluster.layout()
    if topo is None:
        return {"lab": None, "target": target, "machines": []}
    hosts = cluster.hosts()
    machines = {m.name: m for m in cluster.machines()}

    def one(name: str) -> dict[str, Any]:
        hv = hosts[name]
        services = sorted({SERVICES[g] for g in hv["groups"] if g in SERVICES})
        running = machines[name].running()
        booted = cluster.boot_state(name)
        states = {s: "machine stopped" for s in services}
        out = []
        if running and services:
            out = _run(cluster, name, shlex.join(["systemctl", "is-active", *services]), 20).split()
            states = dict(zip(services, out or ["unreachable"] * len(services), strict=False))
        if booted is not None:  # the target controls its machines: it knows their state
            machine = "running" if running else "stopped"
        else:
            machine = "reachable" if out else "unreachable"
        return {
            "host": name,
            "address": hv["kafkalab_address"],
            "roles": [g for g in hv["groups"]],
            "machine": machine,
            "boot": booted.as_dict() if booted is not None else {},
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
        lead["active_controller"] = cluster.run(lambda: quorum.active_controller(bootstrap))
    combined = topo.mode == "kraft" and topo.controllers == 0
    for r in rows:
        if combined and "kafka_broker" in r["roles"]:
            r["roles"] = [*r["roles"], "kafka_controller"]
    if topo.mode == "zookeeper" and live:
        bootstrap = ",".join(f"{r['address']}:9092" for r in live)
        try:
            lead["active_controller"] = cluster.run(lambda: quorum.controller_id(bootstrap))
        except Exception:  # a cluster in trouble still gets a status table
            lead["active_controller"] = None
    if topo.mode == "zookeeper":
        zk = [r for r in rows if "zookeeper" in r["roles"]]
        modes = cluster.run(lambda: {r["host"]: quorum.zk_mode(r["address"]) for r in zk})
        for r in zk:
            r["zookeeper_mode"] = modes[r["host"]]
        lead["zookeeper_leader"] = next((h for h, m in modes.items() if m == "leader"), None)
    for r in rows:
        r["leader"] = _leader_mark(r, lead)
    # "lab" is the key `status --json` has always had for the cluster; "target" says which.
    lab = {"netns": cluster.ns, **lead, "state": str(cluster.state)}
    # The embedded lab's host ports (kafkalab.targets.forward), while its forwarder runs.
    lab["forwarded"] = forward.urls(cluster.state) if cluster.kind == "embedded" else {}
    return {"lab": lab, "target": target, "machines": rows}


def _leader_mark(row: dict[str, Any], lead: dict[str, Any]) -> str:
    marks = []
    if row["node_id"] is not None and row["node_id"] == lead.get("active_controller"):
        marks.append("active controller")
    if row.get("zookeeper_mode"):
        marks.append(f"zk {row['zookeeper_mode']}")
    return ", ".join(marks)
