"""Boot soak: boot a cluster's machines and stop them, again and again, and count bad boots.

    sudo .venv/bin/python -m bench.boot_soak [--boots 50] [--brokers 3] [--keep-cache] [--json]

Each round drops the page cache first (`sync; echo 3 > /proc/sys/vm/drop_caches`: a
fresh machine's first boot reads everything from disk, and that is what made machines
sharing one cgroup tree race), then `up --no-provision` through the Python API, then
asks every machine's systemd how its boot went. A round is bad when `up` had to reboot
a machine (its first boot was not clean) or fails, or when a machine ends up anything
but `running`; the machines' cgroups must all differ. Runs in its own state dir and
network namespace (`klsoak`, KAFKALAB_SOAK_NS to change) and removes them at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kafkalab import topology
from kafkalab.errors import KafkalabError
from kafkalab.targets import boot
from kafkalab.targets.embedded import EmbeddedCluster


def drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def cgroups_of(pid: int) -> tuple[str, str]:
    """A process's cgroup in the cgroup2 tree and in the name=systemd tree."""
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    unified = next((ln.split(":", 2)[2] for ln in lines if ln.startswith("0::")), "")
    named = next((ln.split(":", 2)[2] for ln in lines if ":name=systemd:" in ln), "")
    return unified, named


def one_round(cluster: EmbeddedCluster, topo: topology.Topology, drop: bool) -> dict[str, Any]:
    if drop:
        drop_caches()
    said: list[str] = []
    start = time.monotonic()
    error = ""
    try:
        cluster.up(topo, said.append, provision_hosts=False)
    except KafkalabError as exc:
        error = str(exc)
    seconds = time.monotonic() - start
    machines = cluster.machines()
    states = boot.states(machines, timeout=60)
    groups = {}
    for m in machines:
        pid = m.pid()
        init = boot.init_pid(pid) if pid else None
        groups[m.name] = cgroups_of(init)[0] if init else ""
    rebooted = [line for line in said if "did not boot cleanly" in line]
    bad = bool(error or rebooted or any(s.state != "running" for s in states.values()))
    shared = len(set(groups.values())) != len(groups) or "" in groups.values()
    cluster.down(False, lambda _msg: None)
    return {
        "seconds": round(seconds, 1),
        "bad": bad or shared,
        "error": error,
        "first_boot_problems": rebooted,
        "states": {name: s.describe() for name, s in states.items()},
        "cgroups": groups,
        "cgroups_distinct": not shared,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boots", type=int, default=10)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--no-drop", action="store_true", help="keep the page cache warm")
    parser.add_argument("--json", action="store_true", help="print the rounds as JSON")
    args = parser.parse_args()
    ns = os.environ.get("KAFKALAB_SOAK_NS", "klsoak")
    os.environ["KAFKALAB_NETNS"] = ns
    with tempfile.TemporaryDirectory(prefix="kafkalab-soak-") as tmp:
        cluster = EmbeddedCluster(Path(tmp) / "state")
        topo = topology.load(overrides={"brokers": args.brokers, "extra_hosts": []})
        rounds = []
        try:
            for i in range(1, args.boots + 1):
                r = one_round(cluster, topo, drop=not args.no_drop)
                rounds.append(r)
                if not args.json:
                    mark = "BAD" if r["bad"] else "ok "
                    off = [f"{n}: {st}" for n, st in r["states"].items() if st != "running"]
                    shared = [] if r["cgroups_distinct"] else ["machines share a cgroup"]
                    detail = "; ".join(
                        ([r["error"]] if r["error"] else [])
                        + r["first_boot_problems"]
                        + off
                        + shared
                    )
                    print(f"boot {i:3d}: {mark} {r['seconds']:5.1f}s {detail}", flush=True)
        finally:
            cluster.down(True, lambda _msg: None)
    bad = sum(r["bad"] for r in rounds)
    times = sorted(r["seconds"] for r in rounds)
    summary = {
        "boots": len(rounds),
        "bad": bad,
        "machines": args.brokers,
        "page_cache_dropped": not args.no_drop,
        "up_seconds_median": times[len(times) // 2] if times else None,
        "up_seconds_max": times[-1] if times else None,
    }
    if args.json:
        print(json.dumps({"summary": summary, "rounds": rounds}, indent=2))
    else:
        print(
            f"{summary['boots']} boots of {args.brokers} machines, {bad} bad; "
            f"up --no-provision median {summary['up_seconds_median']}s, "
            f"max {summary['up_seconds_max']}s"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
