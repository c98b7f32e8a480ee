"""Print figures for a first run from an empty cache: `make setup` (what `make up` does
before the boot: packages, .venv, Kafka and the base image), then the cold `kafkalab up`
and a second `up` (changed=0).

    sudo .venv/bin/python -m bench.cold_up [--setup-only] [--keep-cache] [--repo PATH]

Goals (issue 10, item 12): `make up` from an empty cache within 3 min on a 2-core
machine; a second `up` with changed=0 within 10 s. The cache is a fresh scratch directory
(KAFKALAB_CACHE), so nothing already fetched is reused; `make setup` must fetch nothing
for Spark or VMs (the figures list what the cache holds afterwards). With `--setup-only`
no machine boots. The lab runs in its own state dir and network namespace (klcold) and is
removed at the end. A `.venv` already in the checkout skips pip: give `--repo` a fresh
clone to time that too. Run as root: `make` would run its steps under sudo otherwise,
and sudo drops KAFKALAB_CACHE.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kafkalab.paths import repo_root

GOAL_MAKE_UP = 180.0
GOAL_SECOND_UP = 10.0
NETNS = "klcold"


def phase(name: str, cmd: list[str], env: dict[str, str], log: Path) -> float:
    """Run `cmd`, its output appended to `log` with each line's second since the start
    (where the time went); seconds taken (exits on failure)."""
    print(f"… {name}", file=sys.stderr)
    start = time.monotonic()
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(cmd)}\n")
        out.flush()
        proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            out.write(f"{time.monotonic() - start:7.1f}  {line}")
            out.flush()
        returncode = proc.wait()
    secs = time.monotonic() - start
    print(f"{secs:8.1f} s  {name}", file=sys.stderr)
    if returncode != 0:
        sys.exit(f"{name} failed (exit {returncode}): see {log}")
    return secs


def cache_contents(cache: Path) -> list[tuple[str, float]]:
    """(entry, MB) for the top entries of the cache's artifacts/, images/ and boxes/."""
    found = []
    for part in ("artifacts", "images", "boxes"):
        for entry in sorted((cache / part).glob("[!.]*")):
            if entry.name.endswith(".sha512"):
                continue
            files = [entry] if entry.is_file() else [p for p in entry.rglob("*") if p.is_file()]
            size = sum(p.lstat().st_size for p in files)
            found.append((f"{part}/{entry.name}", size / 1e6))
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--setup-only", action="store_true", help="time `make setup`, boot nothing")
    ap.add_argument("--keep-cache", action="store_true", help="keep the scratch cache")
    ap.add_argument("--repo", type=Path, default=repo_root(), help="the checkout to time")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (sudo .venv/bin/python -m bench.cold_up): see the docstring")
    repo = args.repo.resolve()
    scratch = Path(tempfile.mkdtemp(prefix="kafkalab-cold-cache-"))
    log = scratch.with_name(scratch.name + ".log")
    state = repo / ".kafkalab-bench-cold"
    env = dict(os.environ, KAFKALAB_CACHE=str(scratch), KAFKALAB_STATE=str(state))
    env["KAFKALAB_NETNS"] = NETNS
    kafkalab = str(repo / ".venv" / "bin" / "kafkalab")
    figures: list[tuple[str, str]] = []
    try:
        setup = phase("make setup, empty cache", ["make", "-C", str(repo), "setup"], env, log)
        figures.append(("make setup, empty cache (s)", f"{setup:.1f}"))
        contents = cache_contents(scratch)
        spark = any("spark" in name for name, _ in contents)
        figures.append(("Spark fetched by make setup", "yes (!)" if spark else "no"))
        figures.append(("cache after setup (MB)", f"{sum(mb for _, mb in contents):.0f}"))
        figures += [(f"  {name} (MB)", f"{mb:.0f}") for name, mb in contents]
        if not args.setup_only:
            subprocess.run([kafkalab, "down", "--purge"], env=env, capture_output=True)
            up = phase("kafkalab up, cold", [kafkalab, "up"], env, log)
            figures.append(("kafkalab up, new machines (s)", f"{up:.1f}"))
            total = setup + up
            goal = "ok" if total <= GOAL_MAKE_UP else f"over {GOAL_MAKE_UP:.0f}"
            figures.append(("make up from an empty cache (s)", f"{total:.1f} {goal}"))
            again = phase("kafkalab up, changed=0", [kafkalab, "up"], env, log)
            goal = "ok" if again <= GOAL_SECOND_UP else f"over {GOAL_SECOND_UP:.0f}"
            figures.append(("second up, changed=0 (s)", f"{again:.1f} {goal}"))
    finally:
        if not args.setup_only:
            subprocess.run([kafkalab, "down", "--purge"], env=env, capture_output=True)
        if args.keep_cache:
            print(f"scratch cache kept: {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)

    print(f"first run from an empty cache ({repo}, {os.cpu_count()} cores; log {log})")
    for name, value in figures:
        print(f"  {name:<46} {value:>10}")


if __name__ == "__main__":
    main()
