"""Print figures for `kafkalab up`: cold (image cached / not cached), warm re-provision,
peak RSS of all machines.

    sudo .venv/bin/python -m bench.up [--mode kraft] [--skip-uncached]

Runs in its own state dir and network namespace (klbench) and removes them at the end.
The "image not cached" run uses a scratch cache that shares the Kafka artifact but not
the base image, so it includes the mmdebstrap build.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from kafkalab.paths import cache_root, repo_root


def machine_pids(state: Path) -> list[int]:
    pids = []
    for pid_file in (state / "machines").glob("*/pid"):
        with contextlib.suppress(OSError, ValueError):
            pids.append(int(pid_file.read_text()))
    return pids


def children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            tree.setdefault(ppid, []).append(int(proc.name))
    return tree


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def machines_rss(state: Path) -> int:
    """RSS (KiB) of every process inside every machine (descendants of each nspawn)."""
    tree = children()
    total, todo = 0, machine_pids(state)
    while todo:
        pid = todo.pop()
        total += rss_kib(pid)
        todo.extend(tree.get(pid, []))
    return total


class PeakSampler(threading.Thread):
    def __init__(self, state: Path) -> None:
        super().__init__(daemon=True)
        self.state, self.peak, self.stop = state, 0, threading.Event()

    def run(self) -> None:
        while not self.stop.wait(1.0):
            self.peak = max(self.peak, machines_rss(self.state))


def kafkalab(env: dict[str, str], *args: str) -> float:
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "kafkalab", *args], env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        sys.exit(f"kafkalab {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return time.monotonic() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default="kraft", choices=["kraft", "zookeeper"])
    ap.add_argument("--skip-uncached", action="store_true", help="skip the image build run")
    args = ap.parse_args()
    state = repo_root() / ".kafkalab-bench"
    env = dict(os.environ, KAFKALAB_STATE=str(state), KAFKALAB_NETNS="klbench")
    figures: list[tuple[str, str]] = []
    kafkalab(env, "down", "--purge")

    if not args.skip_uncached:
        with tempfile.TemporaryDirectory(prefix="kafkalab-bench-cache-") as scratch:
            os.symlink(cache_root() / "artifacts", Path(scratch) / "artifacts")
            cold_env = dict(env, KAFKALAB_CACHE=scratch)
            secs = kafkalab(cold_env, "up", "--mode", args.mode)
            figures.append(("cold up, base image NOT cached (s)", f"{secs:.1f}"))
            kafkalab(cold_env, "down", "--purge")

    sampler = PeakSampler(state)
    sampler.start()
    secs = kafkalab(env, "up", "--mode", args.mode)
    figures.append(("cold up, base image cached (s)", f"{secs:.1f}"))
    secs = kafkalab(env, "up")
    figures.append(("warm re-provision, changed=0 (s)", f"{secs:.1f}"))
    time.sleep(5)
    sampler.stop.set()
    sampler.join()
    figures.append(("peak RSS of all machines (MiB)", f"{sampler.peak / 1024:.0f}"))
    figures.append(("settled RSS of all machines (MiB)", f"{machines_rss(state) / 1024:.0f}"))
    secs = kafkalab(env, "down")
    figures.append(("down, data kept (s)", f"{secs:.1f}"))
    kafkalab(env, "down", "--purge")

    print(f"kafkalab up benchmark ({args.mode}, {os.cpu_count()} cores)")
    for name, value in figures:
        print(f"  {name:<40} {value:>8}")


if __name__ == "__main__":
    main()
