"""Print figures for `kafkalab up` with a warm cache (issue 10, item 12): new machines, then
a second `up` (changed=0) right after and one after the cluster settled (--settle s), each
with kafkalab's strategy (`mitogen`: Mitogen's linear strategy without its CPU pinning,
ansible/plugins/strategy/kafkalab_linear.py) and with Ansible's own (`stock`), and where the
time goes (boot and kafkalab's own steps, each role, the slowest tasks).

    sudo .venv/bin/python -m bench.ansible_speed [--strategy both|mitogen|stock] [--top 6]
        [--settle 60] [--rounds 1]

Goals: new machines <= 25 s, second up <= 10 s. The lab runs in KAFKALAB_STATE and
KAFKALAB_NETNS (default: .kafkalab-bench-speed and klspeed) and is purged at the end. Hold
the shared cluster lock (flock /tmp/kl-cluster.lock ...) so no other lab runs meanwhile;
the load average before and after each run is printed beside it, and a CPU check: the CPU
seconds a fixed Python loop took just before it (after it, for a run right after another).
This host's own speed varies: the check gave 0.34 s to 0.68 s within an hour, with no steal
shown; compare runs of similar checks. With
--rounds N the runs are repeated and the median of each kind printed last.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from kafkalab.paths import repo_root

GOALS = {"new machines": 25.0, "second up": 10.0}
# The runs: what, its goal, seconds to wait before it. A second `up` right after the first
# shares the cores with three brokers that have just started (their JIT and first GC: about
# a second of the up's); a learner's second `up` comes later, on a settled cluster.
RUNS = [
    ("new machines", "new machines", False),
    ("second up, right after", "second up", False),
    ("second up, cluster settled", "second up", True),
]


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def cpu_check() -> float:
    """CPU seconds of a fixed loop: how fast this host's CPU runs just now."""
    start = time.process_time()
    total = 0
    for i in range(10_000_000):
        total += i
    return time.process_time() - start


def up(env: dict[str, str], times: Path) -> tuple[float, list[dict[str, object]], str]:
    """One `kafkalab up`: seconds, its tasks' times, the load average before/after."""
    times.write_text("")
    before = load()
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "kafkalab", "up"], env=env, capture_output=True, text=True
    )
    secs = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"kafkalab up failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    rows = [json.loads(line) for line in times.read_text().splitlines() if line]
    return secs, rows, f"{before}/{load()}"


def breakdown(secs: float, rows: list[dict[str, object]], top: int) -> list[tuple[str, str]]:
    """Where the seconds of one `up` went: outside Ansible, each role, the slowest tasks."""
    total = next((float(str(r["secs"])) for r in rows if r["action"] == "total"), 0.0)
    tasks = [r for r in rows if r["action"] not in ("total", "play")]
    by_role: dict[str, float] = defaultdict(float)
    for r in tasks:
        name = str(r["task"])
        by_role[name.split(" : ", 1)[0] if " : " in name else "(site.yml plays)"] += float(
            str(r["secs"])
        )
    out = [
        ("  boot, checks, ansible start (s)", f"{secs - total:.1f}"),
        ("  ansible-playbook run (s)", f"{total:.1f}"),
    ]
    out += [
        (f"    role {role} (s)", f"{t:.1f}")
        for role, t in sorted(by_role.items(), key=lambda kv: -kv[1])
    ]
    for r in sorted(tasks, key=lambda r: -float(str(r["secs"])))[:top]:
        out.append((f"    task {str(r['task'])[:44]} (s)", f"{float(str(r['secs'])):.2f}"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strategy", default="both", choices=["both", "mitogen", "stock"])
    ap.add_argument("--top", type=int, default=6, help="slowest tasks to list")
    ap.add_argument("--settle", type=float, default=60, help="seconds before the settled second up")
    ap.add_argument("--rounds", type=int, default=1, help="times to repeat the runs")
    args = ap.parse_args()
    state = os.environ.get("KAFKALAB_STATE", str(repo_root() / ".kafkalab-bench-speed"))
    env = dict(os.environ, KAFKALAB_STATE=state)
    env.setdefault("KAFKALAB_NETNS", "klspeed")
    fd, name = tempfile.mkstemp(prefix="kafkalab-task-times-", suffix=".jsonl")
    os.close(fd)
    times = Path(name)
    env["KAFKALAB_BENCH_TASK_TIMES"] = str(times)
    env["ANSIBLE_CALLBACK_PLUGINS"] = str(Path(__file__).parent / "callback_plugins")
    env["ANSIBLE_CALLBACKS_ENABLED"] = "task_times"
    strategies = ["mitogen", "stock"] if args.strategy == "both" else [args.strategy]
    figures: list[tuple[str, str]] = []
    seen: dict[str, list[float]] = defaultdict(list)
    down = [sys.executable, "-m", "kafkalab", "down", "--purge"]
    try:
        for strategy in strategies:
            run_env = dict(env, KAFKALAB_MITOGEN="1" if strategy == "mitogen" else "0")
            for _ in range(args.rounds):
                subprocess.run(down, env=run_env, capture_output=True, check=True)
                for what, goal, settle in RUNS:
                    time.sleep(args.settle if settle else 0)
                    if settle:  # just before, at the end of the wait
                        check = cpu_check()
                    secs, rows, loadavg = up(run_env, times)
                    if not settle:  # just after: a run right after another is not delayed
                        check = cpu_check()
                    seen[f"{strategy}: {what}"].append(secs)
                    verdict = "ok" if secs <= GOALS[goal] else f"over {GOALS[goal]:.0f}"
                    label = f"{strategy}: {what} (s), load {loadavg}, cpu check {check:.2f} s"
                    figures.append((label, f"{secs:.1f} {verdict}"))
                    figures += breakdown(secs, rows, args.top)
    finally:
        subprocess.run(down, env=env, capture_output=True)
        times.unlink(missing_ok=True)
    print(
        f"kafkalab up with a warm cache ({os.cpu_count()} cores; load = 1-min average before/after)"
    )
    for label, value in figures:
        print(f"  {label:<74} {value:>9}")
    if args.rounds > 1:
        for what, runs in seen.items():
            listed = ", ".join(f"{r:.1f}" for r in runs)
            print(f"  median of {what} (s): {statistics.median(runs):.1f} ({listed})")


if __name__ == "__main__":
    main()
