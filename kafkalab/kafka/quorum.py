"""Who leads the cluster's metadata: the KRaft quorum's active controller (from
kafka-metadata-quorum.sh), the ZooKeeper ensemble's leader (from each server's `srvr`),
the controller a broker names (ZooKeeper mode). Call from inside the cluster's network
namespace; the KRaft tool runs on a machine (kafkalab.kafka.tools).
"""

from __future__ import annotations

import importlib.util
import re
import socket
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from types import ModuleType

from kafkalab.kafka import clients
from kafkalab.paths import repo_root

# A KRaft voter counts as caught up within this many records / ms of the leader.
CAUGHT_UP_LAG = 50
CAUGHT_UP_MS = 10_000
# What a ZooKeeper server that serves says it is.
SERVING = ("leader", "follower", "standalone")
# Runs a shell script on a machine of the cluster and returns what it printed.
Run = Callable[[str], str]


@dataclass
class MetadataLeader:
    mode: str
    leader: str | None  # machine name
    epoch: int | None  # KRaft LeaderEpoch, ZooKeeper zxid epoch
    members: dict[str, str]  # machine -> Leader/Follower/... or "down"
    lagging: dict[str, int] = field(default_factory=dict)  # KRaft voters behind the leader


# -- ZooKeeper -------------------------------------------------------------------------------


def zk_srvr(address: str, timeout: float = 2.0) -> dict[str, str]:
    """ZooKeeper's own `srvr` answer as key: value pairs ({} when it does not serve)."""
    try:
        with socket.create_connection((address, 2181), timeout=timeout) as sock:
            sock.sendall(b"srvr")
            data = b""
            while chunk := sock.recv(4096):
                data += chunk
    except OSError:
        return {}
    return _pairs(data.decode(errors="replace"))


def zk_mode(address: str, timeout: float = 2.0) -> str | None:
    """ZooKeeper's own answer to `srvr`: leader, follower or standalone (None: down)."""
    return zk_srvr(address, timeout).get("Mode")


def zookeeper_leader(addresses: Mapping[str, str]) -> MetadataLeader:
    """The ensemble's leader and its epoch, from every server's `srvr` (machine ->
    address of each ZooKeeper server)."""
    hosts = list(addresses)
    with ThreadPoolExecutor(max_workers=len(hosts) or 1) as pool:
        answers = dict(zip(hosts, pool.map(lambda h: zk_srvr(addresses[h]), hosts), strict=True))
    members = {h: a.get("Mode", "down") for h, a in answers.items()}
    leader = next((h for h, m in members.items() if m == "leader"), None)
    epoch = int(answers[leader]["Zxid"], 16) >> 32 if leader and "Zxid" in answers[leader] else None
    return MetadataLeader("zookeeper", leader, epoch, members)


def controller_id(bootstrap: str, timeout: float = 15) -> int:
    """The broker that reports itself controller (meaningful in ZooKeeper mode; in KRaft
    brokers name a random broker: ask the quorum there)."""
    md = clients.admin(bootstrap).list_topics(timeout=timeout)
    return int(md.controller_id)


# -- KRaft: kafka-metadata-quorum.sh ---------------------------------------------------------


def _pairs(text: str) -> dict[str, str]:
    """`Key: value` lines as a dict (the tool's --status, ZooKeeper's srvr)."""
    out = {}
    for line in text.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k.strip()] = v.strip()
    return out


def _table(text: str) -> list[dict[str, str]]:
    """The tool's whitespace-separated --replication table (header row first) as dicts."""
    lines = [ln.split() for ln in text.splitlines() if ln.strip()]
    head = next((ln for ln in lines if ln and ln[0] == "NodeId"), None)
    if head is None:
        return []
    return [
        dict(zip(head, row, strict=True))
        for row in lines
        if len(row) == len(head) and row[0].isdigit()
    ]


def describe(
    run: Run, bootstrap: str, replication: bool = True, *, controllers: bool = False
) -> tuple[dict[str, str], list[dict[str, str]]]:
    """`kafka-metadata-quorum.sh describe --status` (and `--replication`), as data: the
    status pairs and the replication table's rows. `controllers`: `bootstrap` names
    controllers (--bootstrap-controller), for a quorum whose brokers are not KRaft brokers
    (a migration from ZooKeeper)."""
    flag = "--bootstrap-controller" if controllers else "--bootstrap-server"
    tool = f"kafka-metadata-quorum.sh {flag} {bootstrap} describe"
    script = f"{tool} --status" + (f"; echo ---; {tool} --replication" if replication else "")
    status_part, _, repl_part = run(script).partition("---")
    return _pairs(status_part), _table(repl_part)


@cache
def _role_health() -> ModuleType:
    """The kafka role's health check (files/kafka_health.py): its kafka-python DescribeQuorum
    request is the one kafkalab asks the quorum with too, so there is one copy of it."""
    path = repo_root() / "ansible" / "roles" / "kafka" / "files" / "kafka_health.py"
    spec = importlib.util.spec_from_file_location("kafkalab_role_kafka_health", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def voters(bootstrap: str) -> tuple[int, list[int]]:
    """The KRaft quorum's leader and voter ids, from one DescribeQuorum request (no JVM
    tool); raises when no broker answers or the quorum has no leader. Call inside the lab's
    network."""
    health = _role_health()
    client = health.connect(bootstrap)
    try:
        leader, ids = health.describe_quorum(client, client.least_loaded_node())
        return int(leader), [int(i) for i in ids]
    finally:
        client.close()


def active_controller(bootstrap: str) -> int | None:
    """The active KRaft controller's node id (see `voters`); None when no broker answers or
    the quorum has no leader."""
    try:
        return voters(bootstrap)[0]
    except Exception:
        return None


def kraft_leader(
    run: Run,
    bootstrap: str,
    host_of: Callable[[int], str],
    replication: bool = True,
    *,
    controllers: bool = False,
) -> MetadataLeader:
    """Who leads the quorum, in which epoch; with `replication`, how every voter is doing
    (one more tool run). `host_of` names the machine of a node id; `controllers`: see
    `describe`."""
    status, rows = describe(run, bootstrap, replication, controllers=controllers)
    members: dict[str, str] = {}
    lagging: dict[str, int] = {}
    now = max(
        (
            int(r.get("LastFetchTimestamp", "0"))
            for r in rows
            if r.get("LastFetchTimestamp", "").isdigit()
        ),
        default=0,
    )
    for rec in rows:
        name = host_of(int(rec["NodeId"]))
        members[name] = rec.get("Status", "?")
        lag = int(rec["Lag"]) if rec.get("Lag", "").isdigit() else 0
        caught_up = rec.get("LastCaughtUpTimestamp", "")
        behind_ms = now - int(caught_up) if caught_up.isdigit() else 0
        if members[name] != "Leader" and (lag > CAUGHT_UP_LAG or behind_ms > CAUGHT_UP_MS):
            lagging[name] = lag
    leader_id = status.get("LeaderId", "")
    epoch = status.get("LeaderEpoch", "")
    for voter in re.findall(r'"id":\s*(\d+)', status.get("CurrentVoters", "")) or re.findall(
        r"\d+", status.get("CurrentVoters", "")
    ):
        members.setdefault(host_of(int(voter)), "down")
    return MetadataLeader(
        "kraft",
        host_of(int(leader_id)) if leader_id.isdigit() else None,
        int(epoch) if epoch.isdigit() else None,
        members,
        lagging,
    )
