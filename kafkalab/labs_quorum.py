"""Who leads the cluster's metadata: the KRaft quorum's active controller (from
kafka-metadata-quorum.sh) or the ZooKeeper ensemble's leader (from each server's `srvr`).
Runs inside the lab network namespace, as the rest of the lab code.
"""

from __future__ import annotations

import re
import socket
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkalab.labs_cluster import LabContext

# A KRaft voter counts as caught up within this many records / ms of the leader.
CAUGHT_UP_LAG = 50
CAUGHT_UP_MS = 10_000


@dataclass
class MetadataLeader:
    mode: str
    leader: str | None  # machine name
    epoch: int | None  # KRaft LeaderEpoch, ZooKeeper zxid epoch
    members: dict[str, str]  # machine -> Leader/Follower/... or "down"
    lagging: dict[str, int] = field(default_factory=dict)  # KRaft voters behind the leader


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
    out = {}
    for line in data.decode(errors="replace").splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k.strip()] = v.strip()
    return out


def metadata_leader(ctx: LabContext, replication: bool = True) -> MetadataLeader:
    """Who leads, in which epoch; with `replication`, also how every member is doing
    (KRaft: one more tool run)."""
    if ctx.topo.mode == "zookeeper":
        hosts = ctx.zk_hosts()
        with ThreadPoolExecutor(max_workers=len(hosts) or 1) as pool:
            answers = dict(
                zip(hosts, pool.map(lambda h: zk_srvr(ctx.addresses[h]), hosts), strict=True)
            )
        members = {h: a.get("Mode", "down") for h, a in answers.items()}
        leader = next((h for h, m in members.items() if m == "leader"), None)
        epoch = (
            int(answers[leader]["Zxid"], 16) >> 32 if leader and "Zxid" in answers[leader] else None
        )
        return MetadataLeader("zookeeper", leader, epoch, members)
    return kraft_quorum(ctx, replication)


def _table(text: str) -> list[dict[str, str]]:
    """A tool's whitespace-separated table (header row first) as dicts."""
    lines = [ln.split() for ln in text.splitlines() if ln.strip()]
    head = next((ln for ln in lines if ln and ln[0] == "NodeId"), None)
    if head is None:
        return []
    return [
        dict(zip(head, row, strict=True))
        for row in lines
        if len(row) == len(head) and row[0].isdigit()
    ]


def kraft_quorum(ctx: LabContext, replication: bool = True) -> MetadataLeader:
    """kafka-metadata-quorum.sh describe --status (and --replication), as data."""
    host = ctx.tool_host()
    tool = f"kafka-metadata-quorum.sh --bootstrap-server {ctx.bootstrap} describe"
    cmd = f"{tool} --status; echo ---" + (f"; {tool} --replication" if replication else "")
    proc = ctx.sh(host, cmd, timeout=90)
    status_part, _, repl_part = proc.stdout.partition("---")
    status = dict(
        (k.strip(), v.strip())
        for k, v in (line.split(":", 1) for line in status_part.splitlines() if ":" in line)
    )
    members: dict[str, str] = {}
    lagging: dict[str, int] = {}
    rows = _table(repl_part)
    now = max(
        (
            int(r.get("LastFetchTimestamp", "0"))
            for r in rows
            if r.get("LastFetchTimestamp", "").isdigit()
        ),
        default=0,
    )
    for rec in rows:
        name = ctx.host_of(int(rec["NodeId"]))
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
        members.setdefault(ctx.host_of(int(voter)), "down")
    return MetadataLeader(
        "kraft",
        ctx.host_of(int(leader_id)) if leader_id.isdigit() else None,
        int(epoch) if epoch.isdigit() else None,
        members,
        lagging,
    )
