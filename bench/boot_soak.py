"""Boot soak: boot a cluster's machines and stop them, again and again, and count bad boots.

    sudo .venv/bin/python -m bench.boot_soak [--boots 50] [--brokers 3] [--no-drop]
        [--interrupt] [--seed N] [--json]

Each round drops the page cache first (`sync; echo 3 > /proc/sys/vm/drop_caches`: a
fresh machine's first boot reads everything from disk, and that is what made machines
sharing one cgroup tree race), then `up --no-provision` through the Python API, then
asks every machine's systemd how its boot went. A round is bad when `up` had to reboot
a machine (its first boot was not clean) or fails, or when a machine ends up anything
but `running`; the machines' cgroups must all differ. Runs in its own state dir and
network namespace (`klsoak`, KAFKALAB_SOAK_NS to change) and removes them at the end.

With --interrupt (issue 10, item 11) each round starts with a `kafkalab up --no-provision`
of new machines that is stopped at a random moment of its boot (0-1 s after it says
"booting"; new machines are up and logged into 1.5 s after it here), by Ctrl-C (SIGINT to
its process group) in odd rounds and SIGKILL in even ones.
Then `kafkalab down --purge`, which must leave no process of the lab, then the round's
boot of new machines as above. A round is also bad when the interrupted `up` took more
than 5 s to end after a Ctrl-C or the purge failed or left a process behind.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
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


def processes_of(state: Path) -> list[int]:
    """The processes whose command line names the lab's state dir (launchers, nspawn)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                if str(state).encode() in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def interrupted_up(state: Path, how: signal.Signals, after: float) -> tuple[str, list[str]]:
    """`kafkalab up --no-provision` stopped by `how` `after` seconds into its boot, then
    `down --purge`: how it was stopped, and what went wrong (nothing: an empty list)."""
    cmd = [sys.executable, "-m", "kafkalab"]
    env = dict(os.environ, KAFKALAB_STATE=str(state))
    proc = subprocess.Popen(
        [*cmd, "up", "--no-provision"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,  # its own process group, as a terminal's command has
    )
    assert proc.stdout is not None
    said = []
    for line in proc.stdout:  # up's own checks and the machines' dirs come before it
        said.append(line)
        if "booting" in line:
            break
    try:
        proc.wait(after)
        stopped_how = f"none: up ended before the {how.name} at {after:.2f}s"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, how)  # a terminal's Ctrl-C reaches the whole group
        stopped_how = f"{how.name} {after:.2f}s into the boot"
    stopped = time.monotonic()
    out = "".join(said) + proc.communicate(timeout=60)[0]
    problems = []
    took = time.monotonic() - stopped
    if how == signal.SIGINT and took > 5:
        problems.append(f"up took {took:.1f}s to end after Ctrl-C")
    purge = subprocess.run(
        [*cmd, "down", "--purge"], capture_output=True, text=True, env=env, timeout=180
    )
    if purge.returncode != 0:
        why = purge.stderr.strip()[-300:]
        problems.append(f"down --purge failed: {why} (the interrupted up said {out[-300:]})")
    if left := processes_of(state):
        problems.append(f"down --purge left processes {left}")
    return stopped_how, problems


def one_round(
    cluster: EmbeddedCluster,
    topo: topology.Topology,
    drop: bool,
    interrupt: tuple[signal.Signals, float] | None = None,
) -> dict[str, Any]:
    stopped_how, interrupted = interrupted_up(cluster.state, *interrupt) if interrupt else ("", [])
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
    bad = bool(
        error or rebooted or interrupted or any(s.state != "running" for s in states.values())
    )
    shared = len(set(groups.values())) != len(groups) or "" in groups.values()
    cluster.down(False, lambda _msg: None)
    return {
        "seconds": round(seconds, 1),
        "bad": bad or shared,
        "error": error,
        "interrupted": stopped_how,
        "interrupt_problems": interrupted,
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
    parser.add_argument(
        "--interrupt", action="store_true", help="first an up stopped by Ctrl-C/SIGKILL, purged"
    )
    parser.add_argument("--seed", type=int, default=None, help="for the interrupts' moments")
    parser.add_argument("--json", action="store_true", help="print the rounds as JSON")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    moments = random.Random(seed)
    ns = os.environ.get("KAFKALAB_SOAK_NS", "klsoak")
    os.environ["KAFKALAB_NETNS"] = ns
    with tempfile.TemporaryDirectory(prefix="kafkalab-soak-") as tmp:
        cluster = EmbeddedCluster(Path(tmp) / "state")
        topo = topology.load(overrides={"brokers": args.brokers, "extra_hosts": []})
        rounds = []
        try:
            for i in range(1, args.boots + 1):
                how = signal.SIGINT if i % 2 else signal.SIGKILL
                stop = (how, moments.uniform(0.0, 1.0)) if args.interrupt else None
                r = one_round(cluster, topo, drop=not args.no_drop, interrupt=stop)
                rounds.append(r)
                if not args.json:
                    mark = "BAD" if r["bad"] else "ok "
                    off = [f"{n}: {st}" for n, st in r["states"].items() if st != "running"]
                    shared = [] if r["cgroups_distinct"] else ["machines share a cgroup"]
                    detail = "; ".join(
                        ([f"interrupt: {r['interrupted']}"] if stop else [])
                        + r["interrupt_problems"]
                        + ([r["error"]] if r["error"] else [])
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
        "interrupted_ups": len(rounds) if args.interrupt else 0,
        "seed": seed,
        "up_seconds_median": times[len(times) // 2] if times else None,
        "up_seconds_max": times[-1] if times else None,
    }
    if args.json:
        print(json.dumps({"summary": summary, "rounds": rounds}, indent=2))
    else:
        print(
            f"{summary['boots']} boots of {args.brokers} machines, {bad} bad"
            f"{' (each after an interrupted up and a purge)' if args.interrupt else ''}; "
            f"up --no-provision median {summary['up_seconds_median']}s, "
            f"max {summary['up_seconds_max']}s; seed {seed}"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
